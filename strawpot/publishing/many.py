"""Publish many packages at once: members in dependency order, each cycle in one batch, what the registry
already holds with identical content skipped, and each member whose dependencies cannot be satisfied held back
(with the members that need it) while the rest go out."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from strawpot.model.errors import StrawpotError, UsageError
from strawpot.model.kinds import Kind
from strawpot.model.plural import count
from strawpot.model.workspace import Member
from strawpot.publishing.prepare import Upload, prepare_upload

if TYPE_CHECKING:
    from hub_client import HubClient

Key = tuple[Kind, str]


@dataclass(frozen=True)
class Planned:
    """One member with its upload, and what the registry holds of that version."""

    member: Member
    upload: Upload
    on_registry: bool
    """The version is on the registry with exactly these files (nothing to send)."""

    @property
    def label(self) -> str:
        return f"{self.upload.kind.value} {self.upload.slug} {self.upload.version}"

    @property
    def key(self) -> Key:
        return self.upload.kind, self.upload.slug


@dataclass(frozen=True)
class Step:
    """One request: a single publish, a batch (members that depend on each other), or a skip."""

    items: tuple[Planned, ...]
    action: str  # "publish" | "batch" | "skip"

    def describe(self, url: str) -> str:
        names = ", ".join(p.label for p in self.items)
        if self.action == "skip":
            return f"skip {names}: already on the registry with identical content"
        if self.action == "batch":
            return f"publish together (POST {url}/api/v1/batch, they depend on each other): {names}"
        only = self.items[0].upload
        return f"publish {names} (POST {url}/api/v1/{only.kind.plural}, {count(len(only.files), 'file')})"


@dataclass(frozen=True)
class HeldBack:
    """A member that is not published because a dependency cannot be satisfied, and the members that need it."""

    planned: Planned
    missing: str  # the dependency it lacks and why, e.g. "skill x, which is neither on the registry nor ..."
    dependents: tuple[Planned, ...] = ()  # held back because they need this member, directly or not

    def describe(self) -> str:
        line = f"held back {self.planned.label} ({self.planned.member.rel}): needs {self.missing}"
        if self.dependents:
            line += "; and, since they need it: " + ", ".join(p.label for p in self.dependents)
        return line


@dataclass(frozen=True)
class Plan:
    steps: list[Step]
    held_back: list[HeldBack]

    @property
    def held_count(self) -> int:
        return sum(1 + len(h.dependents) for h in self.held_back)


def load_members(paths: Sequence[Path]) -> list[Member]:
    """The packages in folders `paths` (`strawpot publish DIR...`), every problem of every folder at once."""
    from strawpot.model.package import PackageInvalid
    from strawpot.model.package_folder import load_package

    members: list[Member] = []
    problems: list[str] = []
    for path in paths:
        try:
            members.append(Member(path.resolve(), str(path), load_package(path)))
        except PackageInvalid as exc:
            problems += [f"{path}: {issue}" for issue in exc.issues]
    seen: dict[tuple[Kind, str], Member] = {}
    for m in members:
        if m.key in seen and seen[m.key].dir != m.dir:
            problems.append(f"{m.rel}: {m.kind.value} {m.slug!r} is also the package in {seen[m.key].rel}")
        seen.setdefault(m.key, m)
    if problems:
        lines = "\n".join(f"  {p}" for p in problems)
        raise UsageError(f"{count(len(problems), 'problem')} in the packages to publish:\n{lines}")
    return list({m.key: m for m in members}.values())


def prepare_all(members: Sequence[Member], changelog: str | None) -> list[Upload]:
    """Every member's upload, its dependencies on other members pinned to `==VERSION`; refused as a whole when
    a member has no version."""
    unversioned = [m.rel for m in members if m.package.version is None]
    if unversioned:
        raise UsageError(
            f"no version to publish in {count(len(unversioned), 'member')}: {', '.join(unversioned)}",
            hint="add `metadata.version: 1.0.0` to each main file's frontmatter, or run `strawpot version --bump patch`",
        )
    pins = {m.key: str(m.package.version) for m in members}
    return [prepare_upload(m.dir, changelog=changelog, pins=pins) for m in members]


def differing_files(upload: Upload, client: HubClient) -> list[str] | None:
    """None when the registry has no such version; else the files whose bytes differ (empty: identical)."""
    import hub_client as hc

    try:
        held = client.package_versions(upload.kind.value, upload.slug).get(upload.version)
    except hc.NotFound:
        return None
    if held is None:
        return None
    local = {f.path: hashlib.sha256(f.data).hexdigest() for f in upload.files}
    remote: dict[str, str] = {}
    for f in held.files:
        if f.sha256 is None:  # a registry without the extensions: compare the bytes themselves
            data = client.fetch_file(upload.kind.value, upload.slug, f.path, upload.version)
            remote[f.path] = hashlib.sha256(data).hexdigest()
        else:
            remote[f.path] = f.sha256
    return sorted(p for p in set(local) | set(remote) if local.get(p) != remote.get(p))


def plan(members: Sequence[Member], uploads: Sequence[Upload], client: HubClient, *,
         all_or_nothing: bool = False) -> Plan:
    """The steps, dependencies first; a same version with other content anywhere refuses the whole plan.

    A member with a dependency that is neither among the members nor satisfiable on the registry is held back,
    with every member that needs it; the rest are planned. `all_or_nothing` refuses the plan instead."""
    planned: list[Planned] = []
    conflicts: list[str] = []
    for member, upload in zip(members, uploads, strict=True):
        diff = differing_files(upload, client)
        if diff:
            conflicts.append(f"{upload.kind.value} {upload.slug} {upload.version} ({member.rel}): "
                             f"the registry holds this version with other content in {', '.join(diff)}")
        planned.append(Planned(member, upload, diff is not None and not diff))
    if conflicts:
        lines = "\n".join(f"  {c}" for c in conflicts)
        raise StrawpotError(f"{count(len(conflicts), 'version')} already published with different content:\n{lines}",
                            hint="published versions are immutable: raise the version (`strawpot version --bump patch`)")
    skipped = [p for p in planned if p.on_registry]
    todo = [p for p in planned if not p.on_registry]
    unmet = _unmet_dependencies(todo, {(p.upload.kind, p.upload.slug) for p in planned}, client)
    if unmet and all_or_nothing:
        lines = "\n".join(f"  {p.label} ({p.member.rel}) needs {unmet[p.key]}" for p in todo if p.key in unmet)
        raise StrawpotError(f"{count(len(unmet), 'member')} with a dependency that cannot be satisfied; "
                            f"nothing was published (--all-or-nothing):\n{lines}",
                            hint="publish those packages first, or publish them together with these")
    held = _held_back(todo, unmet)
    blocked = {p.key for h in held for p in (h.planned, *h.dependents)}
    steps = [Step((p,), "skip") for p in skipped]
    for group in dependency_order([p for p in todo if p.key not in blocked]):
        steps.append(Step(tuple(group), "batch" if len(group) > 1 else "publish"))
    return Plan(steps, held)


def _unmet_dependencies(todo: Sequence[Planned], ours: set[tuple[Kind, str]],
                        client: HubClient) -> dict[Key, str]:
    """The members with a dependency outside these packages that no version on the registry satisfies, each with
    the first such dependency and why; looked up once per package, before anything is sent."""
    import hub_client as hc

    versions: dict[Key, list[str] | None] = {}  # None: on a registry without the /versions extension
    unmet: dict[Key, str] = {}
    for p in todo:
        for dep in p.upload.package.dependencies:
            key = (dep.kind, dep.name)
            if key in ours:
                continue
            if key not in versions:
                try:
                    found = client.package_versions(dep.kind.value, dep.name)
                    held = [info.version for info in found.versions if not info.yanked]
                    versions[key] = held if found.has_archives or not held else None
                except hc.NotFound:
                    versions[key] = []
            there = versions[key]
            if there == []:
                unmet[p.key] = f"{dep.kind.value} {dep.name}, which is neither on the registry nor among these packages"
            elif there is not None and not _satisfies(dep.spec, there):
                unmet[p.key] = (f"{dep.kind.value} {dep}, which no version on the registry satisfies "
                                f"(there: {', '.join(there)})")
            if p.key in unmet:
                break
    return unmet


def _satisfies(spec: str, versions: list[str]) -> bool:
    from resolver import ResolverError, matching

    try:
        return bool(matching(spec, versions))
    except ResolverError:  # the registry refuses the entry itself, with its own words
        return True


def _held_back(todo: Sequence[Planned], unmet: dict[Key, str]) -> list[HeldBack]:
    """Each member in `unmet` with the members that need it (directly or through others), in member order."""
    by_key = {p.key: p for p in todo}
    needed_by: dict[Key, list[Key]] = {}
    for p in todo:
        for dep in p.upload.package.dependencies:
            if (dep.kind, dep.name) in by_key:
                needed_by.setdefault((dep.kind, dep.name), []).append(p.key)
    held: list[HeldBack] = []
    for root in (p for p in todo if p.key in unmet):
        seen: dict[Key, None] = {}
        queue = list(needed_by.get(root.key, []))
        while queue:
            current = queue.pop(0)
            if current not in seen and current != root.key:
                seen[current] = None
                queue += needed_by.get(current, [])
        dependents = sorted((by_key[k] for k in seen if k not in unmet), key=lambda d: d.member.rel)
        held.append(HeldBack(root, unmet[root.key], tuple(dependents)))
    return held


def dependency_order(items: Sequence[Planned]) -> list[list[Planned]]:
    """Strongly connected components of the dependency graph among `items` (Tarjan), each after every
    component it depends on; a component of several members is a cycle, published in one batch."""
    by_key = {(p.upload.kind, p.upload.slug): p for p in items}
    edges = {key: [(d.kind, d.name) for d in p.upload.package.dependencies if (d.kind, d.name) in by_key]
             for key, p in by_key.items()}
    index: dict[tuple[Kind, str], int] = {}
    low: dict[tuple[Kind, str], int] = {}
    stack: list[tuple[Kind, str]] = []
    on_stack: set[tuple[Kind, str]] = set()
    out: list[list[Planned]] = []

    def visit(key: tuple[Kind, str]) -> None:  # recursion depth is bounded by the member count (a batch's size)
        index[key] = low[key] = len(index)
        stack.append(key)
        on_stack.add(key)
        for dep in edges[key]:
            if dep not in index:
                visit(dep)
                low[key] = min(low[key], low[dep])
            elif dep in on_stack:
                low[key] = min(low[key], index[dep])
        if low[key] == index[key]:
            group: list[tuple[Kind, str]] = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == key:
                    break
            out.append(sorted((by_key[k] for k in group), key=lambda p: p.member.rel))

    for key in by_key:
        if key not in index:
            visit(key)
    return out


@dataclass
class Outcome:
    published: list[Planned]
    skipped: list[Planned]


def run(steps: Sequence[Step], client: HubClient, url: str) -> Outcome:
    """Send the steps in order; the first refusal stops, naming what was and was not published."""
    import hub_client as hc

    cycles = [s for s in steps if s.action == "batch"]
    if cycles and not client.has_batch():
        names = "; ".join(" <-> ".join(f"{p.upload.kind.value} {p.upload.slug}" for p in s.items) for s in cycles)
        raise StrawpotError(
            f"these members depend on each other and {url} has no batch publish (POST /api/v1/batch), "
            f"so they cannot be published one at a time: {names}; nothing was published",
            hint="publish to a registry with the batch extension (`strawpot registry serve`), or break the cycle",
        )
    outcome = Outcome([], [p for s in steps if s.action == "skip" for p in s.items])
    for step in (s for s in steps if s.action != "skip"):
        try:
            if step.action == "batch":
                client.publish_batch([(p.upload.kind.value, p.upload.fields, _files(p.upload)) for p in step.items])
            else:
                upload = step.items[0].upload
                result = client.publish(upload.kind.value, upload.fields, _files(upload))
                if result.get("version") != upload.version:
                    raise StrawpotError(f"the registry {url} did not confirm {step.items[0].label}: "
                                        f"it answered {str(result)[:200]!r}")
        except (hc.ServerError, hc.AuthError, hc.NotFound, hc.RegistryUnreachable, StrawpotError) as exc:
            raise _stopped(step, steps, outcome, url, exc) from None
        outcome.published.extend(step.items)
    return outcome


def _files(upload: Upload) -> list[tuple[str, bytes]]:
    return [(f.path, f.data) for f in upload.files]


def _stopped(step: Step, steps: Sequence[Step], outcome: Outcome, url: str, exc: Exception) -> StrawpotError:
    import hub_client as hc
    from strawpot.publishing.auth import login_hint

    reason = getattr(exc, "message", str(exc))
    code = getattr(exc, "status", None) if isinstance(exc, hc.HubError) else None
    status = f" (HTTP {code})" if code else ""
    done = ", ".join(p.label for p in outcome.published) or "nothing"
    left = [p.label for s in steps[steps.index(step):] if s.action != "skip" for p in s.items]
    error = StrawpotError(
        f"the registry {url} refused {', '.join(p.label for p in step.items)}{status}: {reason}\n"
        f"published: {done}\nnot published: {', '.join(left)}",
        hint=login_hint(url) if isinstance(exc, hc.AuthError) else "fix the problem and run the same command again: "
        "what is already published is skipped",
    )
    if isinstance(exc, hc.RegistryUnreachable):
        from strawpot.model.errors import RegistryUnreachable

        return RegistryUnreachable(error.message, hint=error.hint)
    return error


def payload(planned: Plan, url: str, *, dry_run: bool) -> dict[str, Any]:
    """The JSON report: every step in order with its members, and what was held back and why."""
    steps = planned.steps
    return {
        "dry_run": dry_run,
        "registry": url,
        "steps": [
            {"action": s.action,
             "packages": [{"kind": p.upload.kind.value, "name": p.upload.slug, "version": p.upload.version,
                           "path": p.member.rel} for p in s.items]}
            for s in steps
        ],
        "published": [] if dry_run else [p.label for s in steps if s.action != "skip" for p in s.items],
        "skipped": [p.label for s in steps if s.action == "skip" for p in s.items],
        "held_back": [{"package": h.planned.label, "path": h.planned.member.rel, "needs": h.missing,
                       "dependents": [d.label for d in h.dependents]} for h in planned.held_back],
    }
