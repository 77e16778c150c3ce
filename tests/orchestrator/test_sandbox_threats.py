"""The rows of the sandbox's threat table (docs/sessions.md), each tried by a hostile agent under the real
bubblewrap: what the table says is stopped is refused or invisible, what it says is not stopped still works."""

from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile
import venv
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.orchestrator import test_sandbox as base
from tests.orchestrator._merge_scenario import git
from tests.orchestrator.conftest import STUB_AGENT
from tests.orchestrator.test_sandbox import run

home, repo, listener = base.home, base.repo, base.listener  # the fixtures of the sandbox's other tests

pytestmark = pytest.mark.e2e


def _listening(path: Path | str) -> socket.socket:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(8)
    return server


@pytest.fixture
def run_socket() -> Iterator[Path]:
    """A listening socket under /run, where ssh-agent, gpg-agent, D-Bus and docker keep theirs."""
    candidates = [Path(f"/run/user/{os.getuid()}"), Path("/run/lock"), Path("/run")]
    base = next((c for c in candidates if c.is_dir() and os.access(c, os.W_OK)), None)
    assert base is not None, "no writable folder under /run to put a socket in"
    folder = Path(tempfile.mkdtemp(prefix="strawpot-test-", dir=base))
    server = _listening(folder / "agent.sock")
    yield folder / "agent.sock"
    server.close()
    shutil.rmtree(folder)


def test_git_hooks_and_config_are_read_only_with_isolation_none(repo, home):  # type: ignore[no-untyped-def]
    root = repo.root
    config = (root / ".git" / "config").read_text()
    proc = run(root, home, "start", "--headless", "--sandbox", "bwrap", "--task",
               f"try:write:{root}/.git/hooks/pre-commit=#!/bin/sh evil "
               f"then try:write:{root}/.git/config=[core] fsmonitor = evil then write:ok.txt=fine")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("refused write: [Errno 30] Read-only file system") == 2, proc.stdout
    assert not (root / ".git" / "hooks" / "pre-commit").exists() and (root / ".git" / "config").read_text() == config
    assert (root / "ok.txt").read_text() == "fine"  # the working tree itself stays writable


def test_the_git_folders_a_dot_git_file_names_are_read_only(project, home, tmp_path):  # type: ignore[no-untyped-def]
    main = tmp_path / "main"  # the project is a linked worktree of another repository: its .git is a file
    main.mkdir()
    git(main, "init", "-q", "-b", "main")
    git(main, "commit", "-q", "--allow-empty", "-m", "first")
    git(main, "worktree", "add", "-q", "--detach", str(project.root))
    project.build()
    root, dot = project.root, (project.root / ".git").read_text()
    proc = run(root, home, "start", "--headless", "--sandbox", "bwrap", "--task",
               f"try:write:{root}/.git=gitdir: {tmp_path}/evil then try:write:{main}/.git/hooks/pre-commit=evil "
               f"then try:write:{main}/.git/worktrees/proj/config=evil then write:ok.txt=fine")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("refused write") == 3, proc.stdout
    assert (root / ".git").read_text() == dot and not (main / ".git" / "hooks" / "pre-commit").exists()
    assert not (main / ".git" / "worktrees" / "proj" / "config").exists() and (root / "ok.txt").read_text() == "fine"


@pytest.mark.parametrize("isolation", ["none", "worktree"])
def test_the_project_files_are_read_only(repo, home, isolation):  # type: ignore[no-untyped-def]
    root = repo.root
    before = {name: (root / name).read_bytes() for name in ("strawpot.toml", "strawpot.lock")}
    proc = run(root, home, "start", "--headless", "--isolation", isolation, "--sandbox", "bwrap", "--task",
               'try:write:strawpot.toml=[session] sandbox = "none" then try:write:strawpot.lock=x '
               "then write:ok.txt=fine")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("refused write: [Errno 30] Read-only file system") == 2, proc.stdout
    assert {name: (root / name).read_bytes() for name in before} == before
    assert (root / "ok.txt").read_text() == "fine"


def test_a_project_file_cannot_lower_the_sandbox_the_global_config_asks_for(repo, home, tmp_path, listener):  # type: ignore[no-untyped-def]
    config = tmp_path / "config"
    config.mkdir()
    (config / "config.toml").write_text('[session]\nsandbox = "bwrap"\n[sandbox]\nnetwork = "off"\n')
    manifest = repo.root / "strawpot.toml"
    manifest.write_text(manifest.read_text() + f'\n[session]\nsandbox = "none"\n\n[sandbox]\nnetwork = "on"\n'
                                                f'writable = ["{home}"]\n')
    proc = run(repo.root, home, "start", "--headless", "--task",
               f"try:write:{home}/.bashrc=pwned then try:connect:127.0.0.1:{listener}", STRAWPOT_CONFIG_DIR=str(config))
    assert proc.returncode == 0, proc.stderr
    assert "refused write: [Errno 30] Read-only file system" in proc.stdout and "refused connect" in proc.stdout
    assert (home / ".bashrc").read_text() == "# mine\n"
    assert "session.sandbox = 'none' is ignored: a project file cannot lower" in proc.stderr, proc.stderr
    assert "sandbox.writable is ignored" in proc.stderr


def test_sockets_under_run_and_those_the_environment_names_are_unreachable(repo, home, run_socket):  # type: ignore[no-untyped-def]
    agent_dir, bus = home / ".agent", home / "bus"  # HOME is readable: only the hiding stops these
    agent_dir.mkdir()
    (agent_dir / "keys.txt").write_text("the agent's other files")
    agent_sock = agent_dir / "agent.sock"
    servers = [_listening(agent_sock), _listening(bus), _listening("\0strawpot-test-abstract-" + str(os.getpid()))]
    try:
        proc = run(repo.root, home, "start", "--headless", "--sandbox", "bwrap", "--task",
                   f"try:connect:{run_socket} then try:connect:{agent_sock} then try:connect:{bus} "
                   f"then try:connect:@strawpot-test-abstract-{os.getpid()} then try:read:{agent_dir}/keys.txt "
                   "then env:SSH_AUTH_SOCK then env:DBUS_SESSION_BUS_ADDRESS",
                   STRAWPOT_SANDBOX_NETWORK="off", SSH_AUTH_SOCK=str(agent_sock),
                   DBUS_SESSION_BUS_ADDRESS=f"unix:path={bus},guid=0")
    finally:
        for server in servers:
            server.close()
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("refused connect") == 4 and "connected" not in proc.stdout, proc.stdout
    assert "refused read: [Errno 2]" in proc.stdout and "other files" not in proc.stdout  # its folder is hidden
    assert str(agent_sock) not in proc.stdout and str(bus) not in proc.stdout  # nor passed in the environment


def test_with_network_on_abstract_sockets_and_sockets_in_readable_folders_stay_reachable(repo, home):  # type: ignore[no-untyped-def]
    name, stray = f"strawpot-test-abstract-on-{os.getpid()}", home / "stray.sock"  # named by no variable
    servers = [_listening("\0" + name), _listening(stray)]  # not stopped, as the table says
    try:
        proc = run(repo.root, home, "start", "--headless", "--sandbox", "bwrap", "--task",
                   f"try:connect:@{name} then try:connect:{stray}")
    finally:
        for server in servers:
            server.close()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"connected @{name}" in proc.stdout and f"connected {stray}" in proc.stdout, proc.stdout


def test_the_host_tmp_and_processes_are_invisible_but_other_files_stay_readable(repo, home, tmp_path):  # type: ignore[no-untyped-def]
    (tmp_path / "other-run.txt").write_text("another program's temp file")
    (home / "notes.txt").write_text("readable notes")
    proc = run(repo.root, home, "start", "--headless", "--sandbox", "bwrap", "--task",
               f"try:read:{tmp_path}/other-run.txt then try:read:/proc/{os.getpid()}/cmdline then try:read:{home}/notes.txt")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("refused read: [Errno 2] No such file or directory") == 2, proc.stdout
    assert "another program's" not in proc.stdout and "readable notes" in proc.stdout  # not stopped: read-only


def test_a_venv_under_tmp_runs_the_agent(repo, home, tmp_path):  # type: ignore[no-untyped-def]
    env_dir = tmp_path / "venv"  # the --param python of a checkout under /tmp, which the sandbox's /tmp covers
    venv.create(env_dir, system_site_packages=True, symlinks=True, with_pip=False)
    proc = run(repo.root, home, "start", "--headless", "--sandbox", "bwrap", "--param", f"python={env_dir}/bin/python",
               "--task", "echo:ran in the venv then write:ok.txt=fine")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ran in the venv" in proc.stdout and (repo.root / "ok.txt").read_text() == "fine"


def _tool_agent(tmp_path: Path) -> Path:
    """The stub agent declaring one more tool, `sbxtool`."""
    target = tmp_path / "tool-agent"
    shutil.copytree(STUB_AGENT, target, ignore=shutil.ignore_patterns("__pycache__"))
    md = target / "AGENT.md"
    md.write_text(md.read_text().replace("    tools:\n", "    tools:\n      sbxtool:\n        description: a tool\n"
                                         "        install:\n          linux: echo\n          macos: echo\n", 1))
    return target


def test_a_declared_tool_under_tmp_is_visible(project, home, tmp_path):  # type: ignore[no-untyped-def]
    project.build(_tool_agent(tmp_path))
    tools = tmp_path / "tools" / "bin"
    tools.mkdir(parents=True)
    (tools / "sbxtool").write_text("#!/bin/sh\necho tool ran\n")
    (tools / "sbxtool").chmod(0o755)
    proc = run(project.root, home, "start", "--headless", "--sandbox", "bwrap", "--task", "run:sbxtool",
               PATH=f"{tools}{os.pathsep}{os.environ['PATH']}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "tool ran" in proc.stdout, proc.stdout


def test_a_program_the_sandbox_hides_fails_in_one_readable_line(repo, home):  # type: ignore[no-untyped-def]
    hidden = home / ".ssh" / "python"  # under a hidden folder: never shown, whatever asks for it
    hidden.symlink_to(sys.executable)
    proc = run(repo.root, home, "start", "--headless", "--sandbox", "bwrap", "--param", f"python={hidden}",
               "--task", "echo:never")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "the sandbox could not start it (execvp" in proc.stdout and "[sandbox] writable" in proc.stdout, proc.stdout
    assert not any(line.startswith("bwrap:") for line in (proc.stdout + proc.stderr).splitlines())



def test_doctor_names_a_program_the_sandbox_would_hide(repo, home, tmp_path):  # type: ignore[no-untyped-def]
    hidden = home / ".ssh" / "python"
    hidden.symlink_to(sys.executable)
    env_dir = tmp_path / "venv"
    venv.create(env_dir, system_site_packages=True, symlinks=True, with_pip=False)
    manifest = repo.root / "strawpot.toml"
    text = manifest.read_text()
    for python, code in ((hidden, 7), (env_dir / "bin" / "python", 0)):
        manifest.write_text(text.replace(f'python = "{sys.executable}"', f'python = "{python}"'))
        proc = run(repo.root, home, "doctor", STRAWPOT_SESSION_SANDBOX="bwrap")
        assert proc.returncode == code, proc.stdout + proc.stderr
        assert (f"{hidden} is hidden inside the sandbox ([session] sandbox = 'bwrap')" in proc.stdout) == (code == 7)
