"""Sandboxed runs with the real bubblewrap: a hostile agent (and its sub-agent) is refused at every attempt
while its legitimate work merges back; the same agent unsandboxed succeeds at each; bad settings refuse to start."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._cli import strawpot
from tests.orchestrator._merge_scenario import IDENTITY, a_git_project

pytestmark = pytest.mark.e2e
KEY = "-----BEGIN OPENSSH PRIVATE KEY----- not-a-real-key"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A fake HOME with a shell profile, an SSH key and a registry token: never the real ~."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text(KEY)
    (home / ".bashrc").write_text("# mine\n")
    (home / ".config" / "strawpot").mkdir(parents=True)
    (home / ".config" / "strawpot" / "config.toml").write_text('[tokens]\n"https://strawhub.dev" = "sh_secret"\n')
    return home


@pytest.fixture
def repo(project):  # type: ignore[no-untyped-def]
    project.build()
    a_git_project(project.root)
    return project


@pytest.fixture
def listener() -> Iterator[int]:
    """A loopback port open outside any sandbox."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield server.getsockname()[1]


def run(root: Path, home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("STRAWPOT_", "XDG_CONFIG"))}
    return strawpot(*args, cwd=root, env={**environ, **IDENTITY, "HOME": str(home), **env})


def hostile_task(home: Path, root: Path, port: int) -> str:
    """Every attempt in one task (`try:` turns a refusal into a result line); a sub-agent tries again."""
    return (f"try:write:{home}/.bashrc=pwned then try:read:{home}/.ssh/id_ed25519 "
            f"then try:read:{home}/.config/strawpot/config.toml then try:write:{root}/escaped.txt=out "
            f"then try:connect:127.0.0.1:{port} then write:legit.txt=work "
            f"then delegate:implementer:try:write:{home}/.bashrc=sub then try:read:{home}/.ssh/id_ed25519 "
            f"then try:write:{root}/sub-escaped.txt=out then write:sub.txt=sub work")


def progress_events(stderr: str) -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]


def test_a_hostile_agent_and_its_sub_agent_are_refused_while_their_work_merges_back(repo, home, listener):  # type: ignore[no-untyped-def]
    root = repo.root
    proc = run(root, home, "start", "--headless", "--isolation", "worktree", "--sandbox", "bwrap",
               "--progress", "json", "--task", hostile_task(home, root, listener), STRAWPOT_SANDBOX_NETWORK="off")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.count("refused write: [Errno 30] Read-only file system") == 4, out  # .bashrc and the project, twice
    assert out.count("refused read: [Errno 2] No such file or directory") == 3, out  # the key (twice), the token
    assert "refused connect" in out and "connected" not in out
    assert KEY not in out and "sh_secret" not in out
    assert (home / ".bashrc").read_text() == "# mine\n"
    assert not (root / "escaped.txt").exists() and not (root / "sub-escaped.txt").exists()
    assert (root / "legit.txt").read_text() == "work" and (root / "sub.txt").read_text() == "sub work"

    denied = [e for e in progress_events(proc.stderr) if e["event"] == "sandbox_denied"]
    assert len(denied) == 2, proc.stderr  # the orchestrator and its sub-agent
    assert all(any("Read-only file system" in line for line in e["evidence"]) for e in denied)
    shown = json.loads(run(root, home, "sessions", "--json").stdout)["sessions"][0]
    record = json.loads(run(root, home, "sessions", "show", shown["run_id"], "--json").stdout)
    assert record["sandbox"]["kind"] == "bwrap" and record["sandbox"]["network"] == "off", record
    text = run(root, home, "sessions", "show", shown["run_id"]).stdout
    assert "sandbox: bwrap (network off" in text, text


def test_the_same_agent_unsandboxed_succeeds_at_every_attempt(repo, home, listener):  # type: ignore[no-untyped-def]
    root = repo.root
    proc = run(root, home, "start", "--headless", "--isolation", "worktree", "--task",
               hostile_task(home, root, listener))
    assert proc.returncode == 0, proc.stderr
    assert "refused" not in proc.stdout, proc.stdout
    assert proc.stdout.count(KEY) == 2 and "sh_secret" in proc.stdout and f"connected 127.0.0.1:{listener}" in proc.stdout
    assert (home / ".bashrc").read_text() == "sub"
    assert (root / "escaped.txt").read_text() == "out" and (root / "sub-escaped.txt").read_text() == "out"
    assert (root / "legit.txt").read_text() == "work"


def test_writable_paths_are_writable_and_network_on_reaches_the_host(repo, home, tmp_path, listener):  # type: ignore[no-untyped-def]
    shared = home / "shared"
    shared.mkdir()
    proc = run(repo.root, home, "start", "--headless", "--sandbox", "bwrap", "--task",
               f"write:{shared}/note.txt=kept then connect:127.0.0.1:{listener} then try:write:/etc/x=y "
               "then write:here.txt=in the project",
               STRAWPOT_SANDBOX_WRITABLE=str(shared))
    assert proc.returncode == 0, proc.stderr
    assert (shared / "note.txt").read_text() == "kept"
    assert f"connected 127.0.0.1:{listener}" in proc.stdout  # "on" is the host's network, unfiltered
    assert "refused write" in proc.stdout and (repo.root / "here.txt").read_text() == "in the project"


def test_no_isolation_keeps_the_installed_packages_read_only(repo, home):  # type: ignore[no-untyped-def]
    wrapper = repo.state_dir / "agents" / "stub-agent" / "bin" / "stub-wrapper"
    before = wrapper.read_bytes()
    proc = run(repo.root, home, "start", "--headless", "--sandbox", "bwrap", "--task",
               f"try:write:{wrapper}=evil then write:ok.txt=fine")
    assert proc.returncode == 0, proc.stderr
    assert "refused write: [Errno 30] Read-only file system" in proc.stdout
    assert wrapper.read_bytes() == before and (repo.root / "ok.txt").read_text() == "fine"


def _fake_bwrap(folder: Path) -> Path:
    """A `bwrap` that cannot create namespaces, as on a host that forbids unprivileged user namespaces."""
    folder.mkdir()
    tool = folder / "bwrap"
    tool.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    return folder


@pytest.mark.parametrize("case", ["missing", "no-namespaces"])
def test_a_sandbox_that_cannot_work_refuses_to_start_anything(repo, home, tmp_path, case):  # type: ignore[no-untyped-def]
    path = str(_fake_bwrap(tmp_path / "bin")) if case == "no-namespaces" else str(tmp_path / "nothing")
    proc = run(repo.root, home, "start", "--headless", "--sandbox", "bwrap", "--task", "write:ran.txt=x",
               PATH=path + os.pathsep + str(Path(sys.executable).parent))
    assert proc.returncode == 7, proc.stderr
    expected = "is not on PATH" if case == "missing" else "cannot create namespaces here"
    assert expected in proc.stderr and '[session] sandbox = "none"' in proc.stderr, proc.stderr
    assert "apt-get install bubblewrap" in proc.stderr or "user namespaces" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (repo.root / "ran.txt").exists() and not repo.sessions_dir.exists()


@pytest.mark.parametrize(("writable", "problem"), [("/", "is the root folder"), ("/no/such/dir", "does not exist"),
                                                    ("relative/dir", "is not an absolute path")])
def test_a_bad_writable_path_is_a_usage_error(repo, home, writable, problem):  # type: ignore[no-untyped-def]
    proc = run(repo.root, home, "start", "--headless", "--sandbox", "bwrap", "--task", "write:ran.txt=x",
               STRAWPOT_SANDBOX_WRITABLE=writable)
    assert proc.returncode == 2, proc.stderr
    assert f"sandbox.writable entry {writable!r} {problem}" in proc.stderr, proc.stderr
    assert not (repo.root / "ran.txt").exists()


def test_network_off_with_denden_over_tcp_is_a_usage_error(repo, home):  # type: ignore[no-untyped-def]
    proc = run(repo.root, home, "start", "--headless", "--sandbox", "bwrap", "--task", "noop",
               STRAWPOT_SANDBOX_NETWORK="off", STRAWPOT_DENDEN_TRANSPORT="tcp")
    assert proc.returncode == 2 and 'transport = "unix"' in proc.stderr, proc.stderr


def test_doctor_says_whether_the_sandbox_works_here(repo, home, tmp_path):  # type: ignore[no-untyped-def]
    works = run(repo.root, home, "doctor", "--json", STRAWPOT_SESSION_SANDBOX="bwrap")
    assert works.returncode == 0, works.stdout + works.stderr
    report = {s["setting"]: s for s in json.loads(works.stdout)["sandbox"]}
    assert report["[session] sandbox"] == {**report["[session] sandbox"], "kind": "bwrap", "ok": True, "bwrap_works": True}

    no_bwrap = {"PATH": str(tmp_path / "nothing") + os.pathsep + str(Path(sys.executable).parent)}
    broken = run(repo.root, home, "doctor", STRAWPOT_SESSION_SANDBOX="bwrap", **no_bwrap)
    assert broken.returncode == 7, broken.stdout + broken.stderr
    assert "BAD sandbox [session] sandbox = 'bwrap': bubblewrap does not work here" in broken.stdout
    assert "apt-get install bubblewrap" in broken.stdout
    unused = run(repo.root, home, "doctor", **no_bwrap)  # not asked for: reported, not a failure
    assert unused.returncode == 0 and "ok  sandbox [session] sandbox = 'none'" in unused.stdout, unused.stdout


def test_the_global_config_is_hidden_wherever_it_lives(repo, home, tmp_path):  # type: ignore[no-untyped-def]
    config = home / "elsewhere"  # readable like the rest of HOME, unless hidden
    config.mkdir()
    (config / "config.toml").write_text('[tokens]\n"https://strawhub.dev" = "sh_moved"\n')
    proc = run(repo.root, home, "start", "--headless", "--sandbox", "bwrap", "--task",
               f"try:read:{config}/config.toml", STRAWPOT_CONFIG_DIR=str(config))
    assert proc.returncode == 0, proc.stderr
    assert "refused read" in proc.stdout and "sh_moved" not in proc.stdout, proc.stdout


def _running(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker in (entry / "cmdline").read_bytes().decode(errors="replace"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_a_sandboxed_sub_agent_past_its_timeout_is_stopped_with_everything_it_started(repo, home):  # type: ignore[no-untyped-def]
    proc = run(repo.root, home, "start", "--headless", "--sandbox", "bwrap", "--task",
               "delegate:implementer:spawn:61.2345 then sleep:61.2345", STRAWPOT_POLICY_AGENT_TIMEOUT="1")
    assert proc.returncode == 0 and "ERROR ERR_SUBAGENT_TIMEOUT" in proc.stdout, proc.stdout + proc.stderr
    assert _running("61.2345") == []
