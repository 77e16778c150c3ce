"""A workspace: the `[workspace]` table of a root `strawpot.toml` and the package folders it names."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from strawpot.model.errors import UsageError
from strawpot.model.fs import OWN_FILE_HINT, read_own_text
from strawpot.model.kinds import Kind
from strawpot.model.layout import MANIFEST_NAME, expand_members
from strawpot.model.package import Package, PackageInvalid
from strawpot.model.plural import count
from strawpot.model.suggest import did_you_mean

WORKSPACE_TABLE = "workspace"


@dataclass(frozen=True)
class Member:
    """One package folder of the workspace."""

    dir: Path
    rel: str
    """The folder relative to the workspace root, POSIX style (`skills/git-workflow`)."""
    package: Package

    @property
    def kind(self) -> Kind:
        return self.package.kind

    @property
    def slug(self) -> str:
        return self.package.name

    @property
    def key(self) -> tuple[Kind, str]:
        return (self.package.kind, self.package.name)


@dataclass(frozen=True)
class Workspace:
    root: Path
    members: tuple[Member, ...]

    def member(self, kind: Kind, slug: str) -> Member | None:
        return next((m for m in self.members if m.key == (kind, slug)), None)

    def local_dependencies(self, member: Member) -> list[Member]:
        """The members `member` depends on directly, in its declaration order."""
        found = (self.member(d.kind, d.name) for d in member.package.dependencies)
        return [m for m in found if m is not None and m is not member]


@dataclass(frozen=True)
class WorkspaceTable:
    members: tuple[str, ...]
    exclude: tuple[str, ...] = ()


_WORKSPACE_KEYS = ("members", "exclude")


def read_table(data: dict[str, Any], where: Path) -> WorkspaceTable | None:
    """The `[workspace]` table of a parsed manifest, checked; None when the manifest declares none."""
    table = data.get(WORKSPACE_TABLE)
    if table is None:
        return None
    if not isinstance(table, dict):
        raise UsageError(f"{where}: [workspace] must be a table with `members = [\"skills/*\", ...]`")
    for key in map(str, table):
        if key not in _WORKSPACE_KEYS:
            near = did_you_mean(key, _WORKSPACE_KEYS, show="'{}'")
            raise UsageError(f"{where}: [workspace] unknown key '{key}' (it takes {', '.join(_WORKSPACE_KEYS)})"
                             + (f"; {near}" if near else ""), hint="fix the key's name, or remove it")
    lists: dict[str, tuple[str, ...]] = {}
    for key in _WORKSPACE_KEYS:
        value = table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            raise UsageError(f"{where}: workspace.{key} must be a list of folder globs such as \"skills/*\"")
        for pattern in value:
            if PurePosixPath(pattern).is_absolute() or ".." in PurePosixPath(pattern).parts:
                raise UsageError(f"{where}: workspace.{key} {pattern!r} must stay inside the workspace folder")
        lists[key] = tuple(value)
    if not lists["members"]:
        raise UsageError(f"{where}: [workspace] lists no members", hint='add `members = ["skills/*", "roles/*"]`')
    return WorkspaceTable(lists["members"], lists["exclude"])


def member_dirs(root: Path, table: WorkspaceTable, where: Path) -> list[Path]:
    """The folders the member globs name, minus the excluded, in sorted order; a glob naming no folder is an error,
    and so is a member that leads out of the workspace (a link, or a folder under a link, to elsewhere)."""
    dirs, empty = expand_members(root, list(table.members), list(table.exclude))
    if empty:
        raise UsageError(f"{where}: workspace member glob {empty[0]!r} matches no folder under {root}",
                         hint="fix the glob or remove it from [workspace] members")
    real_root = root.resolve()
    # A cloned repository's link must not make `publish --workspace` upload a folder of the user's.
    outside = [(d, real) for d in dirs if not (real := d.resolve()).is_relative_to(real_root)]
    if outside:
        (first, real), more = outside[0], len(outside) - 1
        also = f" (and {count(more, 'other member')})" if more else ""
        raise UsageError(f"{where}: workspace member {first.relative_to(root).as_posix()} leads to {real}, outside "
                         f"the workspace {root}{also}",
                         hint="a member is a folder of the workspace itself: replace the link by the folder, or "
                              "add it to [workspace] exclude")
    return dirs


def load_workspace(root: Path, data: dict[str, Any] | None = None) -> Workspace:
    """The workspace whose root manifest is `root/strawpot.toml`; every problem of every member at once."""
    from strawpot.model.package_folder import load_package
    from strawpot.model.toml_text import parse_toml

    where = root / MANIFEST_NAME
    if data is None:
        try:
            text = read_own_text(where)
        except OSError as exc:
            raise UsageError(f"{where}: cannot read the manifest: {exc.strerror or exc}", hint=OWN_FILE_HINT) from None
        data = parse_toml(text, where)
    table = read_table(data, where)
    if table is None:
        raise UsageError(f"{where}: declares no [workspace]",
                         hint='add `[workspace]` with `members = ["skills/*", "roles/*"]`, or run `strawpot init --workspace`')
    members: list[Member] = []
    problems: list[str] = []
    for folder in member_dirs(root, table, where):
        rel = folder.relative_to(root).as_posix()
        try:
            members.append(Member(folder, rel, load_package(folder)))
        except PackageInvalid as exc:
            problems += [f"{rel}: {issue}" for issue in exc.issues]
    seen: dict[tuple[Kind, str], Member] = {}
    for m in members:
        if m.key in seen:
            problems.append(f"{m.rel}: {m.kind.value} {m.slug!r} is also the slug of member {seen[m.key].rel}")
        seen.setdefault(m.key, m)
    if problems:
        lines = "\n".join(f"  {p}" for p in problems)
        raise UsageError(f"{where}: workspace has {count(len(problems), 'problem')}:\n{lines}")
    return Workspace(root, tuple(members))
