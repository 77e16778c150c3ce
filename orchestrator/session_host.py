"""A Ray node's pooled home for remote sessions: one long-lived actor per node runs each session in a thread."""

from __future__ import annotations

import hashlib
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any

from orchestrator import remote_session, spare_start
from orchestrator.ray_import import ray
from orchestrator.remote_session import ORPHANED, WORKER_OWN, Job, RemoteSession, Result
from orchestrator.spare_start import Spares

NAMESPACE = "strawpot"
THREADS_PER_CPU = 3  # a running session holds a thread; its `progress` and `stop` calls need free ones


class SessionHost:
    """Runs sessions on its node (`run`, one thread each), `stop`s one and reports its `progress` by run id. A stop
    that comes before its run is kept, so the run does not start."""

    def __init__(self) -> None:
        self.node = ray().get_runtime_context().get_node_id()
        self._sessions: dict[str, RemoteSession] = {}
        self._early: dict[str, float] = {}  # stops that came before their run, and when
        self._lock = threading.Lock()
        self._spares = Spares({k: os.environ[k] for k in WORKER_OWN if k in os.environ})

    def where(self) -> tuple[str, str]:
        return self.node, socket.gethostname()

    def run(self, job: Job) -> Result:
        session = self._session(job.run_id)
        try:
            return session.run(job)
        finally:
            with self._lock:
                self._sessions.pop(job.run_id, None)

    def stop(self, run_id: str) -> bool:
        with self._lock:
            session = self._sessions.get(run_id)
            if session is None:  # its run has not come yet (or has ended): kept ORPHANED seconds for it
                now = time.monotonic()
                self._early = {rid: at for rid, at in self._early.items() if now - at < ORPHANED}
                self._early[run_id] = now
                return False
        return session.stop()

    def progress(self, run_id: str, offset: int) -> tuple[bytes, bytes]:
        with self._lock:
            session = self._sessions.get(run_id)
        return session.progress(offset) if session is not None else (b"", b"")

    def _session(self, run_id: str) -> RemoteSession:
        with self._lock:
            session = self._sessions[run_id] = RemoteSession(self.node, self._spares.launch)
            if self._early.pop(run_id, None) is not None:
                session.stop()  # a stop came first: the run does not start
            return session


def host_on(node: str, cpus: float) -> Any:
    """The session host of `node`, started there when it has none yet (a new worker process, 1-2 s; the sessions
    after it start at once). Named for this code's version, so an upgraded client never talks to an older host."""
    return ray().remote(SessionHost).options(
        name=f"session-host-{node}-{_code_version()}", namespace=NAMESPACE, lifetime="detached",
        get_if_exists=True, num_cpus=0, max_restarts=0, max_concurrency=max(8, int(cpus) * THREADS_PER_CPU + 4),
        scheduling_strategy=ray().util.scheduling_strategies.NodeAffinitySchedulingStrategy(node, soft=False),
    ).remote()


def _code_version() -> str:
    """A digest of the host's code and the session code it runs (their bytes: a version number misses local edits)."""
    digest = hashlib.sha256()
    for path in (Path(__file__), Path(remote_session.__file__), Path(spare_start.__file__)):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]
