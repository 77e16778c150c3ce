"""The `ray` runner: each session runs on a Ray cluster's worker node, in that node's pooled session host."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

from orchestrator.endpoint import listen_for
from orchestrator.interrupts import sigterm_as_interrupt
from orchestrator.launch import Ended
from orchestrator.ray_import import ray
from orchestrator.remote_control import RemoteControl
from orchestrator.remote_job import fail, job_for, land
from orchestrator.remote_session import STOP_GRACE, Job, Result
from orchestrator.run_record import RunRecord
from orchestrator.run_request import RunRequest
from orchestrator.run_token import drop_token, save_token
from orchestrator.server import DendenServer
from orchestrator.session import TRACE_FILE, Session, State
from orchestrator.session_host import host_on
from orchestrator.worktree import WorktreeIsolator
from strawpot.model.agent_files import open_regular
from strawpot.model.errors import MissingToolError, StrawpotError
from strawpot.model.settings import Settings

POLL = 0.2
PROGRESS_EVERY = 1.0  # seconds between two `progress` calls: the run's events show here, and the host sees we are here
SESSION_CPUS = 1  # a session holds one CPU slot of its node: the cluster's size bounds how many run at once
PIN = 0.001  # of a custom resource named in [runner.ray] resources: pins the session without using the resource up
HIDDEN = frozenset({"run_started", "run_finished"})  # the remote run's own start and end: this side writes its own


@dataclass(frozen=True)
class Room:
    """What a cluster has for sessions now: its live nodes, CPUs (in all and free), and for each custom resource the
    runner asks for, how many nodes have it and how much of it is free (summed over the cluster)."""

    nodes: int
    cpus: float
    free_cpus: float
    resources: dict[str, tuple[int, float]]


class Remote:
    """The run's place on the cluster once it has one (its node's host), and a stop asked for before that."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.host: Any = None
        self._stop_asked = threading.Event()

    @property
    def stop_asked(self) -> bool:
        return self._stop_asked.is_set()

    def stop(self) -> None:
        self._stop_asked.set()
        if self.host is not None:
            self.host.stop.remote(self.run_id)

    def placed(self, host: Any) -> None:
        """The run's host is known: a stop asked before reaches it first (the run then does not start)."""
        self.host = host
        if self._stop_asked.is_set():
            ray().get(host.stop.remote(self.run_id))


class RayRunner:
    """Connects to `[runner.ray] address` (exit 7 when it does not answer, before anything starts), ships the run."""

    name = "ray"

    def __init__(self, settings: Settings) -> None:
        self.address = str(settings.get("runner.ray.address"))
        self.timeout = float(settings.get("runner.ray.connect_timeout"))
        self.resources = {name: PIN for name in settings.get("runner.ray.resources")}

    def connect(self) -> None:
        """Join the cluster as a driver; one line and exit 7 when it cannot be reached within the connect timeout."""
        self.reachable()
        self.join()

    def reachable(self) -> None:
        """Exit 7 when the cluster does not answer within the connect timeout (asked without Ray, which may still be
        importing)."""
        if self.address != "auto" and not answers(self.address, self.timeout):
            raise MissingToolError(f"the Ray cluster at {self.address} does not answer within {self.timeout:g} s; "
                                   "nothing was started (is it running? check [runner.ray] address, docs/deploy.md)")

    def join(self) -> None:
        """Join the cluster as a driver (once Ray is imported); exit 7 when Ray does not import or cannot join."""
        try:
            engine = ray()
        except ImportError as exc:
            raise MissingToolError(f"--runner ray needs Ray, which does not import here ({exc}): "
                                   "pip install 'strawpot[ray]'") from None
        if engine.is_initialized():
            return
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        try:
            engine.init(address=self.address, logging_level=logging.ERROR, log_to_driver=False)
        except Exception as exc:  # Ray raises ConnectionError, RuntimeError, ValueError, TimeoutError…
            raise MissingToolError(f"cannot join the Ray cluster at {self.address}: "
                                   f"{str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}"
                                   " (check [runner.ray] address, docs/deploy.md)") from None

    def leave(self) -> threading.Thread:
        """Leave the cluster in the background (about 0.3 s; Ray's own leaving at exit also sleeps 0.5 s for logs this
        driver does not print); join the thread before the process ends."""
        leaving = threading.Thread(target=ray().shutdown, name="strawpot-leave-ray")
        leaving.start()
        return leaving

    def room(self) -> Room:
        """Join the cluster as `run` does (exit 7 when it does not answer), then what it has free now."""
        self.connect()
        alive = [node for node in ray().nodes() if node.get("Alive")]
        free = ray().available_resources()
        return Room(len(alive), sum(float(n["Resources"].get("CPU", 0)) for n in alive), float(free.get("CPU", 0)),
                    {name: (sum(name in n["Resources"] for n in alive), float(free.get(name, 0)))
                     for name in self.resources})

    def run(self, request: RunRequest, started: Callable[[str], None]) -> Ended:
        """The session on a worker, its patch merged back here as a local worktree session's would be."""
        self.reachable()
        settings, base = request.settings, request.prepared.project.dir
        isolator = WorktreeIsolator(settings.get("session.merge"), settings.get("session.remote"),
                                    settings.get("session.max_file_size"), settings.get("session.git_timeout"))
        isolator.check(base)
        return self._run(request, isolator, started)

    def _run(self, request: RunRequest, isolator: WorktreeIsolator, started: Callable[[str], None]) -> Ended:
        """The run's worktree, what travels and its Denden server are made here while Ray imports; then it joins."""
        prepared, base = request.prepared, request.prepared.project.dir
        session = Session.create(prepared.project.sessions_dir, prepared.role, request.task, request.run_id,
                                 observer=request.observer)
        session.inputs, session.runner = prepared.inputs, {"kind": self.name, "address": self.address}
        try:
            env = isolator.create(session.run_id, base)
        except BaseException:
            session.finish(State.FAILED, None)
            raise
        session.isolation_started(env.to_dict())
        remote = Remote(session.run_id)
        try:
            job = job_for(prepared, env, request.settings, run_id=session.run_id, task=request.task,
                          params=request.params, cli_agent=request.cli_agent, env_policy=request.env_policy,
                          environ=os.environ)
            control = RemoteControl(session.run_id, remote.stop)
            server = DendenServer(control, listen_for(prepared.transport, session.directory))
        except BaseException:
            fail(session, env, isolator, base)
            raise
        session.denden_addr = server.address  # `strawpot cancel RUN_ID` reaches it there
        if server.token:
            save_token(session.run_id, server.token)
        progress = Progress(session)
        try:
            with sigterm_as_interrupt():
                try:
                    self.join()
                except KeyboardInterrupt:
                    raise StrawpotError(f"run {session.run_id} was interrupted before it started") from None
            # The session's slot (a CPU and the pinned resources) is a placement group: no worker process starts
            # for it, the node's session host runs the session.
            slot = ray().util.placement_group([{"CPU": SESSION_CPUS, **self.resources}], strategy="STRICT_PACK")
            try:
                result, interrupted = self._execute(slot, remote, job, session, progress, started)
            finally:
                with contextlib.suppress(Exception):  # the cluster may be gone; Ray frees a driver's groups anyway
                    ray().util.remove_placement_group(slot)
        except BaseException:  # our one line, Ctrl-C, anything unforeseen: the run ends failed, its worktree gone
            fail(session, env, isolator, base)
            raise
        finally:
            server.stop()
            drop_token(session.run_id)
        leaving = self.leave()  # while the result lands here
        try:
            return land(session, env, isolator, base, result, interrupted=interrupted, cancelled=control.cancelled,
                        observer=request.observer, warn=request.warn, shown=progress.shown)
        finally:
            leaving.join()

    def _execute(self, slot: Any, remote: Remote, job: Job, session: Session, progress: Progress,
                 started: Callable[[str], None]) -> tuple[Result, bool]:
        """Run `job` on the slot's node to its end; Ctrl-C or SIGTERM stops it there (its record still comes back)."""
        node, host, ref = "?", "?", None
        exceptions = ray().exceptions
        try:
            with sigterm_as_interrupt():
                try:
                    while not slot.wait(1):  # no room on the cluster yet: wait for it (Ray takes whole seconds)
                        if remote.stop_asked:
                            return Result("?", "?", None, cancelled=True), False
                    node = ray().util.placement_group_table(slot)["bundles_to_node_id"][0]
                    remote.placed(host_on(node, self._cpus(node)))
                    node, host = ray().get(remote.host.where.remote())
                    session.runner = {**session.runner, "node": node, "host": host}
                    session.save()
                    started(f"on Ray node {node} ({host})")
                    ref = remote.host.run.remote(job)
                    return wait(ref, lambda: progress.ask(remote)), False
                except KeyboardInterrupt:
                    if ref is None:
                        raise StrawpotError(f"run {session.run_id} was interrupted before it started") from None
                    ray().get(remote.host.stop.remote(session.run_id), timeout=STOP_GRACE + 10)
                    return ray().get(ref, timeout=STOP_GRACE + 10), True
        except exceptions.RayTaskError as exc:  # our code failed on the worker: its own error, one line
            cause = str(exc.cause if exc.cause is not None else exc).strip().splitlines() or ["?"]
            raise StrawpotError(f"run {session.run_id} failed on Ray node {node} ({host}): {cause[-1]}; "
                                "your working tree was not touched") from None
        except exceptions.RayError as exc:  # a dead or unschedulable host, a lost node or object, a timeout
            session.event("runner_lost", node=node, host=host, error=f"{type(exc).__name__}: {exc}"[:2000])
            raise StrawpotError(f"run {session.run_id} failed: Ray node {node} ({host}) running it was lost; "
                                "your working tree was not touched") from None

    @staticmethod
    def _cpus(node: str) -> float:
        return next((float(n["Resources"].get("CPU", 0)) for n in ray().nodes() if n.get("NodeID") == node), 1.0)


class Progress:
    """The remote run's events and agents, brought here as it runs: its trace lines appended to the local trace
    (what the dashboard and `sessions show` read), each event told to the run's observer, its agents recorded."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.shown = 0  # events told to the observer: `land` replays only those after them
        self._offset = 0
        self._record = b""
        self._pending: Any = None
        self._asked = 0.0

    def ask(self, remote: Remote) -> None:
        """Take the answer of the last `progress` call if it came, and ask again every PROGRESS_EVERY seconds."""
        if self._pending is not None:
            done, _ = ray().wait([self._pending], timeout=0)
            if not done:
                return
            with contextlib.suppress(ray().exceptions.RayError):
                self._take(*ray().get(self._pending))
            self._pending = None
        if time.monotonic() - self._asked >= PROGRESS_EVERY:
            self._asked = time.monotonic()
            self._pending = remote.host.progress.remote(remote.run_id, self._offset)

    def _take(self, chunk: bytes, record: bytes) -> None:
        self._offset += len(chunk)
        lines = []
        for line in chunk.decode("utf-8", "replace").splitlines():
            with contextlib.suppress(ValueError, RecursionError):  # the worker's run folder is agent-writable
                event = json.loads(line)
                if isinstance(event, dict) and event.get("event") not in HIDDEN:
                    lines.append(line)
                    if self.session.observer is not None:
                        self.session.observer(str(event.get("event")), event)
                    self.shown += 1
        if lines:
            with contextlib.suppress(OSError), open_regular(self.session.directory / TRACE_FILE, "a") as fh:
                fh.write("".join(f"{line}\n" for line in lines).encode("utf-8"))
        if record and record != self._record:
            self._record = record
            with contextlib.suppress(ValueError, RecursionError):
                remote = RunRecord.from_dict(json.loads(record))
                self.session.agents = {a.agent_id: replace(a, workspace=str(self.session.agent_dir(a.agent_id)))
                                       for a in remote.agents}
                self.session.save()


def wait(ref: Any, meanwhile: Callable[[], None] | None = None) -> Any:
    """The result of `ref`, waiting in short steps so that Ctrl-C and SIGTERM are seen at once."""
    while True:
        done, _ = ray().wait([ref], timeout=POLL)
        if done:
            return ray().get(ref)
        if meanwhile is not None:
            meanwhile()


def answers(address: str, timeout: float) -> bool:
    """Whether Ray answers at `address` within `timeout`: its GCS (host:port), or its Ray Client server (ray://),
    asked a question only Ray answers (a port that merely accepts connections, a proxy or a firewall, does not count)."""
    import grpc  # type: ignore[import-untyped,unused-ignore]

    parts = urlsplit(address if "://" in address else f"tcp://{address}")
    client = parts.scheme == "ray"
    try:
        target = f"{parts.hostname}:{parts.port or (10001 if client else 6379)}"
    except ValueError:
        return False
    method = "/ray.rpc.RayletDriver/ClusterInfo" if client else "/ray.rpc.NodeInfoGcsService/GetClusterId"
    channel = grpc.insecure_channel(target, options=[("grpc.enable_http_proxy", 0)])  # the cluster, not a proxy
    try:
        channel.unary_unary(method)(b"", timeout=timeout)
        return True
    except grpc.RpcError:
        return False
    finally:
        channel.close()
