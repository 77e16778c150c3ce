"""Fixtures for orchestrator tests: a project with an installed tree and a lock, built from fixture packages."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import sys
import textwrap
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from strawpot.model.kinds import Kind
from strawpot.model.lockfile import LockedDependency, LockedFile, LockedPackage, LockedTool, Lockfile
from strawpot.model.manifest import Manifest
from strawpot.model.package_folder import load_package

ROOT = Path(__file__).resolve().parents[2]
STUB_AGENT = ROOT / "fixtures" / "agents" / "stub-agent"


def role_md(name: str, *, skills: Iterable[str] = (), roles: Iterable[str] = (), body: str = "",
            default_agent: str | None = None, description: str | None = None) -> str:
    deps = {"skills": list(skills), "roles": list(roles)}
    lines = ["---", f"name: {name}", f"description: {description or f'The {name} role'}"]
    if default_agent:
        lines.append(f"default_agent: {default_agent}")
    lines += ["metadata:", "  strawpot:", "    dependencies:",
              f"      skills: {deps['skills']!r}", f"      roles: {deps['roles']!r}", "---", "",
              body or f"You are the {name}."]
    return "\n".join(lines) + "\n"


def skill_md(name: str, *, deps: Iterable[str] = (), description: str | None = None) -> str:
    return textwrap.dedent(f"""\
        ---
        name: {name}
        description: {description or f'How to {name}'}
        metadata:
          strawpot:
            dependencies: {list(deps)!r}
        ---

        Use {name} wisely.
        """)


def _install(state_dir: Path, kind: Kind, name: str, version: str, source: Path) -> LockedPackage:
    """Copy a package folder into .strawpot/<kinds>/<name>/ with .version; return its lock entry."""
    target = state_dir / kind.plural / name
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", ".*"))
    (target / ".version").write_text(version + "\n", encoding="utf-8")
    files = []
    for path in sorted(p for p in target.rglob("*") if p.is_file() and p.name != ".version"):
        data = path.read_bytes()
        files.append(LockedFile(path.relative_to(target).as_posix(), hashlib.sha256(data).hexdigest(), len(data),
                                bool(path.stat().st_mode & stat.S_IXUSR)))
    key = (kind, tuple(files))
    if key not in _READ:
        package = load_package(target, kind)
        _READ[key] = (tuple(LockedDependency(d.kind, d.name, d.spec) for d in package.dependencies),
                      tuple((t.name, t.description, dict(t.install)) for t in package.tools.values()),
                      package.default_agent)
    dependencies, tools, default_agent = _READ[key]
    return LockedPackage(
        kind=kind, name=name, version=version, source="test://fixtures", archive_sha256=None, archive_size=None,
        files=tuple(files), dependencies=dependencies,
        tools=tuple(LockedTool(tool, description, dict(install)) for tool, description, install in tools),
        default_agent=default_agent,
    )


# What a package's files say, by their paths, hashes and modes: most tests build the same standard packages, whose
# frontmatter is parsed (pure-Python YAML) once per test worker instead of once per build
_READ: dict[tuple[Kind, tuple[LockedFile, ...]],
            tuple[tuple[LockedDependency, ...], tuple[tuple[str, str, dict[str, str]], ...], str | None]] = {}


@dataclass
class ProjectFixture:
    root: Path
    roles: dict[str, str] = field(default_factory=dict)
    skills: dict[str, str] = field(default_factory=dict)
    policy: dict[str, object] = field(default_factory=dict)
    orchestrator_role: str = "orchestrator"
    agent_settings: dict[str, object] = field(default_factory=dict)
    denden: dict[str, object] = field(default_factory=dict)  # the [denden] table, e.g. {"transport": "tcp"}
    skill_files: dict[str, dict[str, str]] = field(default_factory=dict)  # skill → {path: text}; `#!` → executable

    @property
    def state_dir(self) -> Path:
        return self.root / ".strawpot"

    @property
    def sessions_dir(self) -> Path:
        return self.state_dir / "sessions"

    def build(self, agent_dir: Path = STUB_AGENT) -> ProjectFixture:
        """Write strawpot.toml, install every package under .strawpot/ and write strawpot.lock."""
        src = self.root / "_src"
        locked = [_install(self.state_dir, Kind.AGENT, "stub-agent", "0.1.0", agent_dir)]
        for kind, texts in ((Kind.SKILL, self.skills), (Kind.ROLE, self.roles)):
            for name, text in texts.items():
                folder = src / kind.plural / name
                folder.mkdir(parents=True)
                (folder / kind.main_file).write_text(text, encoding="utf-8")
                for rel, content in (self.skill_files.get(name, {}) if kind is Kind.SKILL else {}).items():
                    (folder / rel).parent.mkdir(parents=True, exist_ok=True)
                    (folder / rel).write_text(content, encoding="utf-8")
                    (folder / rel).chmod(0o755 if content.startswith("#!") else 0o644)
                locked.append(_install(self.state_dir, kind, name, "1.0.0", folder))
        shutil.rmtree(src, ignore_errors=True)
        settings = {"python": sys.executable, **self.agent_settings}
        toml = [
            "[roles]", *(f'{name} = "*"' for name in self.roles),
            "", "[agents]", 'stub-agent = { version = "*", ' + ", ".join(f"{k} = {_toml(v)}" for k, v in settings.items()) + " }",
            "", "[orchestrator]", f'role = "{self.orchestrator_role}"', 'runtime = "stub-agent"',
            "", "[policy]", *(f"{k} = {_toml(v)}" for k, v in self.policy.items()),
            "", "[denden]", *(f"{k} = {_toml(v)}" for k, v in self.denden.items()),
        ]
        manifest_path = self.root / "strawpot.toml"
        manifest_path.write_text("\n".join(toml) + "\n", encoding="utf-8")
        lock = Lockfile(packages=tuple(locked), manifest_hash=Manifest.load(manifest_path).dependency_hash(),
                        generated_by="tests")
        lock.write(self.root / "strawpot.lock")
        return self


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def standard_roles() -> dict[str, str]:
    """orchestrator → implementer → reviewer; lead may delegate to any role (`*`)."""
    return {
        "orchestrator": role_md("orchestrator", skills=["planning"], roles=["implementer", "reviewer"]),
        "implementer": role_md("implementer", skills=["coding"], roles=["reviewer"]),
        "reviewer": role_md("reviewer", skills=["reviewing"]),
        "lead": role_md("lead", roles=["*"]),
    }


def standard_skills() -> dict[str, str]:
    return {
        "planning": skill_md("planning"),
        "coding": skill_md("coding", deps=["git-basics"]),
        "git-basics": skill_md("git-basics"),
        "reviewing": skill_md("reviewing", deps=["git-basics"]),
    }


@pytest.fixture
def project(tmp_path: Path) -> Iterator[ProjectFixture]:
    """An unbuilt project with the standard roles and skills and short timeouts; call .build(). Whatever still runs
    in the test's folder at the end (a failed test's agents, which lead groups of their own) is killed."""
    root = tmp_path / "proj"
    root.mkdir()
    yield ProjectFixture(root, standard_roles(), standard_skills(),
                         policy={"max_depth": 3, "agent_timeout": 20, "kill_grace": 0.5})
    kill_left_in(tmp_path)


def kill_left_in(folder: Path) -> None:
    """SIGKILL every process of ours whose working folder is inside `folder`."""
    inside = str(folder.resolve())
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else ():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if cwd == inside or cwd.startswith(inside + os.sep):
            with contextlib.suppress(OSError):
                os.kill(int(entry.name), 9)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0); it is gone for our purposes
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _group_alive(pgid: int) -> bool:
    """Whether any non-zombie process is still in process group `pgid`."""
    if not Path("/proc").is_dir():
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        return True
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            return True
    return False


@pytest.fixture
def reap_guard() -> Iterator[list[int]]:
    """Tests append pgids they started; any left alive at the end is killed and fails the test."""
    pgids: list[int] = []
    yield pgids
    leftovers = [g for g in pgids if _group_alive(g)]
    for g in leftovers:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(g, 9)
    assert not leftovers, f"process groups left running: {leftovers}"


@pytest.fixture
def group_alive():  # type: ignore[no-untyped-def]
    """Whether a process group still has a live (non-zombie) member."""
    return _group_alive


@pytest.fixture
def make_role():  # type: ignore[no-untyped-def]
    """role_md(name, skills=..., roles=..., body=..., default_agent=..., description=...) -> ROLE.md text."""
    return role_md


@pytest.fixture
def make_skill():  # type: ignore[no-untyped-def]
    return skill_md


@pytest.fixture(autouse=True)
def _fast_python3(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let the stub wrapper's `#!/usr/bin/env python3` find this interpreter first (not a slow version shim)."""
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))


@pytest.fixture
def pid_alive():  # type: ignore[no-untyped-def]
    """Whether a pid is a live (non-zombie) process."""
    return _pid_alive
