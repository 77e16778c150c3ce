"""Version algebra and PubGrub dependency resolution for StrawPot (stdlib only)."""

from __future__ import annotations

from resolver.errors import InvalidRequirement, InvalidSpecifier, InvalidVersion, ResolverError
from resolver.requirement import Requirement, parse_requirement
from resolver.specifier import allows_prereleases, parse_specifier
from resolver.version import Version
from resolver.version_set import VersionSet

__all__ = [
    "InvalidRequirement",
    "InvalidSpecifier",
    "InvalidVersion",
    "Requirement",
    "ResolverError",
    "Version",
    "VersionSet",
    "allows_prereleases",
    "parse_requirement",
    "parse_specifier",
]
