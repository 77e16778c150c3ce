"""Version algebra and PubGrub dependency resolution for StrawPot (stdlib only)."""

from __future__ import annotations

from resolver.errors import InvalidRequirement, InvalidSpecifier, InvalidVersion, NoSolution, ResolverError
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
