"""An unsandboxed agent runs as the user, a child of strawpot: it must not read the registry token back from
strawpot's own environment (/proc/PPID/environ shows the block the process started with, whatever os.environ
says since).

Two walls, each shown by a real agent reading its real parent's /proc/PPID/environ:
- strawpot blanks its secrets in that block, which holds even against a reader with every capability (the tests'
  root);
- strawpot is not dumpable, so a process of the same user without CAP_SYS_PTRACE cannot open the file at all.
  Root has that capability, so that scene runs in a user namespace as uid 1000 with no capability, as a user's
  agent would.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests._cli import STRAWPOT

pytestmark = pytest.mark.e2e
TOKEN = "sh_" + "5ec7e7" * 8


def start(root: Path, task: str, *prefix: str, sandbox: str = "none") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRAWPOT_")}
    return subprocess.run([*prefix, *STRAWPOT, "start", "--headless", "--sandbox", sandbox, "--task", task], cwd=root,
                          capture_output=True,
                          text=True, timeout=90, env={**env, "STRAWPOT_TOKEN": TOKEN, "DENDEN_TOKEN": "another-run"})


@pytest.mark.parametrize("sandbox", ["none", "bwrap"])  # in bwrap the parent is the sandbox's own first process
def test_the_token_is_gone_from_the_environment_strawpot_started_with(project, sandbox: str) -> None:  # type: ignore[no-untyped-def]
    project.build()
    proc = start(project.root, "parent-env:STRAWPOT_TOKEN then parent-env:DENDEN_TOKEN then parent-env:HOME",
                 sandbox=sandbox)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["parent has no STRAWPOT_TOKEN", "parent has no DENDEN_TOKEN",
                                        f"parent HOME={os.environ['HOME']}"], proc.stdout
    assert TOKEN not in proc.stdout + proc.stderr


def test_a_process_of_the_same_user_cannot_read_strawpots_environment(project) -> None:  # type: ignore[no-untyped-def]
    project.build()
    as_a_user = ("unshare", "--user", "--map-user=1000", "--map-group=1000")
    proc = start(project.root, "try:parent-env:HOME then echo:still here", *as_a_user)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].startswith("refused parent-env: [Errno 13] Permission denied"), proc.stdout
    assert proc.stdout.splitlines()[1] == "still here"
