"""The solver's DependencyProvider over hub_client: versions and dependency edges of registry packages.

Package ids are `"<kind>:<slug>"`. Metadata is fetched on the client's thread pool, speculatively
ahead of the solver (the dependencies of each package's likely version are requested the moment its
metadata arrives), so a solve over a high-latency link costs about one round trip per level of the graph.
"Not found" and "offline" are `Unavailable` values; an unreachable registry raises.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from hub_client import HubError, NotFound, OfflineMiss, PackageVersions, VersionInfo
from resolver import InvalidVersion, ResolverError, Version
from resolver.provider import Candidate, Dependency, Unavailable
from strawpot.model.dependencies import read_edges
from strawpot.model.errors import StrawpotError
from strawpot.model.ids import display, package_id, split_id
from strawpot.model.kinds import Kind
from strawpot.model.suggest import closest

if TYPE_CHECKING:
    from hub_client import HubClient

class HubProvider:
    """Answers the solver from a registry, remembering every answer for the lockfile."""

    def __init__(
        self,
        client: HubClient,
        *,
        role_agents: Mapping[str, str] | None = None,
        preferred: Mapping[str, str] | None = None,
        speculate: Callable[[list[tuple[str, str, VersionInfo]]], None] | None = None,
        min_age: float = 0.0,
        now: float | None = None,
    ) -> None:
        import time

        self.client = client
        # `[install] min_release_age`: versions published after `cutoff` (ms since the epoch) are never candidates
        self.cutoff = ((time.time() if now is None else now) - min_age) * 1000 if min_age > 0 else None
        self.skipped: dict[str, dict[str, VersionInfo]] = {}  # package id -> the versions the cutoff left out
        self.role_agents = dict(role_agents or {})
        self.preferred = dict(preferred or {})  # package id -> the locked version, tried first
        self.speculate = speculate  # told [(kind, slug, version)] of the likely picks as soon as they are known
        self._known: dict[str, PackageVersions | HubError] = {}
        # package id -> (the answer it was worked out from, its likely version, what that version needs): the
        # prefetch walks the known graph again on every call, and parsing every version each time cost more
        # CPU than the whole solve
        self._picks: dict[str, tuple[PackageVersions, VersionInfo | None, list[str]]] = {}
        self._lock = threading.Lock()
        self._closure_asked = False
        # (package id, version) -> {dependency id: specifier text}: the edges the lock records
        self.edges: dict[tuple[str, str], dict[str, str]] = {}

    # -- fetching ---------------------------------------------------------------------------------

    def prefetch(self, packages: Iterable[str]) -> None:
        """Fetch the metadata of `packages` and, speculatively, of what their likely versions need.

        The first call asks the registry for the whole closure of `packages` in one request (`POST
        /closure`, when the registry has it). Then, pipelined rather than level by level, every package
        not known yet is asked for on its own (`versions`) as soon as a known version needs it, so one
        slow answer holds up only its own subtree; a closure answer that left something out costs
        those requests, never a wrong answer. Each package's likely version is handed to `speculate`
        (its archive download starts) as soon as its metadata is known.
        """
        from concurrent.futures import FIRST_COMPLETED, Future, wait

        wanted = list(dict.fromkeys(packages))
        if not self._closure_asked:
            self._closure_asked = True
            self._ask_closure([pid for pid in wanted if pid not in self._known])
        in_flight: dict[Future[PackageVersions], str] = {}
        asked: set[str] = set()

        def ask(pids: Iterable[str]) -> None:
            todo, likely = list(pids), []
            while todo:
                pid = todo.pop()
                if pid in asked:
                    continue
                asked.add(pid)
                known = self._known.get(pid)
                if known is None:
                    kind, slug = split_id(pid)
                    in_flight[self.client.submit(self.client.package_versions, kind.value, slug)] = pid
                else:
                    likely.append(pid)
                    todo.extend(reversed(self._needs(pid, known)))
            self._speculate(likely)  # archive downloads queue behind the metadata requests just made

        ask(reversed(wanted))
        try:
            while in_flight:
                done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                for future in done:
                    pid = in_flight.pop(future)
                    try:
                        result: PackageVersions | HubError = future.result()
                    except HubError as exc:
                        result = exc
                    except ValueError as exc:  # a name the client refuses to put in a URL
                        raise StrawpotError(f"cannot look up {display(pid)}: {exc}") from None
                    self._store(pid, result)
                    asked.discard(pid)  # walked again, now from its answer
                    ask([pid])
        finally:
            for future in in_flight:  # a hard failure (unreachable registry) stops the rest
                future.cancel()

    def _ask_closure(self, roots: list[str]) -> None:
        """Fill the known answers from one closure request (nothing happens when the registry has none)."""
        if not roots:
            return
        hints = [split_id(pid) for pid in self.preferred]
        try:
            found = self.client.closure(
                [(split_id(pid)[0].value, split_id(pid)[1]) for pid in roots],
                [(kind.value, slug) for kind, slug in hints],
            )
        except ValueError as exc:  # a name the client refuses to send
            raise StrawpotError(f"cannot look up {', '.join(map(display, roots))}: {exc}") from None
        for (kind, slug), versions in (found or {}).items():
            self._store(package_id(Kind(kind), slug), versions)

    def _needs(self, pid: str, result: PackageVersions | HubError) -> list[str]:
        """What the likely version of a known package depends on (with a role's default agent)."""
        return self._pick(pid, result)[1]

    def _pick(self, pid: str, result: PackageVersions | HubError) -> tuple[VersionInfo | None, list[str]]:
        """The likely version of a known package and what it needs, worked out once per answer."""
        if not isinstance(result, PackageVersions):
            return None, []
        kept = self._picks.get(pid)
        if kept is not None and kept[0] is result:
            return kept[1], kept[2]
        likely = self._likely(pid, result)
        needs = [] if likely is None else list(self._raw_dependencies(pid, likely, with_agent=True))
        self._picks[pid] = (result, likely, needs)
        return likely, needs

    def _speculate(self, pids: list[str]) -> None:
        """Start downloading the archives of the likely versions of these known packages, as one batch."""
        batch = []
        for pid in pids:
            likely = self._pick(pid, self._known[pid])[0]
            if likely is not None:
                kind, slug = split_id(pid)
                batch.append((kind.value, slug, likely))
        if batch and self.speculate is not None:
            self.speculate(batch)

    def _likely(self, pid: str, found: PackageVersions) -> VersionInfo | None:
        """The version a resolution most likely picks: the locked one if listed, else the newest."""
        locked = self.preferred.get(pid)
        if locked is not None:
            for info in found.versions:
                if _same_version(info.version, locked) and not self.too_young(info):
                    return info
        return _newest(found, self.too_young)

    def _store(self, pid: str, result: PackageVersions | HubError) -> None:
        if isinstance(result, HubError) and not isinstance(result, NotFound | OfflineMiss):
            raise result  # unreachable, rate limited, server error: not a resolution outcome
        with self._lock:
            self._known[pid] = result

    def metadata(self, pid: str) -> PackageVersions | HubError:
        """The registry's answer for one package (fetched now if the prefetch did not cover it)."""
        if pid not in self._known:
            self.prefetch([pid])
        return self._known[pid]

    def info(self, pid: str, version: str) -> VersionInfo:
        """The registry's record of one version that a solution chose."""
        found = self.metadata(pid)
        if isinstance(found, PackageVersions):
            for info in found.versions:
                if _same_version(info.version, version):
                    return info
        raise LookupError(f"{display(pid)} {version} is not in the registry's metadata")

    def has_archives(self, pid: str) -> bool:
        found = self._known.get(pid)
        return isinstance(found, PackageVersions) and found.has_archives

    # -- DependencyProvider -----------------------------------------------------------------------

    def versions(self, package: str) -> Sequence[Candidate] | Unavailable:
        found = self.metadata(package)
        if isinstance(found, HubError):
            return Unavailable(self.unavailable_reason(package, found))
        candidates = []
        for info in found.versions:
            if self.too_young(info):
                self.skipped.setdefault(package, {})[info.version] = info
                continue
            try:
                candidates.append(Candidate(Version.parse(info.version), yanked=info.yanked))
            except InvalidVersion:
                continue  # a registry oddity: a version we cannot order is one we never choose
        return candidates

    def dependencies(self, package: str, version: Version) -> Mapping[str, Dependency] | Unavailable:
        try:
            info = self.info(package, str(version))
        except LookupError as exc:
            return Unavailable(str(exc))
        kind, _ = split_id(package)
        found = read_edges(kind, info.dependencies)
        if found.bad:
            bad = found.bad[0]
            return Unavailable(f"{display(package)} {version} has an invalid dependency in {bad.group}: {bad.message}")
        deps: dict[str, Dependency] = {}
        for edge in found.edges:
            try:
                deps[edge.id] = Dependency.parse(edge.id, edge.spec)
            except ResolverError as exc:
                return Unavailable(f"{display(package)} {version} has an invalid dependency: {exc}")
        agent = self._default_agent(package, info)
        if agent is not None:
            deps.setdefault(agent, Dependency.parse(agent, "*"))
        self.edges[(package, str(version))] = {pid: dep.text for pid, dep in deps.items()}
        return deps

    # -- helpers ----------------------------------------------------------------------------------

    def too_young(self, info: VersionInfo) -> bool:
        """Published after the cooldown's cutoff (a registry that gives no publish time gives no cooldown)."""
        return self.cutoff is not None and info.created_at is not None and info.created_at > self.cutoff

    def _raw_dependencies(self, package: str, info: VersionInfo, *, with_agent: bool = False) -> dict[str, str]:
        """{dependency id: specifier text} of one version; `*` in a role's roles is not a package.

        `with_agent` adds a role's default agent whether or not the registry has it (for prefetching).
        """
        kind, name = split_id(package)
        out = {edge.id: edge.spec for edge in read_edges(kind, info.dependencies).edges}
        if with_agent and kind is Kind.ROLE:
            agent = self.role_agents.get(name) or info.default_agent
            if agent:
                out.setdefault(package_id(Kind.AGENT, agent), "*")
        return out

    def _default_agent(self, package: str, info: VersionInfo) -> str | None:
        """The role's default agent as a dependency id, when the registry has that agent."""
        kind, name = split_id(package)
        agent = (self.role_agents.get(name) or info.default_agent) if kind is Kind.ROLE else None
        if not agent:
            return None
        pid = package_id(Kind.AGENT, agent)
        found = self.metadata(pid)
        return pid if isinstance(found, PackageVersions) and found.versions else None

    def unavailable_reason(self, package: str, error: HubError) -> str:
        if isinstance(error, OfflineMiss):
            return f"{display(package)} is not in the cache (offline)"
        suggestion = self.suggest(package)
        hint = f" (did you mean {suggestion}?)" if suggestion else ""
        return f"{display(package)} was not found on the registry{hint}"

    def suggest(self, package: str) -> str | None:
        """A close existing name of the same kind, from the registry's search and listing."""
        kind, name = split_id(package)
        names: set[str] = set()
        try:
            for item in self.client.search(name, kind.value, limit=20).get("results", []):
                if item.get("kind") == kind.value and isinstance(item.get("slug"), str):
                    names.add(item["slug"])
            for item in self.client.list_packages(kind.value, limit=200).get("items", []):
                if isinstance(item.get("slug"), str):
                    names.add(item["slug"])
        except (HubError, AttributeError, TypeError, ValueError):
            return None
        names.discard(name)
        return closest(name, names)


def _newest(found: PackageVersions, too_young: Callable[[VersionInfo], bool]) -> VersionInfo | None:
    """The version a fresh resolution most likely picks: the highest not yanked, not a pre-release, not too young."""
    best: tuple[Version, VersionInfo] | None = None
    for info in found.versions:
        if too_young(info):
            continue
        try:
            version = Version.parse(info.version)
        except InvalidVersion:
            continue
        if info.yanked or version.is_prerelease:
            continue
        if best is None or version > best[0]:
            best = (version, info)
    return best[1] if best else None


def _same_version(a: str, b: str) -> bool:
    if a == b:
        return True
    try:
        return Version.parse(a) == Version.parse(b)
    except InvalidVersion:
        return False
