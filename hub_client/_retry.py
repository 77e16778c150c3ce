"""When a registry request is sent again: the retry policy (a value) and one request's spending of it."""

from __future__ import annotations

import random
from collections.abc import Callable

import httpx

from valueclass import Record

from ._exceptions import DeadlineExceeded, _retry_after

__all__ = ["NEVER", "Attempts", "RetryPolicy"]

NEVER = float("inf")


class RetryPolicy(Record):
    """How one request is retried: how often, how long between tries, how long in all, and on what.

    GETs and HEADs retry on `statuses` and on any transport error; other methods only where the request
    cannot have taken effect (`unsent_statuses`, `unsent_errors`). Backoff is exponential with jitter, in
    [b/2, b] with b = `backoff` * 2**attempt capped at `backoff_cap`. A request sleeps at most `max_wait`
    seconds across its retries; 429s are waited out apart from the retries, up to `max_rate_wait` seconds.
    `deadline` bounds one request from its first try to the last byte of its answer (None: no bound).
    """

    _fields = ("retries", "backoff", "backoff_cap", "max_wait", "max_rate_wait", "deadline", "statuses",
               "unsent_statuses", "unsent_errors")
    retries: int
    backoff: float
    backoff_cap: float
    max_wait: float
    max_rate_wait: float
    deadline: float | None
    statuses: frozenset[int]
    unsent_statuses: frozenset[int]
    unsent_errors: tuple[type[httpx.TransportError], ...]

    def __init__(self, retries: int = 3, backoff: float = 0.25, backoff_cap: float = 8.0, max_wait: float = 30.0,
                 max_rate_wait: float = 120.0, deadline: float | None = None,
                 statuses: frozenset[int] = frozenset({429, 500, 502, 503, 504}),
                 # a POST may have taken effect unless the server said it did not (429, 503) or it was never sent
                 unsent_statuses: frozenset[int] = frozenset({429, 503}),
                 unsent_errors: tuple[type[httpx.TransportError], ...] = (httpx.ConnectError, httpx.ConnectTimeout,
                                                                          httpx.PoolTimeout)) -> None:
        self.__dict__.update(retries=retries, backoff=backoff, backoff_cap=backoff_cap, max_wait=max_wait,
                             max_rate_wait=max_rate_wait, deadline=deadline, statuses=statuses,
                             unsent_statuses=unsent_statuses, unsent_errors=unsent_errors)
        if self.retries < 0:
            raise ValueError("retries must be >= 0")

    def backoff_after(self, attempt: int) -> float:
        """Seconds to wait after failed try number `attempt` (0-based), jittered."""
        ceiling = min(self.backoff_cap, self.backoff * 2.0**attempt)
        return ceiling / 2 + random.uniform(0, ceiling / 2)

    def status_delay(self, response: httpx.Response, attempt: int, idempotent: bool) -> float | None:
        """Seconds to wait before trying this answer's request again, or None if the answer is final."""
        status = response.status_code
        if status not in self.statuses or (not idempotent and status not in self.unsent_statuses):
            return None
        if status == 429:  # at least a moment, jittered so that the client's threads do not return as one
            return max(float(_retry_after(response)), self.backoff) + random.uniform(0, 0.5)
        if "Retry-After" in response.headers:
            return float(_retry_after(response))
        return self.backoff_after(attempt)

    def retries_error(self, exc: httpx.TransportError, idempotent: bool) -> bool:
        """Whether a transport error may be tried again: always for a GET, for others only if never sent."""
        return idempotent or isinstance(exc, self.unsent_errors)


class Attempts:
    """One request's spending of a RetryPolicy: tries made, seconds slept, and the instant it must end by.

    `end` is the earlier of the policy's deadline (from now) and `client_end` (the client's own deadline,
    `client_budget` seconds from its creation); past it the request fails with DeadlineExceeded.
    """

    def __init__(self, policy: RetryPolicy, clock: Callable[[], float], url: str,
                 client_end: float | None = None, client_budget: float = 0.0) -> None:
        self.policy, self.clock, self.url = policy, clock, url
        self.attempt = 0
        self.waited = self.rate_waited = 0.0
        self.end, self.scope, self.budget = NEVER, "request", 0.0
        if policy.deadline is not None:
            self.end, self.budget = clock() + policy.deadline, policy.deadline
        if client_end is not None and client_end < self.end:
            self.end, self.scope, self.budget = client_end, "client", client_budget

    @property
    def last(self) -> bool:
        return self.attempt >= self.policy.retries

    def left(self) -> float:
        """Seconds before the end; DeadlineExceeded once it has passed."""
        left = self.end - self.clock()
        if left <= 0:
            raise DeadlineExceeded(self.scope, self.budget, url=self.url)
        return left

    def after_answer(self, response: httpx.Response, idempotent: bool) -> tuple[float, bool] | None:
        """(seconds to wait, whether it is a 429 waited out) before trying again, or None: the answer is final."""
        policy = self.policy
        limited = response.status_code == 429 and policy.retries > 0
        if self.last and not limited:
            return None
        delay = policy.status_delay(response, self.attempt, idempotent)
        if delay is None:
            return None
        over = (self.rate_waited + delay > policy.max_rate_wait if limited
                else self.waited + delay > policy.max_wait)
        if over or self.clock() + delay >= self.end:
            return None
        return delay, limited

    def after_error(self, exc: httpx.TransportError, idempotent: bool, url: str) -> float | None:
        """Seconds to wait before trying again after a transport error, or None: it is final.
        DeadlineExceeded when the end has passed meanwhile."""
        if self.clock() >= self.end:
            raise DeadlineExceeded(self.scope, self.budget, url=url) from None
        delay = min(self.policy.backoff_after(self.attempt), self.policy.max_wait - self.waited)
        if self.last or not self.policy.retries_error(exc, idempotent) or delay <= 0:
            return None
        return delay

    def spend(self, delay: float, limited: bool) -> float:
        """Count a wait of `delay` seconds (cut to the end) as a retry or a 429 waited out; the seconds to sleep."""
        delay = min(delay, max(0.0, self.end - self.clock()))
        if limited:
            self.rate_waited += delay
        else:
            self.attempt += 1
            self.waited += delay
        return delay
