"""Stage locked packages into an agent workspace: ROLE.md, skills/<slug>/, roles/<slug>/ and the role prompt.

Everything comes from the lock: which packages (the role's transitive skills, its declared roles) and
which files of them (the locked file list, from the installed tree that `start` verified). Nothing is
picked by "whatever is highest on disk". `*` in a role's `skills` or `roles` means every locked package of
that kind, resolved here, next to the ones the role names. The skills of `[session] always_stage` (by default
`denden` and `strawpot-session-recap`, as upstream) go to every agent whenever they are locked: real roles tell
their agent to run `denden delegate` without listing the skill.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from strawpot.model.agent_files import open_regular, remove_entry
from strawpot.model.fs import read_regular_file
from strawpot.model.installed import InstalledTree
from strawpot.model.kinds import Kind
from strawpot.model.lockfile import LockedPackage, Lockfile
from strawpot.model.package import Package, PackageInvalid, parse_package
from strawpot.model.package_limits import MAX_FILE_SIZE
from strawpot.model.platform import current_os

ROLE_PROMPT_FILE = "role_prompt.md"


class StagingError(Exception):
    """A package needed for an agent is not locked or not installed at its locked version."""


@dataclass(frozen=True)
class StagedAgent:
    role: str
    workspace: Path
    role_prompt: str
    skills_dir: Path
    roles_dir: Path
    skills: tuple[str, ...]
    allowed_roles: frozenset[str]  # the roles this agent may delegate to
    wildcard: bool  # declared roles: ["*"]


class Stager:
    """Reads the lock and the installed tree once per package; safe to use from several threads.

    `always_stage` names skills staged for every role when they are locked (`[session] always_stage`); those not
    locked are in `not_locked`, for the caller to warn about."""

    def __init__(self, tree: InstalledTree, lock: Lockfile, always_stage: Iterable[str] = ()) -> None:
        self.tree = tree
        self.lock = lock
        wanted = list(dict.fromkeys(always_stage))
        self.always = tuple(n for n in wanted if lock.get(Kind.SKILL, n) is not None)
        self.not_locked = tuple(n for n in wanted if lock.get(Kind.SKILL, n) is None)
        self._packages: dict[tuple[Kind, str], Package] = {}
        self._lock = threading.Lock()

    @property
    def installed_roles(self) -> frozenset[str]:
        return frozenset(p.name for p in self.lock.packages if p.kind is Kind.ROLE)

    @property
    def installed_skills(self) -> frozenset[str]:
        return frozenset(p.name for p in self.lock.packages if p.kind is Kind.SKILL)

    def locked(self, kind: Kind, name: str) -> LockedPackage:
        pkg = self.lock.get(kind, name)
        if pkg is None:
            raise StagingError(f"{kind.value} {name!r} is not in strawpot.lock")
        installed = self.tree.installed_version(kind, name)
        if installed != pkg.version:
            have = f"version {installed} is installed" if installed else "it is not installed"
            raise StagingError(f"{kind.value} {name} is locked at {pkg.version} but {have}; run `strawpot sync`")
        return pkg

    def package(self, kind: Kind, name: str) -> Package:
        key = (kind, name)
        with self._lock:
            if key in self._packages:
                return self._packages[key]
        locked = self.locked(kind, name)
        base = self.tree.package_dir(kind, name)
        # the locked files only: what an install script built beside them is not part of the package
        files = {f.path: _locked_bytes(locked, base, f.path) for f in locked.files}
        try:
            package = parse_package(files, kind=kind, executables={f.path for f in locked.files if f.executable},
                                    where=str(base))
        except PackageInvalid as exc:
            raise StagingError(f"installed {kind.value} {name} is invalid: {exc}") from None
        with self._lock:
            self._packages[key] = package
        return package

    def skill_closure(self, role: str) -> list[str]:
        """The role's skills (every locked skill for `skills: ["*"]`), the always-staged ones, and the skills
        they need, transitively."""
        named = self._named_skills(role) + list(self.always)
        if self.package(Kind.ROLE, role).skills_wildcard:
            named += sorted(self.installed_skills)
        return self._closure(named)

    def by_always_stage(self, role: str) -> list[str]:
        """What only `[session] always_stage` brought in for `role`, as `kind:name@version`."""
        own = set(self._closure(self._named_skills(role)))
        if self.package(Kind.ROLE, role).skills_wildcard:
            own |= set(self.installed_skills)
        return [f"skill:{s}@{self.locked(Kind.SKILL, s).version}"
                for s in self._closure(list(self.always)) if s not in own]

    def _named_skills(self, role: str) -> list[str]:
        return [d.name for d in self.locked(Kind.ROLE, role).dependencies if d.kind is Kind.SKILL]

    def _closure(self, names: list[str]) -> list[str]:
        """`names` and the skills they need, transitively, from the lock's dependency edges."""
        seen: dict[str, None] = {}
        queue = list(names)
        while queue:
            name = queue.pop(0)
            if name in seen:
                continue
            seen[name] = None
            queue += [d.name for d in self.locked(Kind.SKILL, name).dependencies if d.kind is Kind.SKILL]
        return sorted(seen)

    def by_wildcard(self, role: str) -> list[str]:
        """What only a `*` of `role` brought in, as `kind:name@version`: staged, though the role names none of it."""
        skills = set(self.skill_closure(role)) - set(self._closure(self._named_skills(role) + list(self.always)))
        roles, wildcard = self.delegatable_roles(role)
        named = {d.name for d in self.locked(Kind.ROLE, role).dependencies if d.kind is Kind.ROLE}
        found = [self.locked(Kind.SKILL, s) for s in sorted(skills)]
        found += [self.locked(Kind.ROLE, r) for r in sorted(roles - named)] if wildcard else []
        return [f"{p.kind.value}:{p.name}@{p.version}" for p in found]

    def delegatable_roles(self, role: str) -> tuple[frozenset[str], bool]:
        """The roles `role` declared (from the lock), or every locked role for `roles: ["*"]`."""
        if self.package(Kind.ROLE, role).roles_wildcard:
            return self.installed_roles, True
        declared = {d.name for d in self.locked(Kind.ROLE, role).dependencies if d.kind is Kind.ROLE}
        return frozenset(declared), False

    def role_prompt(self, role: str, skills: list[str], roles: frozenset[str]) -> str:
        parts = [self.package(Kind.ROLE, role).body.strip()]
        if skills:
            parts.append("## Skills\n\nStaged under `skills/<slug>/` in your workspace:\n\n" + "\n".join(
                f"- **{s}**: {self.package(Kind.SKILL, s).description}" for s in skills))
        if roles:
            parts.append("## Roles you can delegate to\n\n" + "\n".join(
                f"- **{r}**: {self.package(Kind.ROLE, r).description}" for r in sorted(roles)))
        return "\n\n".join(p for p in parts if p) + "\n"

    def staged_packages(self, role: str, agent: str) -> list[str]:
        """What an agent playing `role` with `agent` runs from, as `kind:name@version` (for session.json)."""
        found = [self.locked(Kind.ROLE, role)] + [self.locked(Kind.SKILL, s) for s in self.skill_closure(role)]
        found += [self.locked(Kind.ROLE, r) for r in sorted(self.delegatable_roles(role)[0])]
        if (pkg := self.lock.get(Kind.AGENT, agent)) is not None:
            found.append(pkg)
        return [f"{p.kind.value}:{p.name}@{p.version}" for p in found]

    def tools_of(self, agent: str) -> list[str]:
        """The names of the tools (`metadata.strawpot.tools`) the locked `agent` declares it runs."""
        locked = self.lock.get(Kind.AGENT, agent)
        return [tool.name for tool in locked.tools] if locked is not None else []

    def bin_dirs(self, role: str, agent: str, os_name: str | None = None) -> list[Path]:
        """The folders of the installed packages staged for `role` played by `agent` that hold a program (`bin`)
        for `os_name`: skills first (in staging order), then the role, its delegatable roles, the agent.

        The installed folder, not the staged copy: an install script builds a program there, beside the
        locked files that staging copies.
        """
        os_name = os_name or current_os()
        keys = [(Kind.SKILL, s) for s in self.skill_closure(role)] + [(Kind.ROLE, role)]
        keys += [(Kind.ROLE, r) for r in sorted(self.delegatable_roles(role)[0]) if r != role]
        if self.lock.get(Kind.AGENT, agent) is not None:
            keys.append((Kind.AGENT, agent))
        dirs: dict[Path, None] = {}
        for kind, name in keys:
            rel = self.package(kind, name).bin.get(os_name)
            if rel is not None:
                dirs[(self.tree.package_dir(kind, name) / rel).parent] = None
        return list(dirs)

    def stage(self, role: str, workspace: Path) -> StagedAgent:
        """Populate `workspace` for an agent playing `role`."""
        skills = self.skill_closure(role)
        roles, wildcard = self.delegatable_roles(role)
        workspace.mkdir(parents=True, exist_ok=True)
        self._copy(self.locked(Kind.ROLE, role), workspace)
        skills_dir, roles_dir = workspace / "skills", workspace / "roles"
        for folder in (skills_dir, roles_dir):  # staged afresh: a link the agent left there leads nowhere
            remove_entry(folder)
            folder.mkdir()
        for name in skills:
            self._copy(self.locked(Kind.SKILL, name), skills_dir / name)
        for name in sorted(roles):
            self._copy(self.locked(Kind.ROLE, name), roles_dir / name)
        prompt = self.role_prompt(role, skills, roles)
        with open_regular(workspace / ROLE_PROMPT_FILE, "w", perms=0o644) as fh:
            fh.write(prompt.encode("utf-8"))
        return StagedAgent(role, workspace, prompt, skills_dir, roles_dir, tuple(skills), roles, wildcard)

    def _copy(self, pkg: LockedPackage, target: Path) -> None:
        """Copy exactly the locked files of `pkg` (with their executable bits) into `target`, never writing
        through a link an agent left in its workspace."""
        source = self.tree.package_dir(pkg.kind, pkg.name)
        for f in pkg.files:
            dest = target / f.path
            dest.parent.mkdir(parents=True, exist_ok=True)
            mode = 0o755 if f.executable else 0o644
            data = _locked_bytes(pkg, source, f.path)
            with open_regular(dest, "w", perms=mode) as out:
                out.write(data)
                os.fchmod(out.fileno(), mode)  # exactly, whatever the umask


def _locked_bytes(pkg: LockedPackage, base: Path, rel: str) -> bytes:
    """A locked file of an installed package, read as the tree's files are read: an agent may have put a FIFO, a
    link to /dev/zero or a giant in its place since `start` verified the tree; that is one line, never a hang."""
    data, _, unreadable = read_regular_file(base / rel, MAX_FILE_SIZE)
    if unreadable is not None:
        raise StagingError(f"installed {pkg.kind.value} {pkg.name} is incomplete: {rel}: {unreadable}; "
                           "run `strawpot sync`")
    return data
