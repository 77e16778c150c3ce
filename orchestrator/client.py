"""A Denden client for `strawpot cancel`: asks a run's own server to cancel an agent and everything below it.

Going through the run's server (rather than signalling recorded pids) means the run that answers is the run
named (the server refuses another run id), so a recycled pid is never hit, the owner records every state
change, and cancelling the orchestrator ends the run the normal way.
"""

from __future__ import annotations

import uuid

import grpc

from orchestrator._proto import denden_pb2 as pb
from orchestrator._proto import denden_pb2_grpc as pb_grpc
from orchestrator.server import DENDEN_VERSION, TOKEN_METADATA, TOKEN_SCHEME

CANCEL_CALLER = "strawpot-cancel"


class CancelFailed(Exception):
    """The run's server refused or could not be reached; the message says which."""

    def __init__(self, message: str, *, unreachable: bool = False, code: str = "") -> None:
        super().__init__(message)
        self.unreachable = unreachable
        self.code = code


def cancel(address: str, run_id: str, agent_id: str, *, force: bool = False, timeout: float = 30,
           token: str | None = None) -> list[str]:
    """The ids of the agents the run's server stopped; `token` is the run's secret, sent as its server asks.

    Only a Unix socket or a loopback address is dialled: the address comes from a run record, and the
    token is never sent off this machine.
    """
    if not local_address(address):
        raise CancelFailed(f"the run's recorded Denden address {address!r} is not a socket or a loopback address "
                           "on this machine; nothing was sent")
    request = pb.DenDenRequest(
        denden_version=DENDEN_VERSION, request_id=uuid.uuid4().hex,
        trace=pb.Trace(run_id=run_id, agent_instance_id=CANCEL_CALLER),
        cancel=pb.CancelPayload(agent_id=agent_id, force=force),
    )
    with grpc.insecure_channel(address) as channel:
        try:
            metadata = [(TOKEN_METADATA, TOKEN_SCHEME + token)] if token else None
            reply = pb_grpc.DendenStub(channel).Send(request, timeout=timeout, metadata=metadata)
        except grpc.RpcError as exc:
            raise CancelFailed(f"the run's Denden server at {address} did not answer ({exc.code().name})",
                               unreachable=True) from None
    if reply.status != pb.OK:
        raise CancelFailed(reply.error.message, code=reply.error.code)
    return list(reply.cancel_result.cancelled_agents)


def local_address(address: str) -> bool:
    """Whether a Denden address is a `unix:` socket or a loopback TCP `host:port`."""
    if address.startswith("unix:"):
        return True
    host, sep, port = address.rpartition(":")
    return bool(sep) and port.isdigit() and host in ("127.0.0.1", "localhost", "[::1]")
