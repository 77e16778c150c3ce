"""The registry session under HubClient: one pooled httpx client, its thread pool, and one request with
retries, backoff, `Retry-After` and deadlines. HubClient (`_client.py`) speaks the API on top of it."""

from __future__ import annotations

import logging
import threading
import time
import urllib.request
from collections.abc import Callable, Hashable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, as_completed, wait
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TypeVar

import httpx

from valueclass import replace

from ._capabilities import Capabilities
from ._exceptions import HubError, OfflineMiss, _map_error
from ._responses import DeadlineStream, SizeLimits, json_object, read_capped
from ._retry import NEVER, Attempts, RetryPolicy
from ._stdlib import StdlibTransport, tls_context

if TYPE_CHECKING:
    from ._cache import Cache

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)

_log = logging.getLogger("hub_client")  # `strawpot -v` shows its INFO lines on stderr


def printable(text: str, limit: int = 80) -> str:
    """A registry-given text fit for a log line: unprintable characters as `?`, at most `limit` of them."""
    return "".join(c if c.isprintable() else "?" for c in text[:limit])


def _tell(method: str, url: str, started: float, outcome: httpx.Response | Exception) -> None:
    """`-v`'s line for one exchange: method, URL, status (or the error) and the time to the body's end."""
    if _log.isEnabledFor(logging.INFO):
        ms = (time.monotonic() - started) * 1000
        if isinstance(outcome, httpx.Response):
            _log.info("%s %s %d %s %.0f ms", method, url, outcome.status_code, printable(outcome.reason_phrase), ms)
        else:
            _log.info("%s %s failed (%s) %.0f ms", method, url, type(outcome).__name__, ms)


API = "/api/v1"
_BEHIND_TIMEOUT = 30.0  # seconds close() waits for cache writes (local disk)


def _default_user_agent() -> str:
    from importlib import metadata  # only when the caller names no user agent (~10 ms to import)

    try:
        version = metadata.version("strawpot")
    except metadata.PackageNotFoundError:
        version = "dev"
    return f"strawpot/{version} (hub_client) httpx/{httpx.__version__}"


def _proxy_named_for(url: str) -> bool:
    """Whether HTTP_PROXY/HTTPS_PROXY/ALL_PROXY (any case) name a proxy for `url`'s scheme; NO_PROXY is httpx's
    to apply then."""
    proxies = urllib.request.getproxies()
    return url.split(":", 1)[0].lower() in proxies or "all" in proxies


class Session:
    """Connections, threads and retried requests for one registry (see HubClient for the whole contract)."""

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        transport: httpx.BaseTransport | None = None,
        verify: bool | str = True,
        cache: Cache | None = None,
        offline: bool = False,
        timeout: float = 30.0,
        request_deadline: float | None = None,
        deadline: float | None = None,
        max_workers: int = 16,
        retries: int = 3,
        user_agent: str | None = None,
        retry: RetryPolicy | None = None,
        limits: SizeLimits | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        extra_headers: Callable[[], Mapping[str, str]] | None = None,
    ) -> None:
        if max_workers < 1 or retries < 0:
            raise ValueError("max_workers must be >= 1 and retries >= 0")
        # `retries` and `request_deadline` are the common knobs; `retry` (a whole policy) overrides them
        self.retry = retry or RetryPolicy(retries=retries, deadline=request_deadline)
        self.limits = limits or SizeLimits()
        self._sleep, self._clock = sleep, clock
        root = base_url.strip().rstrip("/")
        self.base_url = root.removesuffix(API).rstrip("/")
        self.cache = cache
        self.offline = offline
        self.max_workers = max_workers
        self.timeout = timeout
        self.deadline = deadline
        self._ends_at = None if deadline is None else clock() + deadline
        headers = {"Accept": "application/json", "User-Agent": user_agent or _default_user_agent()}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if transport is None and not _proxy_named_for(self.base_url):
            transport = StdlibTransport(max_idle=max_workers, verify=verify)
        self._http = httpx.Client(
            base_url=self.base_url,
            transport=transport,  # None: httpx's own, and the proxies the environment names (it mounts them
            # only when given no transport; StdlibTransport speaks to the host directly)
            verify=verify if isinstance(verify, bool) else tls_context(verify),
            timeout=timeout,
            headers=headers,
            follow_redirects=False,
            # headers decided per request (a mirror's hop list, registry_server.mirror), in the calling thread
            event_hooks={"request": [lambda request: request.headers.update(extra_headers())]} if extra_headers else None,
            limits=httpx.Limits(max_connections=max_workers, max_keepalive_connections=max_workers),
        )
        self.capabilities = Capabilities()
        # told once, the first time a 429 is waited out (e.g. the install reporter's status line)
        self.on_rate_limit: Callable[[str], None] | None = None
        self._rate_told = False
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        self._worker = threading.local()  # .active is set in the pool's own threads
        self._behind: list[Future[Any]] = []  # cache writes that close() waits for

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Finish the cache writes under way, stop the thread pool (other work not started is cancelled)
        and close the connections."""
        self.settle_writes()
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        self._http.close()

    # -- concurrency: one thread pool per client ----------------------------------------------------

    def _executor(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(
                    max_workers=self.max_workers, thread_name_prefix="hub", initializer=self._enter_worker
                )
            return self._pool

    def _enter_worker(self) -> None:
        self._worker.active = True

    def settle_writes(self) -> None:
        """Wait (bounded) for the cache writes handed to `write_behind` so far."""
        with self._pool_lock:
            behind, self._behind = self._behind, []
        wait(behind, timeout=_BEHIND_TIMEOUT)

    def write_behind(self, work: Callable[..., object], *args: Any) -> None:
        """Run local bookkeeping (a cache write) on the pool while the caller goes on; close() waits for it.
        Its errors are dropped: a cache entry that was not written is a miss next time, nothing more."""
        future = self._executor().submit(work, *args)  # also from a pool thread: nothing in the pool waits for it
        with self._pool_lock:
            self._behind.append(future)

    def submit(self, work: Callable[..., T], *args: Any) -> Future[T]:
        """Run `work(*args)` on the client's thread pool (inline when called from that pool)."""
        if getattr(self._worker, "active", False):  # waiting on our own pool from inside it could deadlock
            future: Future[T] = Future()
            try:
                future.set_result(work(*args))
            except BaseException as exc:  # handed to the caller through the future, like the pool does
                future.set_exception(exc)
            return future
        return self._executor().submit(work, *args)

    def _map(
        self,
        items: Iterable[K],
        work: Callable[[K], T],
        progress: Callable[[K, T | HubError], None] | None = None,
    ) -> dict[K, T | HubError]:
        """Run `work` over the distinct items on a thread pool; HubErrors become values, in input order."""
        keys = list(dict.fromkeys(items))
        done: dict[K, T | HubError] = {}
        if not keys:
            return done
        futures = {self.submit(work, key): key for key in keys}
        try:
            for future in as_completed(futures):
                key = futures[future]
                try:
                    done[key] = future.result()
                except HubError as exc:
                    done[key] = exc
                if progress is not None:
                    progress(key, done[key])
        finally:
            for future in futures:  # an exception (or interrupt) here: do not leave the rest queued
                future.cancel()
        return {key: done[key] for key in keys}

    # -- transport: one request with retries --------------------------------------------------------

    def _call(
        self,
        method: str,
        path: str,
        handler: Callable[[httpx.Response], T],
        *,
        params: Mapping[str, str | int] | None = None,
        json_body: Any = None,
        data: Mapping[str, str] | None = None,
        files: list[tuple[str, tuple[str, bytes, str]]] | None = None,
        headers: Mapping[str, str] | None = None,
        passthrough: frozenset[int] = frozenset(),
        retries: int | None = None,
    ) -> T:
        """Send a request, retrying what the retry policy retries, and hand a successful response to `handler`.

        Statuses >= 400 become HubErrors unless listed in `passthrough`. Transport errors while the
        handler reads the body are retried like connect errors (for GETs).
        """
        if self.offline:
            raise OfflineMiss(f"offline: {method} {path} needs the registry", url=self.base_url + path)
        policy = self.retry if retries is None else replace(self.retry, retries=retries)
        idempotent = method in ("GET", "HEAD")
        tries = Attempts(policy, self._clock, self.base_url + path, self._ends_at,
                         0.0 if self.deadline is None else self.deadline)
        while True:
            left = tries.left()
            request = self._http.build_request(
                method, path, params=params, json=json_body, data=data, files=files, headers=headers,
                timeout=min(self.timeout, left),
                # the transport's deadline is a time.monotonic() instant, whatever clock the client runs on
                extensions={"deadline": time.monotonic() + left} if tries.end != NEVER else None,
            )
            url = str(request.url)
            started = self._clock()
            try:
                response = self._http.send(request, stream=True)
                if tries.end != NEVER and isinstance(response.stream, httpx.SyncByteStream):
                    response.stream = DeadlineStream(response.stream, tries.end, self._clock)
                try:
                    wait = tries.after_answer(response, idempotent)
                    if wait is None:
                        if response.status_code >= 400 and response.status_code not in passthrough:
                            read_capped(response, self.limits.json)
                            raise _map_error(response, url)
                        return handler(response)
                finally:
                    response.close()
                    _tell(method, url, started, response)
            except httpx.TransportError as exc:
                _tell(method, url, started, exc)
                delay = tries.after_error(exc, idempotent, url)
                if delay is None:
                    raise _map_error(exc, url) from exc
                wait = (delay, False)
            delay = tries.spend(*wait)
            if wait[1]:  # a 429 waited out apart from the retries: a busy registry is not a broken one
                self._tell_rate_limited(delay, policy)
            self._sleep(delay)

    def _tell_rate_limited(self, delay: float, policy: RetryPolicy) -> None:
        with self._pool_lock:
            told, self._rate_told = self._rate_told, True
        if not told and self.on_rate_limit is not None:
            self.on_rate_limit(
                f"{self.base_url} is rate limiting this client; waiting as it asks (Retry-After {delay:.0f} s, "
                f"at most {policy.max_rate_wait:g} s a request)"
            )

    def _get_json(self, path: str, params: Mapping[str, str | int] | None = None) -> dict[str, Any]:
        return self._call("GET", path, self._json, params=params)

    def _json(self, response: httpx.Response) -> dict[str, Any]:
        """The answer as a JSON object within this client's limit (a `_call` handler)."""
        return json_object(response, self.limits.json)
