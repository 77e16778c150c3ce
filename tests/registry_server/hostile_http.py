"""Raw HTTP for hostile requests (what httpx would refuse to send), shared by tests and benchmarks.

Stdlib only: a request is written on a plain socket, exactly as given, and the answer's status line
and body are read back with a timeout.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit


@dataclass
class Answer:
    status: int  # 0 when the server closed the connection without an answer
    body: bytes
    seconds: float
    head: bytes = b""

    def error(self) -> str:
        try:
            return str(json.loads(self.body)["error"])
        except (ValueError, KeyError, TypeError):
            return self.body.decode("utf-8", "replace")


def connect(url: str, timeout: float = 30) -> socket.socket:
    split = urlsplit(url)
    assert split.hostname and split.port
    sock = socket.create_connection((split.hostname, split.port), timeout=timeout)
    return sock


def head(method: str, path: str, headers: dict[str, str]) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: registry", *(f"{k}: {v}" for k, v in headers.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def read_answer(sock: socket.socket, started: float) -> Answer:
    """Read until the server closes or the answer's declared length has arrived."""
    data = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except (ConnectionResetError, BrokenPipeError):
            break
        if not chunk:
            break
        data += chunk
        header_end = data.find(b"\r\n\r\n")
        if header_end >= 0:
            length = next((int(line.split(b":", 1)[1]) for line in data[:header_end].split(b"\r\n")
                           if line.lower().startswith(b"content-length:")), None)
            if length is not None and len(data) >= header_end + 4 + length:
                break
    elapsed = time.monotonic() - started
    if not data.startswith(b"HTTP/1.1 "):
        return Answer(0, data, elapsed)
    status, end = int(data[9:12]), data.find(b"\r\n\r\n")
    return Answer(status, data[end + 4:], elapsed, data[:end])


def send(url: str, request: bytes, body: Iterable[bytes] = (), *, pause: float = 0, timeout: float = 30) -> Answer:
    """Send `request` then each chunk of `body` (`pause` seconds apart), stopping if the server answers."""
    started = time.monotonic()
    with connect(url, timeout) as sock:
        try:
            sock.sendall(request)
            for chunk in body:
                if pause:
                    time.sleep(pause)
                sock.sendall(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and closed while we were still sending: read what it said
        return read_answer(sock, started)


def multipart(boundary: str, fields: dict[str, str], files: dict[str, bytes], *,
              part_headers: str = "") -> bytes:
    out = b""
    for name, value in fields.items():
        out += f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n{part_headers}\r\n{value}\r\n'.encode()
    for path, data in files.items():
        out += (f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="{path}"\r\n'
                f"{part_headers}Content-Type: application/octet-stream\r\n\r\n").encode() + data + b"\r\n"
    return out + f"--{boundary}--\r\n".encode()


def post(url: str, path: str, body: bytes, *, content_type: str, token: str | None = None,
         extra: dict[str, str] | None = None, timeout: float = 30) -> Answer:
    headers = {"Content-Type": content_type, "Content-Length": str(len(body)), **(extra or {})}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return send(url, head("POST", path, headers) + body, timeout=timeout)


def publish_body(slug: str, main: bytes, *, boundary: str = "hostile-boundary", dependencies: str | None = None,
                 version: str = "1.0.0", extra: dict[str, bytes] | None = None,
                 extra_fields: dict[str, str] | None = None) -> tuple[bytes, str]:
    fields = {"slug": slug, "version": version, "changelog": "", **(extra_fields or {})}
    if dependencies is not None:
        fields["dependencies"] = dependencies
    files = {"SKILL.md": main, **{path: data for path, data in (extra or {}).items() if data}}
    return multipart(boundary, fields, files), f"multipart/form-data; boundary={boundary}"


def nested_json(depth: int) -> str:
    return "[" * depth + "]" * depth


def trickle(data: bytes, size: int = 1) -> Iterator[bytes]:
    for i in range(0, len(data), size):
        yield data[i:i + size]
