"""What the solver asks of a package source: the `DependencyProvider` protocol and its value types."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol, runtime_checkable

from resolver.requirement import Requirement, parse_requirement
from resolver.specifier import _parse
from resolver.version import Version
from resolver.version_set import VersionSet
from valueclass import Slotted

__all__ = ["Candidate", "Dependency", "DependencyProvider", "SupportsPrefetch", "Unavailable"]


class Candidate(Slotted):
    """A published version of a package; yanked versions are only chosen when locked."""

    __slots__ = _fields = ("version", "yanked")
    version: Version
    yanked: bool

    def __init__(self, version: Version, yanked: bool = False) -> None:
        object.__setattr__(self, "version", version)
        object.__setattr__(self, "yanked", yanked)


class Unavailable(Slotted):
    """A package's versions, or one version's dependencies, cannot be known, and why."""

    __slots__ = _fields = ("reason",)
    reason: str

    def __init__(self, reason: str) -> None:
        object.__setattr__(self, "reason", reason)


class Dependency(Slotted):
    """An edge to `package` constrained to `spec`; `text` is the specifier as written (``"*"`` if none).

    `allows_prerelease` is True when the specifier names a pre-release (it opts the package in
    to pre-release candidates, see `resolver.solver`).
    """

    __slots__ = _fields = ("package", "spec", "text", "allows_prerelease")
    package: str
    spec: VersionSet
    text: str
    allows_prerelease: bool

    def __init__(self, package: str, spec: VersionSet, text: str = "*", allows_prerelease: bool = False) -> None:
        object.__setattr__(self, "package", package)
        object.__setattr__(self, "spec", spec)
        object.__setattr__(self, "text", text)
        object.__setattr__(self, "allows_prerelease", allows_prerelease)


    @classmethod
    def parse(cls, package: str, specifier: str = "*") -> Dependency:
        """A dependency on `package` from specifier text (raises `InvalidSpecifier`)."""
        spec, named_prerelease = _parse(specifier)
        return cls(package, spec, specifier.strip() or "*", named_prerelease)

    @classmethod
    def from_requirement(cls, requirement: Requirement | str, package: str | None = None) -> Dependency:
        """A dependency from a parsed requirement; `package` overrides its name (e.g. ``skill:<name>``)."""
        if isinstance(requirement, str):
            requirement = parse_requirement(requirement)
        return cls(
            package if package is not None else requirement.name,
            requirement.spec,
            requirement.text,
            requirement.allows_prerelease,
        )

    def __str__(self) -> str:
        return self.package if self.text == "*" else f"{self.package} {self.text}"


@runtime_checkable
class DependencyProvider(Protocol):
    """A source of package versions and their dependencies, queried lazily by the solver.

    A provider may also implement `SupportsPrefetch`; the solver uses it when present.

    Package ids are opaque strings to the solver (the app uses ``"skill:git-workflow"``,
    ``"role:reviewer"``, …, so kinds are separate namespaces). "Not found", "offline" or "registry
    error" are not exceptions but `Unavailable` values whose reason ends up in the explanation.
    """

    def versions(self, package: str) -> Sequence[Candidate] | Unavailable:
        """Every published version of `package` (any order, yanked ones included and flagged)."""
        ...

    def dependencies(self, package: str, version: Version) -> Mapping[str, Dependency] | Unavailable:
        """The dependencies of one version, keyed by package id."""
        ...


@runtime_checkable
class SupportsPrefetch(Protocol):
    """The optional hook of a provider that can fetch many packages' metadata at once."""

    def prefetch(self, packages: Iterable[str]) -> None:
        """Hint that `versions` (and dependencies) of `packages` will be needed soon.

        A network-backed provider fetches them concurrently here; the solver calls it with each
        batch of newly discovered packages (the root's dependencies, then each chosen version's).
        """
        ...
