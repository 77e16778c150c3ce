"""WrapperRuntime: `<wrapper> build` turns protocol arguments into a command; we own the process it names.

The agent runs in a new session (its own process group, and no controlling terminal even when attached to the
user's) with stdout and stderr in `agent.log` and its pid
in `agent.pid`, both in its workspace. Stopping an agent stops its whole group: SIGTERM, then SIGKILL
after a grace period.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from orchestrator.confine import UNCONFINED, Confined
from sandbox.paths import bwrap_failure, exposed
from strawpot.model.agent_files import open_regular
from strawpot.model.wrapper import BuildOutputError, BuildRequest, LaunchSpec, parse_build_output

__all__ = ["AgentProcess", "BuildRequest", "LaunchSpec", "RuntimeFailure", "WrapperRuntime", "start_process"]

LOG_FILE = "agent.log"
PID_FILE = "agent.pid"
BUILD_TIMEOUT = 30.0


class RuntimeFailure(Exception):
    """The wrapper could not produce a command, or the command could not start; the message says why."""


class WrapperRuntime:
    """One agent package: its wrapper binary and its merged config."""

    def __init__(self, name: str, wrapper: Path, config: Mapping[str, Any] | None = None,
                 build_timeout: float = BUILD_TIMEOUT, *, resume: bool = False) -> None:
        self.name = name
        self.resume = resume  # the agent declares metadata.strawpot.session.resume
        self.wrapper = wrapper
        self.config = dict(config or {})
        self.build_timeout = build_timeout

    def setup(self, env: Mapping[str, str] | None = None, cwd: Path | None = None) -> int:
        """Run the interactive one-time `<wrapper> setup` on the terminal (stdin/stdout inherited); its exit code."""
        return subprocess.call([str(self.wrapper), "setup"], env=None if env is None else dict(env), cwd=cwd)

    def build(self, request: BuildRequest, env: Mapping[str, str], confined: Confined = UNCONFINED) -> LaunchSpec:
        too_large = request.oversize(env)
        if too_large:
            raise RuntimeFailure(f"{self.name}: {too_large}")
        try:
            proc = subprocess.run(
                confined.command([str(self.wrapper), *request.argv()]), capture_output=True, text=True,
                timeout=self.build_timeout, env=dict(env), stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            raise RuntimeFailure(f"{self.name}: wrapper build took longer than {self.build_timeout:g}s") from None
        except OSError as exc:
            raise RuntimeFailure(f"{self.name}: cannot run wrapper {self.wrapper}: {exc.strerror or exc}") from None
        if proc.returncode != 0:
            tail = bwrap_failure(proc.stderr) or proc.stderr.strip()[-500:]
            raise RuntimeFailure(f"{self.name}: wrapper build exited with code {proc.returncode}: {tail}")
        try:
            return parse_build_output(proc.stdout, request.working_dir)
        except BuildOutputError as exc:
            raise RuntimeFailure(f"{self.name}: wrapper build {exc}") from None

    def spawn(self, request: BuildRequest, env: Mapping[str, str], *, attach: bool = False,
              confined: Confined = UNCONFINED) -> AgentProcess:
        """Build, then start the agent in a session of its own (both inside `confined`); `attach` leaves its
        stdin and stdout on the terminal."""
        spec = self.build(request, env, confined)
        return start_process(spec, env, request.workspace, attach=attach, confined=confined)


def start_process(spec: LaunchSpec, env: Mapping[str, str], workspace: Path, *, attach: bool = False,
                  confined: Confined = UNCONFINED) -> AgentProcess:
    """Start `spec.cmd` with `env` and, over it, the variables the wrapper's `build` asked for."""
    workspace.mkdir(parents=True, exist_ok=True)
    # the program the wrapper named must show inside the walls wherever it lives (a venv under /tmp)
    confined = confined.seeing(exposed(spec.cmd[:1], {**env, **spec.env}.get("PATH")))
    log_path = workspace / LOG_FILE
    with open_regular(log_path, "a") as log_fh:  # the workspace is the agent's: never write through its links
        out = None if attach else log_fh
        try:
            proc = subprocess.Popen(
                confined.command(spec.cmd, spec.cwd), cwd=spec.cwd, env={**env, **spec.env}, stdout=out, stderr=out,
                # a session of its own even on the user's terminal (`attach`): with no controlling terminal, it
                # cannot push keystrokes (ioctl TIOCSTI) that the user's shell would run after strawpot exits
                stdin=None if attach else subprocess.DEVNULL, start_new_session=True,
            )
        except OSError as exc:
            raise RuntimeFailure(f"cannot start {spec.cmd[0]!r}: {exc.strerror or exc}") from None
    with open_regular(workspace / PID_FILE, "w") as pid_fh:
        pid_fh.write(f"{proc.pid}\n".encode())
    return AgentProcess(proc, log_path)


class AgentProcess:
    """A started agent: wait for it, or stop its whole process group."""

    def __init__(self, proc: subprocess.Popen[bytes], log_path: Path) -> None:
        self.proc = proc
        self.pid = proc.pid
        self.pgid = proc.pid  # it leads a session, hence a process group, of its own
        self.log_path = log_path

    def poll(self) -> int | None:
        return self.proc.poll()

    def wait(self, timeout: float | None = None) -> int | None:
        """The exit code, or None if still running after `timeout` seconds. Leftover group members are stopped."""
        if timeout is not None and self.proc.returncode is None and not _exited(self.pid, timeout):
            return None
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        if group_alive(self.pgid):
            kill_group(self.pgid, grace=0.5)
        return code

    def stop(self, grace: float) -> int | None:
        """Stop the agent and everything in its group; the leader's exit code."""
        kill_group(self.pgid, grace=grace, reap=self.proc)
        try:
            return self.proc.wait(timeout=max(grace, 0.1) + 5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def log_tail(self, lines: int = 20) -> str:
        try:
            with open_regular(self.log_path) as fh:
                text = fh.read().decode("utf-8", errors="replace")
        except OSError:  # gone, or replaced by a link to a file the agent must not have strawpot show
            return ""
        return "\n".join(text.rstrip().splitlines()[-lines:])


def _exited(pid: int, timeout: float) -> bool:
    """Block until `pid` exits or `timeout` passes; wakes at once on exit where pidfds exist (Linux ≥ 5.3).

    Popen.wait(timeout) polls with sleeps of up to 50 ms, which would add to every delegation.
    """
    if not hasattr(os, "pidfd_open"):
        return True  # let Popen.wait poll
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        return True  # already reaped, or no pidfd support: Popen.wait decides
    try:
        ready, _, _ = select.select([fd], [], [], max(timeout, 0))
    finally:
        os.close(fd)
    return bool(ready)


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return _live_member(pgid)


def _live_member(pgid: int) -> bool:
    """Whether a member of the group is more than a zombie. A sandbox's pid-namespace init outlives the bwrap
    that started it as a zombie, reparented to whatever reaps orphans here (slowly, on some hosts)."""
    proc = Path("/proc")
    if not proc.is_dir():
        return True
    for entry in os.scandir(proc):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != b"Z":
            return True
    return False


def kill_group(pgid: int, *, grace: float, reap: subprocess.Popen[bytes] | None = None) -> None:
    """SIGTERM the group, wait up to `grace` seconds for it to empty, then SIGKILL what is left."""
    try:
        os.killpg(pgid, signal.SIGTERM if grace > 0 else signal.SIGKILL)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if reap is not None:
            reap.poll()  # reap our own child so its zombie does not keep the group "alive"
        if not group_alive(pgid):
            return
        time.sleep(0.02)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)
    if reap is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            reap.wait(timeout=5)
