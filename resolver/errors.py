"""The resolver's exception tree."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from resolver.incompatibility import Incompatibility


class ResolverError(Exception):
    """Base class of every error raised by the resolver package.

    ::

        ResolverError
        ├── InvalidVersion      (also ValueError)  a version string is not semver
        ├── InvalidSpecifier    (also ValueError)  a specifier string cannot be parsed
        ├── InvalidRequirement  (also ValueError)  a dependency string cannot be parsed
        └── NoSolution                             no set of versions satisfies the dependencies
    """


class InvalidVersion(ResolverError, ValueError):
    """A version string is not a valid semantic version."""


class InvalidSpecifier(ResolverError, ValueError):
    """A version specifier cannot be parsed."""


class InvalidRequirement(ResolverError, ValueError):
    """A dependency string (slug plus optional specifier) cannot be parsed."""


class NoSolution(ResolverError):
    """Version solving failed; the failure is data, and `resolver.report.explain` writes it as text.

    `incompatibility` is the root of the derivation tree (data only): it says that the root
    package cannot be selected, and its causes, transitively, say why. `root_name` and
    `display_name` are how the caller asked for packages to be named, kept for the reporter.
    """

    def __init__(
        self,
        incompatibility: Incompatibility,
        *,
        root_name: str = "root",
        display_name: Callable[[str], str] | None = None,
    ) -> None:
        super().__init__("version solving failed (resolver.report.explain says why)")
        self.incompatibility = incompatibility
        self.root_name = root_name
        self.display_name = display_name
