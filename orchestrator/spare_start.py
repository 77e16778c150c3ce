"""`strawpot start` processes for a session host: started fresh, or taken from a spare that has its modules imported."""

from __future__ import annotations

import contextlib
import ctypes
import json
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

PR_SET_PDEATHSIG = 1  # prctl(2)
SPARE = "strawpot.spare"  # the spare's program (`python -m`): the commands are not the orchestrator's to import


def fresh(args: list[str], cwd: Path, env: Mapping[str, str], err: Path) -> subprocess.Popen[bytes]:
    """`strawpot ARGS` in a new process (its own process group, SIGTERM when the thread that started it ends; `-P`:
    the project folder it runs in never comes first on the module path, so a repository's `orchestrator/` cannot
    stand in for ours)."""
    with err.open("wb") as stderr:
        return subprocess.Popen([sys.executable, "-P", "-m", "strawpot.cli", *args], cwd=cwd, env=dict(env),
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr,
                                start_new_session=True, preexec_fn=end_with_parent)


class Spares:
    """One `strawpot` process kept waiting with the start path imported (strawpot/spare.py); `launch` hands it the next session's command
    line (and starts the next spare), or starts one fresh when the spare is gone or taken.

    A spare started with the worker's environment: the session's variables are set before its command runs, but
    the interpreter's own start-up settings (PYTHON*) of the session do not apply to it (they do to its children).
    """

    def __init__(self, env: Mapping[str, str]) -> None:
        self._env = dict(env)
        self._spare: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._wanted = threading.Event()
        self._closed = False
        # Spares are started from this one thread: a child's PDEATHSIG follows the thread that started it.
        threading.Thread(target=self._keep, name="strawpot-spare-start", daemon=True).start()
        self._wanted.set()

    def launch(self, args: list[str], cwd: Path, env: Mapping[str, str], err: Path) -> subprocess.Popen[bytes]:
        with self._lock:
            spare, self._spare = self._spare, None
        self._wanted.set()
        if spare is not None and spare.poll() is None and spare.stdin is not None:
            order = {"args": args, "cwd": str(cwd), "env": dict(env), "stderr": str(err)}
            try:
                spare.stdin.write(json.dumps(order).encode("utf-8") + b"\n")
                spare.stdin.close()
                return spare
            except OSError:
                spare.kill()
        return fresh(args, cwd, env, err)

    def close(self) -> None:
        """End the spare and start no more (its keeper thread ends: only when no session it started still runs,
        as their PDEATHSIG follows that thread)."""
        with self._lock:
            self._closed, spare, self._spare = True, self._spare, None
        self._wanted.set()
        if spare is not None:
            spare.kill()
            spare.wait()

    def _keep(self) -> None:
        while True:
            self._wanted.wait()
            self._wanted.clear()
            with self._lock:
                if self._closed:
                    return
                if self._spare is None or self._spare.poll() is not None:
                    self._spare = subprocess.Popen(
                        [sys.executable, "-P", "-m", SPARE], env=self._env, stdin=subprocess.PIPE,
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                        preexec_fn=end_with_parent)


def _prctl() -> Any:
    """libc's prctl, looked up here: a forked child of a threaded worker must not load libraries (dlopen may wait
    on a lock another thread held at the fork)."""
    with contextlib.suppress(OSError, AttributeError):
        return ctypes.CDLL(None, use_errno=True).prctl
    return None


PRCTL = _prctl()


def end_with_parent() -> None:
    """In the child, before exec: SIGTERM when the worker that started it dies (its node lost, the actor killed), so
    the session stops its agents instead of running on unowned (Linux; elsewhere the worker's end is not seen)."""
    if PRCTL is not None:
        PRCTL(PR_SET_PDEATHSIG, signal.SIGTERM)
