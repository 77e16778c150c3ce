"""The Denden gRPC servicer: validates each request, hands it to a Backend, maps the Outcome to the wire.

Reachable by the user alone: on a Unix socket (0600, in a 0700 folder), or over loopback TCP where every
call must carry `authorization: Bearer <the run's token>` metadata, else it ends with UNAUTHENTICATED.
"""

from __future__ import annotations

import contextlib
import hmac
import logging
import os
import secrets
import time
from collections.abc import Callable
from concurrent import futures
from typing import Any, Protocol

import grpc
from google.protobuf import struct_pb2

from orchestrator._proto import denden_pb2 as pb
from orchestrator._proto import denden_pb2_grpc as pb_grpc
from orchestrator.endpoint import Listen, Loopback, UnixSocket
from orchestrator.outcome import ERR_INTERNAL, INVALID_REQUEST, Caller, Outcome

log = logging.getLogger(__name__)

DENDEN_VERSION = "1.0"
# Each delegation holds a server thread while its agent runs, and that agent may delegate in turn:
# the pool must outgrow any tree policy allows, so a nested or repeated delegation never starves.
DEFAULT_MAX_WORKERS = 256


class Backend(Protocol):
    """What the servicer needs from a run; every method returns an Outcome, never raises on purpose."""

    @property
    def run_id(self) -> str: ...

    def delegate(self, caller: Caller, role: str, task: str, extra: dict[str, Any], want_json: bool) -> Outcome: ...
    def cancel(self, caller: Caller, agent_id: str, force: bool) -> Outcome: ...
    def ask_user(
        self, caller: Caller, question: str, choices: list[str], default: str, why: str, want_json: bool
    ) -> Outcome: ...
    def remember(self, caller: Caller, content: str, keywords: list[str], scope: str) -> Outcome: ...
    def recall(self, caller: Caller, query: str, keywords: list[str], scope: str, max_results: int) -> Outcome: ...
    def active_agents(self) -> int: ...


def _validate(request: pb.DenDenRequest, run_id: str) -> str | None:
    """Why the envelope is malformed, or None."""
    if not request.request_id:
        return "request_id is required"
    if not request.HasField("trace") or not request.trace.run_id or not request.trace.agent_instance_id:
        return "trace with run_id and agent_instance_id is required"
    if request.trace.run_id != run_id:
        return "trace.run_id is not the run this server serves; send the DENDEN_RUN_ID your agent was given"
    if request.WhichOneof("payload") is None:
        return "exactly one payload is required: ask_user, delegate, remember, recall or cancel"
    return None


class DendenServicer(pb_grpc.DendenServicer):  # type: ignore[misc]  # generated base is untyped
    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.started = time.monotonic()

    def Send(self, request: pb.DenDenRequest, context: grpc.ServicerContext) -> pb.DenDenResponse:
        problem = _validate(request, self.backend.run_id)
        if problem:
            return _response(request.request_id, Outcome.error(INVALID_REQUEST, problem))
        caller = Caller(request.trace.run_id, request.trace.agent_instance_id, request.trace.parent_agent_instance_id)
        kind = request.WhichOneof("payload")
        try:
            outcome = self._dispatch(kind, caller, request)
        except Exception as exc:  # a bug must still answer the agent, not hang it
            log.exception("denden %s request %s failed", kind, request.request_id)
            outcome = Outcome.error(ERR_INTERNAL, f"orchestrator error while handling {kind}: {exc}")
        return _response(request.request_id, outcome, kind)

    def _dispatch(self, kind: str | None, caller: Caller, request: pb.DenDenRequest) -> Outcome:
        b = self.backend
        if kind == "delegate":
            d = request.delegate
            if not d.delegate_to:
                return Outcome.error(INVALID_REQUEST, "delegate.delegate_to (a role slug) is required")
            extra = _as_dict(d.task.extra) if d.task.HasField("extra") else {}
            return b.delegate(caller, d.delegate_to, d.task.text, extra, d.task.return_format == pb.JSON)
        if kind == "cancel":
            if not request.cancel.agent_id:
                return Outcome.error(INVALID_REQUEST, "cancel.agent_id is required")
            return b.cancel(caller, request.cancel.agent_id, request.cancel.force)
        if kind == "ask_user":
            a = request.ask_user
            if not a.question:
                return Outcome.error(INVALID_REQUEST, "ask_user.question is required")
            return b.ask_user(caller, a.question, list(a.choices), a.default_value, a.why, a.response_format == pb.JSON)
        if kind == "remember":
            r = request.remember
            if not r.content:
                return Outcome.error(INVALID_REQUEST, "remember.content is required")
            return b.remember(caller, r.content, list(r.keywords), r.scope)
        q = request.recall
        return b.recall(caller, q.query, list(q.keywords), q.scope, q.max_results)

    def Status(self, request: pb.StatusRequest, context: grpc.ServicerContext) -> pb.StatusResponse:
        return pb.StatusResponse(
            uptime_seconds=int(time.monotonic() - self.started), active_agents=self.backend.active_agents()
        )


def _as_dict(message: struct_pb2.Struct) -> dict[str, Any]:
    from google.protobuf import json_format  # only a delegation with extra fields needs it (not every start)

    found: dict[str, Any] = json_format.MessageToDict(message)
    return found


def _struct(value: dict[str, Any]) -> struct_pb2.Struct:
    message = struct_pb2.Struct()
    message.update(value)
    return message


def _result(kind: str, value: Any) -> dict[str, Any]:
    if kind in ("delegate", "ask_user"):
        content = pb.DelegateResult if kind == "delegate" else pb.AskUserResult
        inner = content(json=_struct(value)) if isinstance(value, dict) else content(text=str(value or ""))
        return {f"{kind}_result": inner}
    if kind == "remember":
        return {"remember_result": pb.RememberResult(status="stored", entry_id=value)}
    if kind == "recall":
        entries = [pb.RecallEntry(entry_id=e.entry_id, content=e.content, keywords=list(e.keywords),
                                  scope=e.scope, score=e.score) for e in value]
        return {"recall_result": pb.RecallResult(entries=entries)}
    return {"cancel_result": pb.CancelResult(cancelled_agents=list(value))}


def _response(request_id: str, outcome: Outcome, kind: str | None = None) -> pb.DenDenResponse:
    if outcome.status == "ok" and kind is not None:
        return pb.DenDenResponse(denden_version=DENDEN_VERSION, request_id=request_id, status=pb.OK,
                                 **_result(kind, outcome.value))
    status = pb.DENIED if outcome.status == "denied" else pb.ERROR
    error = pb.ErrorDetail(code=outcome.code, message=outcome.message, retryable=outcome.retryable)
    return pb.DenDenResponse(denden_version=DENDEN_VERSION, request_id=request_id, status=status, error=error)


TOKEN_METADATA = "authorization"
TOKEN_SCHEME = "Bearer "


class TokenCheck(grpc.ServerInterceptor):  # type: ignore[misc]  # grpc's base is untyped
    """Let a call through only with the run's token; compared in constant time."""

    def __init__(self, token: str) -> None:
        self._expected = (TOKEN_SCHEME + token).encode()
        self._refuse = grpc.unary_unary_rpc_method_handler(_unauthenticated)

    def intercept_service(self, continuation: Callable[[Any], Any], details: Any) -> Any:
        for key, value in details.invocation_metadata or ():
            if key == TOKEN_METADATA:
                given = value if isinstance(value, bytes) else str(value).encode()
                if hmac.compare_digest(given, self._expected):
                    return continuation(details)
        return self._refuse


def _unauthenticated(request: Any, context: grpc.ServicerContext) -> None:
    context.abort(grpc.StatusCode.UNAUTHENTICATED,
                  f"this Denden server needs the run's token: send metadata '{TOKEN_METADATA}: "
                  f"{TOKEN_SCHEME}$DENDEN_TOKEN'")


class DendenServer:
    """A running gRPC server on a private Unix socket, or on loopback TCP guarded by a per-run token."""

    def __init__(self, backend: Backend, listen: Listen | None = None,
                 max_workers: int = DEFAULT_MAX_WORKERS) -> None:
        self.listen = listen if listen is not None else Loopback()
        # a fresh secret for every TCP server; a Unix socket is guarded by its folder's permissions instead
        self.token = secrets.token_urlsafe(32) if isinstance(self.listen, Loopback) else None
        interceptors = [TokenCheck(self.token)] if self.token else []
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="denden"),
                                   interceptors=interceptors)
        pb_grpc.add_DendenServicer_to_server(DendenServicer(backend), self._server)
        if isinstance(self.listen, UnixSocket):
            self.address = self._bind_unix(self.listen)
        else:
            host, port = self.listen.host, self.listen.port
            bound = self._server.add_insecure_port(f"{host}:{port}")
            if not bound:
                raise OSError(f"could not bind the Denden server to {host}:{port}")
            self.address = f"{host}:{bound}"
        self._server.start()

    def _bind_unix(self, sock: UnixSocket) -> str:
        try:
            bound = self._server.add_insecure_port(sock.target)
        except RuntimeError:
            bound = 0
        if not bound:
            sock.remove()
            raise OSError(f"could not listen for Denden on the socket {sock.path}")
        os.chmod(sock.path, 0o600)  # the folder already keeps others out; the socket says so too
        return sock.target

    def stop(self, grace: float | None = 1.0) -> None:
        self._server.stop(grace).wait()
        if isinstance(self.listen, UnixSocket):
            with contextlib.suppress(OSError):
                self.listen.remove()
