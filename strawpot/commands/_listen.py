"""The socket a server command (`registry serve`, `ui`) listens on, or one line saying why it cannot."""

from __future__ import annotations

import socket

from strawpot.model.errors import StrawpotError, UsageError


def bound_socket(host: str, port: int) -> socket.socket:
    """A socket bound to `host:port` (not yet listening); an unknown host is a usage error, a port in use or
    refused one line with what to do."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise UsageError(f"--host {host!r}: {exc.strerror}") from None
    family, kind, proto, _name, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise StrawpotError(
            f"cannot listen on {host}:{port}: {exc.strerror}",
            hint="pick another --port (0 picks a free one), or stop what is using it",
        ) from None
    return sock
