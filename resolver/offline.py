"""An in-memory `DependencyProvider` for tests, benchmarks and declarative scenario files."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from resolver.provider import Candidate, Dependency, DependencyProvider, SupportsPrefetch, Unavailable
from resolver.version import Version

__all__ = ["OfflineProvider"]

Registry = Mapping[str, Mapping[str, Mapping[str, str]]]
"""``{package: {version: {dependency package: specifier text}}}``."""


class OfflineProvider(DependencyProvider, SupportsPrefetch):
    """Packages held in memory.

    ``OfflineProvider({"foo": {"1.0.0": {"bar": "^1.0"}}, "bar": {"1.0.0": {}}}, yanked={("foo", "1.0.0")})``.
    Unknown packages are `Unavailable` with reason ``"not found"`` (or the reason given in
    `unavailable`). `calls` counts provider queries and `prefetched` records prefetch hints,
    so tests can check how the solver uses its provider.
    """

    def __init__(
        self,
        packages: Registry | None = None,
        *,
        yanked: Iterable[tuple[str, str]] = (),
        unavailable: Mapping[str, str] | None = None,
    ) -> None:
        # Dependencies are kept as written and parsed on first use, as a registry client would.
        self._versions: dict[str, dict[Version, Mapping[str, str] | dict[str, Dependency]]] = {}
        self._parsed: set[tuple[str, Version]] = set()
        self._yanked: set[tuple[str, Version]] = set()
        self._unavailable: dict[str, str] = dict(unavailable or {})
        self.calls: dict[str, int] = {"versions": 0, "dependencies": 0}
        self.prefetched: list[list[str]] = []
        for package, versions in (packages or {}).items():
            for version, dependencies in versions.items():
                self.add(package, version, dependencies)
        for package, version in yanked:
            self.yank(package, version)

    def add(
        self, package: str, version: str | Version, dependencies: Mapping[str, str] | None = None
    ) -> None:
        """Publish `version` of `package` with ``{package: specifier}`` dependencies."""
        parsed = version if isinstance(version, Version) else Version.parse(version)
        self._versions.setdefault(package, {})[parsed] = dict(dependencies or {})
        self._parsed.discard((package, parsed))

    def yank(self, package: str, version: str | Version) -> None:
        """Mark a published version as yanked."""
        parsed = version if isinstance(version, Version) else Version.parse(version)
        self._yanked.add((package, parsed))

    @classmethod
    def from_scenario(cls, scenario: Mapping[str, Any]) -> OfflineProvider:
        """Build a provider from an already-parsed scenario (YAML or JSON).

        Keys: ``packages`` (as for the constructor), ``yanked`` (a list of ``"pkg@1.0.0"`` or
        ``[pkg, version]``) and ``unavailable`` (``{package: reason}``). The scenario's other keys
        (``root``, ``locked``, ``expect``…) are the caller's.
        """
        yanked: list[tuple[str, str]] = []
        for entry in scenario.get("yanked", ()):
            if isinstance(entry, str):
                package, _, version = entry.rpartition("@")
                yanked.append((package, version))
            else:
                package, version = entry
                yanked.append((str(package), str(version)))
        return cls(scenario.get("packages", {}), yanked=yanked, unavailable=scenario.get("unavailable"))

    def versions(self, package: str) -> Sequence[Candidate] | Unavailable:
        self.calls["versions"] += 1
        if package in self._unavailable:
            return Unavailable(self._unavailable[package])
        versions = self._versions.get(package)
        if versions is None:
            return Unavailable("not found")
        return [Candidate(v, (package, v) in self._yanked) for v in versions]

    def dependencies(self, package: str, version: Version) -> Mapping[str, Dependency] | Unavailable:
        self.calls["dependencies"] += 1
        versions = self._versions.get(package, {})
        found = versions.get(version)
        if found is None:
            return Unavailable(f"{version} not found")
        if (package, version) not in self._parsed:
            found = {name: Dependency.parse(name, str(spec)) for name, spec in found.items()}
            versions[version] = found
            self._parsed.add((package, version))
        return found  # type: ignore[return-value]

    def prefetch(self, packages: Iterable[str]) -> None:
        self.prefetched.append(list(packages))
