"""The exception tree of hub_client, and the one place that maps httpx outcomes onto it.

    HubError                      every failure the client reports; has .url (None if no request)
    ├── RegistryUnreachable       connect error or timeout, after the retries ran out
    │   └── DeadlineExceeded      no complete answer before the request's or the client's deadline
    ├── NotFound                  404: unknown package, version or file
    ├── AuthError                 401 or 403 (.status)
    ├── RateLimited               429 after the retries ran out (.retry_after, seconds)
    ├── ServerError               any other 4xx/5xx (.status, .message: the server's "error" text verbatim)
    ├── ProtocolError             a body that is not what the API promises
    ├── IntegrityError            bytes that do not match a promised sha256/size
    └── OfflineMiss               offline, and the answer is not in the cache

Status errors (NotFound, AuthError, RateLimited, ServerError) keep the server's message in .message.
"""

from __future__ import annotations

import httpx

from ._models import parse_json

__all__ = [
    "AuthError",
    "DeadlineExceeded",
    "HubError",
    "IntegrityError",
    "NotFound",
    "OfflineMiss",
    "ProtocolError",
    "RateLimited",
    "RegistryUnreachable",
    "ServerError",
]


class HubError(Exception):
    """Base of every error hub_client raises; `url` is the request that failed, when there was one."""

    def __init__(self, message: str, *, url: str | None = None) -> None:
        super().__init__(message)
        self.url = url


class RegistryUnreachable(HubError):
    """The registry could not be reached (connect error or timeout) after all retries."""


class DeadlineExceeded(RegistryUnreachable):
    """A request did not get its whole answer in time: `scope` is "request" (one request, retries
    included) or "client" (everything this client does, e.g. one install); `seconds` is that budget."""

    def __init__(self, scope: str, seconds: float, *, url: str | None = None) -> None:
        budget = "the request deadline" if scope == "request" else "the deadline for all registry requests"
        super().__init__(f"no complete answer from {url} within {seconds:g} s ({budget})", url=url)
        self.scope = scope
        self.seconds = seconds


class NotFound(HubError):
    """The server answered 404."""

    def __init__(self, message: str, *, url: str | None = None) -> None:
        super().__init__(message, url=url)
        self.status = 404
        self.message = message


class AuthError(HubError):
    """The server answered 401 (no or bad token) or 403 (not allowed)."""

    def __init__(self, status: int, message: str, *, url: str | None = None) -> None:
        super().__init__(message, url=url)
        self.status = status
        self.message = message


class RateLimited(HubError):
    """The server answered 429 and kept doing so within the retry budget."""

    def __init__(self, retry_after: int, message: str = "rate limited", *, url: str | None = None) -> None:
        super().__init__(f"{message} (retry after {retry_after} s)", url=url)
        self.status = 429
        self.retry_after = retry_after
        self.message = message


class ServerError(HubError):
    """Any other error status; `message` is the server's `{"error"}` text exactly as it was sent."""

    def __init__(self, status: int, message: str, *, url: str | None = None) -> None:
        super().__init__(f"{status}: {message}", url=url)
        self.status = status
        self.message = message


class ProtocolError(HubError):
    """The server's answer does not have the shape the API promises."""


class IntegrityError(HubError):
    """Bytes that do not match the sha256 (or size) they were promised to have; nothing was stored."""

    def __init__(
        self,
        what: str,
        expected_sha256: str,
        actual_sha256: str | None,
        *,
        expected_size: int | None = None,
        actual_size: int | None = None,
        url: str | None = None,
    ) -> None:
        if expected_size is not None and actual_size is not None and expected_size != actual_size:
            detail = f"size mismatch: expected {expected_size} bytes, got {actual_size}"
        else:
            detail = f"sha256 mismatch: expected {expected_sha256}, got {actual_sha256}"
        super().__init__(f"{what}: {detail}", url=url)
        self.what = what
        self.expected_sha256 = expected_sha256
        self.actual_sha256 = actual_sha256
        self.expected_size = expected_size
        self.actual_size = actual_size


class OfflineMiss(HubError):
    """Offline mode, and what was asked for is not in the cache."""


_MESSAGE_LIMIT = 500


def _server_message(response: httpx.Response) -> str:
    """The server's `{"error": ...}` text verbatim, else a trimmed body, else the reason phrase."""
    try:
        body = parse_json(response.content)
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        return str(body["error"])
    text = response.text.strip()
    if text:
        return text[:_MESSAGE_LIMIT]
    return response.reason_phrase or f"HTTP {response.status_code}"


def _retry_after(response: httpx.Response) -> int:
    """The integer `Retry-After` of a response, 0 when absent or not an integer."""
    try:
        return max(0, int(response.headers.get("Retry-After", "0").strip()))
    except ValueError:
        return 0


def _map_error(source: httpx.Response | httpx.TransportError, url: str) -> HubError:
    """Map an error response (already read) or an httpx transport error onto the tree above."""
    if isinstance(source, httpx.TransportError):
        reason = (
            "timed out"
            if isinstance(source, httpx.TimeoutException)
            else str(source) or type(source).__name__
        )
        return RegistryUnreachable(f"could not reach the registry at {url}: {reason}", url=url)
    status = source.status_code
    message = _server_message(source)
    if status == 404:
        return NotFound(message, url=url)
    if status in (401, 403):
        return AuthError(status, message, url=url)
    if status == 429:
        return RateLimited(_retry_after(source), message, url=url)
    return ServerError(status, message, url=url)
