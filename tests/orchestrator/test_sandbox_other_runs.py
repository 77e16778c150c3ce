"""A sandboxed agent cannot see another run of the same project: not its folder, not its Denden socket (a read-only
bind would still let it connect() and have that run start an unsandboxed agent), not its worktree."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._short_paths import short_folder
from tests.orchestrator.conftest import ProjectFixture, standard_roles, standard_skills

pytestmark = pytest.mark.e2e
STRAWPOT = [sys.executable, "-c", "import sys; from strawpot.cli import main; sys.exit(main())"]
IDENTITY = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example.org"}


def git(cwd: Path, *args: str) -> None:
    proc = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True,
                          env={**os.environ, **IDENTITY})
    assert proc.returncode == 0, proc.stderr


@pytest.fixture(params=["in the run folder", "in the runtime dir"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, Path | str]]:
    """Where the runs' Denden sockets go: the run folder (a short project path), or a folder of their own under
    $XDG_RUNTIME_DIR (a project path too long for a socket); the runtime dir sits in HOME, which agents can read."""
    home = tmp_path / "home"
    home.mkdir()
    if request.param == "in the run folder":
        with short_folder() as short:
            yield {"root": short / "proj", "home": home, "runtime": ""}
    else:
        runtime = home / "r"
        runtime.mkdir(mode=0o700)
        yield {"root": tmp_path / "proj", "home": home, "runtime": str(runtime)}


def environ(where: dict[str, Path | str]) -> dict[str, str]:
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("STRAWPOT_", "XDG_"))}
    runtime = {"XDG_RUNTIME_DIR": str(where["runtime"])} if where["runtime"] else {}
    return {**kept, **IDENTITY, "HOME": str(where["home"]), **runtime}


@pytest.fixture
def repo(where):  # type: ignore[no-untyped-def]
    root = Path(where["root"])
    root.mkdir()
    project = ProjectFixture(root, standard_roles(), standard_skills(), policy={"agent_timeout": 20})
    project.build()
    git(root, "init", "-q", "-b", "main")
    (root / ".gitignore").write_text(".strawpot/\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "first")
    return project


@pytest.fixture
def other_run(repo, where) -> Iterator[dict]:  # type: ignore[no-untyped-def,type-arg]
    """Another run of the same project, in a worktree, alive (its agent sleeps) while the test runs."""
    proc = subprocess.Popen([*STRAWPOT, "start", "--headless", "--isolation", "worktree", "--task", "sleep:60"],
                            cwd=repo.root, env=environ(where), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    record: dict = {}  # type: ignore[type-arg]
    while time.monotonic() < deadline and not record.get("agents"):
        time.sleep(0.2)
        for found in (repo.root / ".strawpot" / "sessions").glob("*/session.json"):
            record = json.loads(found.read_text())
    socket_dir = str(repo.root) if not where["runtime"] else str(where["runtime"])
    assert record.get("agents") and record["denden_addr"].startswith(f"unix:{socket_dir}/"), record
    try:
        yield record
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


def test_a_sandboxed_agent_sees_neither_the_socket_nor_the_folders_of_another_run(repo, other_run, where):  # type: ignore[no-untyped-def]
    socket_path = other_run["denden_addr"].removeprefix("unix:")
    assert os.path.exists(socket_path)
    run_dir = repo.root / ".strawpot" / "sessions" / other_run["run_id"]
    worktree = other_run["isolation"]["path"]
    task = (f"try:connect:unix:{socket_path} then try:read:{run_dir}/session.json "
            f"then try:read:{worktree}/.gitignore then delegate:implementer:echo:my own run still answers")
    proc = subprocess.run([*STRAWPOT, "start", "--headless", "--isolation", "worktree", "--sandbox", "bwrap",
                           "--task", task], cwd=repo.root, env=environ(where), capture_output=True,
                          text=True, timeout=90)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[:3] == ["refused connect: [Errno 2] No such file or directory",
                         f"refused read: [Errno 2] No such file or directory: '{run_dir}/session.json'",
                         f"refused read: [Errno 2] No such file or directory: '{worktree}/.gitignore'"], proc.stdout
    assert lines[3] == "my own run still answers", proc.stdout


def test_unsandboxed_the_other_run_is_reachable(repo, other_run, where):  # type: ignore[no-untyped-def]
    """What the sandbox takes away: the same steps without it reach the other run."""
    socket_path = other_run["denden_addr"].removeprefix("unix:")
    proc = subprocess.run([*STRAWPOT, "start", "--headless", "--task", f"try:connect:unix:{socket_path}"],
                          cwd=repo.root, env=environ(where), capture_output=True, text=True, timeout=90)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"connected unix:{socket_path}"
