"""The supervisor of chat integrations inside `strawpot ui`: start, restart with backoff, fail, stop.

Every half second it reconciles what should run (`ui.integrations`, overruled by `strawpot integrations
start|stop`, orchestrator/integration_state.py) with what runs. An integration runs in its own process group
(orchestrator/integration_launch.py says how), its output appended to `adapter.log` (copied to `adapter.log.1`
and emptied past LOG_MAX). One that exits is started again after 1 s, 2 s, 4 s ... (at most BACKOFF_CAP); after
QUICK_FAILURES exits each within QUICK seconds of its start it is failed, with the tail of its log, until the
next `start`. Stopping (a `stop`, or the UI ending) is SIGTERM to its group, then SIGKILL after GRACE seconds.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from orchestrator.integration_keys import integrations_dir
from orchestrator.integration_launch import NotStartable, log_path, prepare
from orchestrator.integration_state import (
    FAILED,
    RUNNING,
    STOPPED,
    WAITING,
    Status,
    Wish,
    desired,
    read_status,
    wishes,
    write_status,
)
from orchestrator.runtime import kill_group
from strawpot.model.agent_files import open_regular

BACKOFF_START, BACKOFF_CAP = 1.0, 60.0
QUICK, QUICK_FAILURES = 10.0, 4
GRACE = 5.0
LOG_MAX = 1024 * 1024
TAIL_LINES = 15
TICK = 0.5


@dataclass(frozen=True)
class Configured:
    """What the settings say: the integrations `strawpot ui` starts, and each one's `[integrations.<name>.env]`."""

    enabled: tuple[str, ...] = ()
    env: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


@dataclass
class _Proc:
    status: Status
    process: subprocess.Popen[bytes] | None = None
    started: float = 0.0  # monotonic
    quick: int = 0  # exits in a row, each within QUICK seconds of its start
    next_start: float = 0.0  # monotonic: not before
    wish_at: float = -1.0


class Supervisor:
    """Runs the integrations of one UI (its origin gives their API URLs); `reconcile` is one pass."""

    def __init__(self, data: Path, trees: Sequence[Path], origin: str, configured: Callable[[], Configured],
                 say: Callable[[str], None] = lambda line: None, project: Path | None = None) -> None:
        self.data, self.trees, self.origin, self.configured, self.say = data, list(trees), origin, configured, say
        self.project = project  # the UI's project: an integration installed in it is that project's
        self.procs: dict[str, _Proc] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._written: list[Status] | None = None

    def start(self) -> None:
        self.stop_leftovers()
        self._thread = threading.Thread(target=self._loop, name="integrations", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop the loop, then every integration (SIGTERM, SIGKILL after GRACE)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        for name, proc in self.procs.items():
            if proc.process is not None:
                self._stop_one(name, proc)
        self._publish()

    def stop_leftovers(self) -> None:
        """Stop what a UI killed before it could stop its integrations left running (status.json names their pids):
        each one's process group, if that pid is still this data folder's integration (its environment says so),
        so a bot never runs twice."""
        for status in read_status(self.data).values():
            if status.state == RUNNING and status.pid and _is_ours(status.pid, status.name, self.data):
                self.say(f"integration {status.name}: stopping pid {status.pid}, left running by a UI that was killed")
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    kill_group(os.getpgid(status.pid), grace=GRACE)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.reconcile()
            except Exception as exc:  # noqa: BLE001 - the UI keeps serving; the next pass tries again
                self.say(f"integrations: {type(exc).__name__}: {exc}")
            self._stop.wait(TICK)

    def reconcile(self) -> None:
        """Start, restart, fail or stop each integration as its wish and its process say."""
        config = self.configured()
        wanted = desired(config.enabled, wishes(self.data))
        now = time.monotonic()
        for name in sorted(wanted.keys() | self.procs.keys()):
            proc = self.procs.setdefault(name, _Proc(Status(name, STOPPED)))
            wish = wanted.get(name, Wish(False, 0.0))
            if proc.process is not None and proc.process.poll() is not None:
                self._exited(name, proc, now)
            if not wish.on:
                if proc.process is not None:
                    self._stop_one(name, proc)
                proc.status, proc.quick = replace(proc.status, state=STOPPED, pid=None, error=""), 0
                proc.wish_at = wish.at
                continue
            if wish.at != proc.wish_at:  # a new `start` (or the first pass): a failed one gets another go
                proc.wish_at, proc.quick, proc.next_start = wish.at, 0, 0.0
                if proc.status.state == FAILED:
                    proc.status = replace(proc.status, state=STOPPED, error="")
            if proc.process is None and proc.status.state != FAILED and now >= proc.next_start:
                self._launch(name, proc, config.env.get(name, {}))
            elif proc.process is not None:
                _bound_log(log_path(self.data, name))
        self._publish()

    def _launch(self, name: str, proc: _Proc, env: Mapping[str, str]) -> None:
        proc.status = replace(proc.status, tried=time.time())
        try:
            launch = prepare(name, self.trees, self.data, self.origin, env, os.environ, project=self.project)
        except NotStartable as exc:
            proc.status = replace(proc.status, state=FAILED, pid=None, error=str(exc))
            self.say(f"integration {name} not started: {exc}")
            return
        _bound_log(launch.log)
        with open_regular(launch.log, "a") as log:
            log.write(f"[strawpot] starting {' '.join(launch.argv)} in {launch.folder}\n".encode())
            log.flush()
            try:
                proc.process = subprocess.Popen(  # noqa: S603 - the integration the user installed and enabled
                    launch.argv, cwd=launch.folder, env=launch.env, stdin=subprocess.DEVNULL, stdout=log,
                    stderr=subprocess.STDOUT, start_new_session=True)
            except OSError as exc:
                proc.status = replace(proc.status, state=FAILED, pid=None,
                                      error=f"cannot run {launch.argv[0]}: {exc.strerror or exc}")
                return
        restarts = proc.status.restarts + (proc.status.state == WAITING)
        proc.started = time.monotonic()
        proc.status = Status(name, RUNNING, proc.process.pid, time.time(), restarts, "", str(launch.folder),
                             proc.status.tried)

    def _exited(self, name: str, proc: _Proc, now: float) -> None:
        """Its process ended by itself: wait and start it again, or, after QUICK_FAILURES quick exits, fail it."""
        assert proc.process is not None
        code = proc.process.returncode
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.process.pid, signal.SIGKILL)  # what it started and left behind
        proc.process = None
        proc.quick = proc.quick + 1 if now - proc.started < QUICK else 0
        log = log_path(self.data, name)
        if proc.quick >= QUICK_FAILURES:
            error = (f"exited (code {code}) {proc.quick} times in a row within {QUICK:g} s of starting; "
                     f"not restarted until `strawpot integrations start {name}`; last lines of {log}:\n{_tail(log)}")
            proc.status = replace(proc.status, state=FAILED, pid=None, error=error)
            self.say(f"integration {name} failed: exited (code {code}) {proc.quick} times in a row; log: {log}")
            return
        delay = min(BACKOFF_START * 2 ** max(proc.quick - 1, 0), BACKOFF_CAP)
        proc.next_start = now + delay
        proc.status = replace(proc.status, state=WAITING, pid=None, error=f"exited (code {code}); "
                              f"starting again in {delay:g} s")

    def _stop_one(self, name: str, proc: _Proc) -> None:
        assert proc.process is not None
        kill_group(proc.process.pid, grace=GRACE, reap=proc.process)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.process.wait(timeout=5)
        proc.process = None
        proc.status = replace(proc.status, state=STOPPED, pid=None)

    def _publish(self) -> None:
        statuses = [proc.status for _, proc in sorted(self.procs.items())]
        if statuses != self._written:
            write_status(self.data, statuses)
            self._written = statuses


def _is_ours(pid: int, name: str, data: Path) -> bool:
    """Whether process `pid` is integration `name` of this data folder (Linux: /proc; elsewhere never assumed)."""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False
    wanted = {f"STRAWPOT_INTEGRATION_NAME={name}".encode(),
              f"STRAWPOT_DATA_DIR={integrations_dir(data) / name / 'data'}".encode()}
    return wanted <= set(environ)


def _bound_log(log: Path) -> None:
    """Past LOG_MAX, the log is copied to `<log>.1` and emptied (the process appends, so it writes on at 0)."""
    try:
        if log.stat().st_size <= LOG_MAX:
            return
        shutil.copyfile(log, log.with_name(log.name + ".1"))
        os.truncate(log, 0)
    except OSError:
        return


def _tail(log: Path) -> str:
    """The last TAIL_LINES lines of a log, read from its end."""
    try:
        with open(log, "rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - 8192))
            text = fh.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.rstrip().splitlines()[-TAIL_LINES:])
