"""The `ray` runner: each session runs on a Ray cluster's worker, in an actor of its own (imported only when used)."""

from __future__ import annotations

import importlib
import logging
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from orchestrator.endpoint import listen_for
from orchestrator.interrupts import sigterm_as_interrupt
from orchestrator.launch import Ended
from orchestrator.remote_control import RemoteControl
from orchestrator.remote_job import fail, job_for, land
from orchestrator.remote_session import STOP_GRACE, Job, RemoteSession, Result
from orchestrator.run_request import RunRequest
from orchestrator.run_token import drop_token, save_token
from orchestrator.server import DendenServer
from orchestrator.session import Session, State
from orchestrator.worktree import WorktreeIsolator
from strawpot.model.errors import MissingToolError, StrawpotError
from strawpot.model.settings import Settings

ray: Any = importlib.import_module("ray")  # Any: Ray's decorators and handles are beyond mypy
POLL = 0.2
SESSION_CPUS = 1  # a session holds one CPU slot of its node: the cluster's size bounds how many run at once
PIN = 0.001  # of a custom resource named in [runner.ray] resources: pins the session without using the resource up


@dataclass(frozen=True)
class Room:
    """What a cluster has for sessions now: its live nodes, CPUs (in all and free), and for each custom resource the
    runner asks for, how many nodes have it and how much of it is free (summed over the cluster)."""

    nodes: int
    cpus: float
    free_cpus: float
    resources: dict[str, tuple[int, float]]


class SessionActor:
    """A session's home on its worker: `where` it is, `run` it, `stop` it from another call (max_concurrency 2)."""

    def __init__(self) -> None:
        self.session = RemoteSession(ray.get_runtime_context().get_node_id())

    def where(self) -> tuple[str, str]:
        return self.session.node, socket.gethostname()

    def run(self, job: Job) -> Result:
        return self.session.run(job)

    def stop(self) -> bool:
        return self.session.stop()


class RayRunner:
    """Connects to `[runner.ray] address` (exit 7 when it does not answer, before anything starts), ships the run."""

    name = "ray"

    def __init__(self, settings: Settings) -> None:
        self.address = str(settings.get("runner.ray.address"))
        self.timeout = float(settings.get("runner.ray.connect_timeout"))
        self.resources = {name: PIN for name in settings.get("runner.ray.resources")}

    def connect(self) -> None:
        """Join the cluster as a driver; one line and exit 7 when it cannot be reached within the connect timeout."""
        if ray.is_initialized():
            return
        unreachable = MissingToolError(
            f"the Ray cluster at {self.address} does not answer within {self.timeout:g} s; nothing was started "
            "(is it running? check [runner.ray] address, docs/deploy.md)")
        if self.address != "auto" and not answers(self.address, self.timeout):
            raise unreachable
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        try:
            ray.init(address=self.address, logging_level=logging.ERROR, log_to_driver=False)
        except Exception as exc:  # Ray raises ConnectionError, RuntimeError, ValueError, TimeoutError…
            raise MissingToolError(f"cannot join the Ray cluster at {self.address}: "
                                   f"{str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}"
                                   "; nothing was started (check [runner.ray] address, docs/deploy.md)") from None

    def room(self) -> Room:
        """Join the cluster as `run` does (exit 7 when it does not answer), then what it has free now."""
        self.connect()
        alive = [node for node in ray.nodes() if node.get("Alive")]
        free = ray.available_resources()
        return Room(len(alive), sum(float(n["Resources"].get("CPU", 0)) for n in alive), float(free.get("CPU", 0)),
                    {name: (sum(name in n["Resources"] for n in alive), float(free.get(name, 0)))
                     for name in self.resources})

    def actor(self) -> Any:
        remote = ray.remote(max_concurrency=2)(SessionActor)
        return remote.options(num_cpus=SESSION_CPUS, resources=self.resources or None, max_restarts=0).remote()

    def run(self, request: RunRequest, started: Callable[[str], None]) -> Ended:
        """The session on a worker, its patch merged back here as a local worktree session's would be."""
        self.connect()
        settings, base = request.settings, request.prepared.project.dir
        isolator = WorktreeIsolator(settings.get("session.merge"), settings.get("session.remote"),
                                    settings.get("session.max_file_size"), settings.get("session.git_timeout"))
        isolator.check(base)
        actor = self.actor()  # its worker process starts while the run's worktree and what travels are made here
        try:
            return self._run(actor, request, isolator, started)
        finally:
            ray.kill(actor, no_restart=True)

    def _run(self, actor: Any, request: RunRequest, isolator: WorktreeIsolator,
             started: Callable[[str], None]) -> Ended:
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
        try:
            job = job_for(prepared, env, request.settings, run_id=session.run_id, task=request.task,
                          params=request.params, cli_agent=request.cli_agent, env_policy=request.env_policy,
                          environ=os.environ)
            server = DendenServer(RemoteControl(session.run_id, lambda: actor.stop.remote()),
                                  listen_for(prepared.transport, session.directory))
        except BaseException:
            fail(session, env, isolator, base)
            raise
        session.denden_addr = server.address  # `strawpot cancel RUN_ID` reaches it there
        if server.token:
            save_token(session.run_id, server.token)
        try:
            result, interrupted = self._execute(actor, job, session, started)
        except StrawpotError:
            fail(session, env, isolator, base)
            raise
        finally:
            server.stop()
            drop_token(session.run_id)
        return land(session, env, isolator, base, result, interrupted=interrupted, observer=request.observer,
                    warn=request.warn)

    def _execute(self, actor: Any, job: Job, session: Session, started: Callable[[str], None]) -> tuple[Result, bool]:
        """Run `job` in `actor` to its end; Ctrl-C or SIGTERM stops it there (its record still comes back)."""
        node, host, ref = "?", "?", None
        try:
            with sigterm_as_interrupt():
                try:
                    node, host = ray.get(actor.where.remote())
                    session.runner = {**session.runner, "node": node, "host": host}
                    session.save()
                    started(f"on Ray node {node} ({host})")
                    ref = actor.run.remote(job)
                    return wait(ref), False
                except KeyboardInterrupt:
                    if ref is None:
                        raise StrawpotError(f"run {session.run_id} was interrupted before it started") from None
                    ray.get(actor.stop.remote(), timeout=STOP_GRACE + 10)
                    return ray.get(ref, timeout=STOP_GRACE + 10), True
        except (ray.exceptions.RayActorError, ray.exceptions.NodeDiedError, ray.exceptions.GetTimeoutError,
                ray.exceptions.ObjectLostError) as exc:
            session.event("runner_lost", node=node, host=host, error=f"{type(exc).__name__}: {exc}"[:2000])
            raise StrawpotError(f"run {session.run_id} failed: Ray node {node} ({host}) running it was lost; "
                                "your working tree was not touched") from None


def wait(ref: Any) -> Result:
    """The result of `ref`, waiting in short steps so that Ctrl-C and SIGTERM are seen at once."""
    while True:
        done, _ = ray.wait([ref], timeout=POLL)
        if done:
            result: Result = ray.get(ref)
            return result
        time.sleep(0)


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
