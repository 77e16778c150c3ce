"""The paths the sandbox's walls are made of: git folders a `.git` file names, the sockets variables name, and
where a program under the sandbox's own /tmp lives."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from sandbox.paths import exposed, git_folders, program_home, socket_paths


def test_a_dot_git_file_names_its_git_dir_and_common_dir(tmp_path: Path) -> None:
    common = tmp_path / "main" / ".git"
    (common / "worktrees" / "wt").mkdir(parents=True)
    (common / "worktrees" / "wt" / "commondir").write_text("../..\n")
    work = tmp_path / "wt" / "sub"
    work.mkdir(parents=True)
    (tmp_path / "wt" / ".git").write_text(f"gitdir: {common}/worktrees/wt\n")
    found = [Path(os.path.realpath(p)) for p in git_folders(work)]
    assert found == [tmp_path / "wt" / ".git", common / "worktrees" / "wt", common]
    assert git_folders(tmp_path / "main") == [common]


def test_the_sockets_the_environment_names(tmp_path: Path) -> None:
    for name in ("agent", "bus", "docker", "gpg"):
        (tmp_path / name).write_text("")
    environ = {"SSH_AUTH_SOCK": f"{tmp_path}/agent", "DBUS_SESSION_BUS_ADDRESS": f"unix:path={tmp_path}/bus,guid=1;"
               "unix:abstract=/tmp/dbus-x", "DOCKER_HOST": f"unix://{tmp_path}/docker",
               "GPG_AGENT_INFO": f"{tmp_path}/gpg:42:1", "PULSE_SERVER": "tcp:localhost", "PATH": "/usr/bin"}
    # tmp_path holds a path to keep (as HOME would): each socket alone is hidden, never the folder
    assert socket_paths(environ, keep=[tmp_path / "home"]) == [tmp_path / n for n in ("agent", "gpg", "bus", "docker")]
    assert socket_paths({"SSH_AUTH_SOCK": f"{tmp_path}/gone"}) == []


def test_a_socket_in_a_folder_of_its_own_hides_the_folder(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".1password").mkdir(parents=True)
    (home / ".1password" / "agent.sock").write_text("")
    (home / "agent.sock").write_text("")
    assert socket_paths({"SSH_AUTH_SOCK": f"{home}/.1password/agent.sock"}, keep=[home]) == [home / ".1password"]
    assert socket_paths({"SSH_AUTH_SOCK": f"{home}/agent.sock"}, keep=[home]) == [home / "agent.sock"]


def test_a_program_under_tmp_shows_its_prefix_never_tmp_itself() -> None:
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:  # /tmp itself, wherever TMPDIR points
        tool = Path(tmp) / "tools" / "bin" / "tool"
        tool.parent.mkdir(parents=True)
        tool.write_text("#!/bin/sh\n")
        tool.chmod(0o755)
        assert program_home(tool) == Path(tmp) / "tools"
        assert exposed(["tool"], str(tool.parent)) == [Path(tmp) / "tools"]
    assert program_home(Path("/tmp/bin/x")) == Path("/tmp/bin") and program_home(Path("/tmp/x")) == Path("/tmp/x")
    assert exposed(["/usr/bin/env"], None) == []  # not under /tmp or /run: the read-only root shows it already
