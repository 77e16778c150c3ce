"""An agent on the user's terminal (`start --attach direct`) cannot push keystrokes (ioctl TIOCSTI) that the
user's shell would run once strawpot exits: it runs in a session of its own, with no controlling terminal.

A real shell stand-in owns a real pty as its controlling terminal, runs `strawpot start --attach direct` on it,
and reads whatever input is pending once strawpot has exited, as a shell would. TIOCSTI on a terminal that is not
the caller's controlling one needs CAP_SYS_ADMIN, which root has: the whole scene runs in a user namespace
(`unshare --user --map-root-user`), where root keeps the files it owns but no capability over the host's
terminals, as a user would. bubblewrap's own namespace does the same for the sandboxed case.
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from tests._cli import STRAWPOT

pytestmark = pytest.mark.e2e
# the user's shell: run the command on this terminal, then show the input typed (or pushed) meanwhile
SHELL = """
import os, select, subprocess, sys
code = subprocess.run(sys.argv[1:]).returncode
ready, _, _ = select.select([0], [], [], 1.5)
print(f"shell: strawpot exited {code}; pending input {os.read(0, 200) if ready else b''!r}", flush=True)
"""
PUSHED = "echo pwned"


def on_a_terminal(argv: list[str], cwd: Path, env: dict[str, str], typed: bytes) -> str:
    """Run `argv` under the shell stand-in on a new pty (its controlling terminal); type `typed` at the agent's
    prompt; the whole transcript."""
    master, slave = pty.openpty()

    def take_the_terminal() -> None:
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen(["unshare", "--user", "--map-root-user", sys.executable, "-c", SHELL, *argv], cwd=cwd,
                            env=env, stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
                            preexec_fn=take_the_terminal)
    os.close(slave)
    seen, deadline = b"", time.monotonic() + 90
    try:
        while time.monotonic() < deadline and b"shell: strawpot exited" not in seen:
            ready, _, _ = select.select([master], [], [], 0.2)
            if not ready:
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            seen += chunk
            if typed and b"stub-agent> " in seen:
                os.write(master, typed)
                typed = b""
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    return seen.decode("utf-8", errors="replace")


@pytest.mark.parametrize("sandbox", ["none", "bwrap"])
def test_an_attached_agent_cannot_push_keys_into_the_users_shell(project, sandbox: str) -> None:  # type: ignore[no-untyped-def]
    project.build()
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRAWPOT_")}
    transcript = on_a_terminal([*STRAWPOT, "start", "--attach", "direct", "--sandbox", sandbox], project.root,
                               {**env, "TERM": "dumb"}, f"try:tiocsti:{PUSHED}\\n then fail:1\r".encode())
    assert "shell: strawpot exited" in transcript, transcript
    assert "refused tiocsti: [Errno 1] Operation not permitted" in transcript, transcript
    assert "pending input b''" in transcript and "pending input b'echo" not in transcript, transcript
