"""The resolver's exception tree.

::

    ResolverError
    ├── InvalidVersion      (also ValueError)  a version string is not semver
    ├── InvalidSpecifier    (also ValueError)  a specifier string cannot be parsed
    ├── InvalidRequirement  (also ValueError)  a dependency string cannot be parsed
    └── NoSolution                             no set of versions satisfies the dependencies
"""

from __future__ import annotations


class ResolverError(Exception):
    """Base class of every error raised by the resolver package."""


class InvalidVersion(ResolverError, ValueError):
    """A version string is not a valid semantic version."""


class InvalidSpecifier(ResolverError, ValueError):
    """A version specifier cannot be parsed."""


class InvalidRequirement(ResolverError, ValueError):
    """A dependency string (slug plus optional specifier) cannot be parsed."""
