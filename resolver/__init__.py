"""Version algebra and PubGrub dependency resolution for StrawPot (stdlib only); each name is imported from its
module when first used, so a reader of versions does not load the solver."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from resolver.errors import (
        InvalidRequirement,
        InvalidSpecifier,
        InvalidVersion,
        NoSolution,
        ResolverError,
    )
    from resolver.incompatibility import Incompatibility
    from resolver.offline import OfflineProvider
    from resolver.provider import Candidate, Dependency, DependencyProvider, SupportsPrefetch, Unavailable
    from resolver.report import describe, explain, report
    from resolver.requirement import Requirement, parse_requirement
    from resolver.solver import VersionSolver, solve
    from resolver.specifier import allows_prereleases, matching, parse_specifier
    from resolver.term import Term
    from resolver.version import Version
    from resolver.version_set import VersionSet

# where each public name lives
_HOME = {
    'Candidate': 'resolver.provider',
    'Dependency': 'resolver.provider',
    'DependencyProvider': 'resolver.provider',
    'Incompatibility': 'resolver.incompatibility',
    'InvalidRequirement': 'resolver.errors',
    'InvalidSpecifier': 'resolver.errors',
    'InvalidVersion': 'resolver.errors',
    'NoSolution': 'resolver.errors',
    'OfflineProvider': 'resolver.offline',
    'Requirement': 'resolver.requirement',
    'ResolverError': 'resolver.errors',
    'SupportsPrefetch': 'resolver.provider',
    'Term': 'resolver.term',
    'Unavailable': 'resolver.provider',
    'Version': 'resolver.version',
    'VersionSet': 'resolver.version_set',
    'VersionSolver': 'resolver.solver',
    'allows_prereleases': 'resolver.specifier',
    'describe': 'resolver.report',
    'explain': 'resolver.report',
    'matching': 'resolver.specifier',
    'parse_requirement': 'resolver.requirement',
    'parse_specifier': 'resolver.specifier',
    'report': 'resolver.report',
    'solve': 'resolver.solver',
}

__all__ = [
    "Candidate",
    "Dependency",
    "DependencyProvider",
    "Incompatibility",
    "InvalidRequirement",
    "InvalidSpecifier",
    "InvalidVersion",
    "NoSolution",
    "OfflineProvider",
    "Requirement",
    "ResolverError",
    "SupportsPrefetch",
    "Term",
    "Unavailable",
    "Version",
    "VersionSet",
    "VersionSolver",
    "allows_prereleases",
    "describe",
    "explain",
    "matching",
    "parse_requirement",
    "parse_specifier",
    "report",
    "solve",
]


def __getattr__(name: str) -> object:
    """`resolver.NAME`: the name from its module, imported now (PEP 562)."""
    if name not in _HOME:
        raise AttributeError(f"module 'resolver' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(_HOME[name]), name)
    globals()[name] = value
    return value
