"""A sandboxed agent cannot reach another run, of its project or any other: not its Denden socket (a read-only bind
would still let it connect() and have that run start an unsandboxed agent), nor, in its project, that run's folder
or worktree. Sockets live in a folder of their run's own under the runtime or temp dir, which sandboxes hide."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._cli import STRAWPOT, strawpot
from tests._short_paths import short_folder
from tests.orchestrator._merge_scenario import IDENTITY, git
from tests.orchestrator.conftest import ProjectFixture, standard_roles, standard_skills

pytestmark = pytest.mark.e2e



def make_repo(root: Path) -> ProjectFixture:
    root.mkdir()
    project = ProjectFixture(root, standard_roles(), standard_skills(), policy={"agent_timeout": 300})
    project.build()
    git(root, "init", "-q", "-b", "main")
    (root / ".gitignore").write_text(".strawpot/\nt/\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "first")
    return project


@pytest.fixture(params=["runtime dir", "temp dir"])
def environ(request: pytest.FixtureRequest) -> Iterator[dict[str, str]]:
    """The runs' environment: sockets under $XDG_RUNTIME_DIR (in HOME here, which agents can read), or under the
    temp dir when there is none. HOME has a short path, so a socket fits under it wherever pytest's tmp_path is."""
    with short_folder() as short:
        home = short / "home"
        home.mkdir()
        kept = {k: v for k, v in os.environ.items() if not k.startswith(("STRAWPOT_", "XDG_"))}
        if request.param == "temp dir":
            yield {**kept, **IDENTITY, "HOME": str(home)}
            return
        runtime = home / "r"
        runtime.mkdir(mode=0o700)
        yield {**kept, **IDENTITY, "HOME": str(home), "XDG_RUNTIME_DIR": str(runtime)}


@pytest.fixture
def projects() -> Iterator[tuple[ProjectFixture, ProjectFixture]]:
    """Two projects with short paths (a socket would fit in their run folders); the other one lives inside the
    first, so the sandbox shows its files as it shows any readable folder (`~/projects/b` seen from `~/projects/a`
    is the same case: HOME is readable)."""
    with short_folder() as short:
        mine = make_repo(short / "mine")
        yield mine, make_repo(mine.root / "t")


def live_run(project: ProjectFixture, environ: dict[str, str]) -> tuple[subprocess.Popen[bytes], dict]:  # type: ignore[type-arg]
    """A run of `project`, in a worktree, alive (its agent sleeps); its process and its session.json."""
    proc = subprocess.Popen([*STRAWPOT, "start", "--headless", "--isolation", "worktree", "--task", "sleep:300"],
                            cwd=project.root, env=environ, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    record: dict = {}  # type: ignore[type-arg]
    while time.monotonic() < deadline and not record.get("agents"):
        time.sleep(0.2)
        for found in (project.root / ".strawpot" / "sessions").glob("*/session.json"):
            record = json.loads(found.read_text())
    assert record.get("agents"), record
    return proc, record


@pytest.fixture(params=["same project", "another project"])
def other_run(request: pytest.FixtureRequest, projects, environ) -> Iterator[dict]:  # type: ignore[no-untyped-def,type-arg]
    mine, theirs = projects
    proc, record = live_run(mine if request.param == "same project" else theirs, environ)
    try:
        yield record
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


def test_a_sandboxed_agent_can_reach_no_other_run(projects, environ, other_run):  # type: ignore[no-untyped-def]
    mine = projects[0]
    socket_path = other_run["denden_addr"].removeprefix("unix:")
    assert os.path.exists(socket_path)
    run_dir = Path(other_run["isolation"]["repo"]) / ".strawpot" / "sessions" / other_run["run_id"]
    worktree = other_run["isolation"]["path"]
    same = Path(other_run["isolation"]["repo"]) == mine.root  # another project's files are as readable as any
    reads = f"then try:read:{run_dir}/session.json then try:read:{worktree}/.gitignore " if same else ""
    task = f"try:connect:{socket_path} {reads}then delegate:implementer:echo:my own run still answers"
    proc = strawpot("start", "--headless", "--isolation", "worktree", "--sandbox", "bwrap", "--task", task,
                    cwd=mine.root, env=environ)
    assert proc.returncode == 0, proc.stderr
    refused = ["refused connect: [Errno 2] No such file or directory"]
    if same:
        refused += [f"refused read: [Errno 2] No such file or directory: '{run_dir}/session.json'",
                    f"refused read: [Errno 2] No such file or directory: '{worktree}/.gitignore'"]
    assert proc.stdout.splitlines() == [*refused, "my own run still answers"], proc.stdout


def test_the_socket_is_in_a_folder_of_its_runs_own_and_unsandboxed_it_is_reachable(projects, environ, other_run):  # type: ignore[no-untyped-def]
    """Never in the project (whose path would have fitted); and what the sandbox takes away: the same step without
    it reaches the other run."""
    base = environ.get("XDG_RUNTIME_DIR") or "/tmp"
    assert other_run["denden_addr"].startswith(f"unix:{base}/strawpot-"), other_run
    socket_path = other_run["denden_addr"].removeprefix("unix:")
    proc = strawpot("start", "--headless", "--task", f"try:connect:{socket_path}", cwd=projects[0].root, env=environ)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"connected {socket_path}"


def test_a_tcp_runs_token_is_where_no_sandboxed_agent_of_any_project_can_read_it(projects, environ):  # type: ignore[no-untyped-def]
    """Over `[denden] transport = "tcp"` the run's token lets `strawpot cancel` in; kept in another project's run
    folder (readable, as HOME is), a sandboxed agent with the network could take it and have that run start an
    unconfined agent. It lives in a 0700 folder under the runtime or temp dir, which every sandbox hides."""
    import tempfile

    from orchestrator.run_token import FOLDER_PREFIX, TOKEN_FILE

    mine, theirs = projects
    proc, record = live_run(theirs, {**environ, "STRAWPOT_DENDEN_TRANSPORT": "tcp"})
    try:
        assert not record["denden_addr"].startswith("unix:"), record
        bases = [b for b in (environ.get("XDG_RUNTIME_DIR"), tempfile.gettempdir(), "/tmp") if b]
        (token_path,) = [p for b in dict.fromkeys(bases)
                         if (p := Path(b) / f"{FOLDER_PREFIX}{record['run_id']}" / TOKEN_FILE).is_file()]
        assert (token_path.parent.stat().st_mode & 0o777, token_path.stat().st_mode & 0o777) == (0o700, 0o600)
        run_dir = Path(record["isolation"]["repo"]) / ".strawpot" / "sessions" / record["run_id"]
        assert not (run_dir / TOKEN_FILE).exists()
        task = f"try:read:{token_path} then try:read:{run_dir}/session.json"
        done = strawpot("start", "--headless", "--sandbox", "bwrap", "--task", task, cwd=mine.root, env=environ)
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines()[0] == f"refused read: [Errno 2] No such file or directory: '{token_path}'"
        assert record["run_id"] in done.stdout  # the other project's record stays readable: only the token moved
        assert token_path.read_text() not in done.stdout
        cancelled = strawpot("cancel", record["run_id"], cwd=theirs.root, env=environ, timeout=60)
        assert cancelled.returncode == 0, cancelled.stderr  # the owner's cancel still finds it
        proc.wait(timeout=30)
        assert not token_path.parent.exists()  # removed with the server
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
