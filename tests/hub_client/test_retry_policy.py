"""The retry policy as a value and one request's spending of it, on a fake clock (nothing really sleeps);
and the capabilities a client learns, recorded once however many threads learn them at once."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from hub_client import DeadlineExceeded, HubClient, RegistryUnreachable, RetryPolicy, ServerError
from hub_client._capabilities import Capabilities
from hub_client._retry import Attempts

URL = "http://hub.test/api/v1/whoami"


class Clock:
    """time.monotonic() stand-in that moves only when the client sleeps."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def _client(reply: Callable[[httpx.Request], httpx.Response], clock: Clock, **kwargs: object) -> HubClient:
    return HubClient("http://hub.test", transport=httpx.MockTransport(reply), sleep=clock.sleep, clock=clock,
                     **kwargs)  # type: ignore[arg-type]


def _refused(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError("refused", request=request)


def test_the_default_policy_tries_four_times_and_sleeps_between_one_and_two_seconds() -> None:
    clock = Clock()
    with _client(_refused, clock) as client, pytest.raises(RegistryUnreachable):
        client.whoami()
    assert len(clock.slept) == 3
    assert 0.125 <= clock.slept[0] <= 0.25 and 0.25 <= clock.slept[1] <= 0.5 and 0.5 <= clock.slept[2] <= 1.0


def test_attempts_come_from_the_policy() -> None:
    clock = Clock()
    with _client(_refused, clock, retry=RetryPolicy(retries=5, backoff=0.01)) as client, \
            pytest.raises(RegistryUnreachable):
        client.whoami()
    assert len(clock.slept) == 5


def test_the_request_deadline_ends_the_retries_on_the_clock() -> None:
    clock = Clock()
    policy = RetryPolicy(retries=100, backoff=1.0, backoff_cap=1.0, deadline=3.0)
    with _client(lambda r: httpx.Response(503), clock, retry=policy) as client, pytest.raises(ServerError):
        client.whoami()  # the last answer is what is told
    assert sum(clock.slept) <= 3.0
    assert len(clock.slept) < 10


def test_past_the_deadline_a_transport_error_is_deadline_exceeded() -> None:
    clock = Clock()

    def slow_refusal(request: httpx.Request) -> httpx.Response:
        clock.now += 2.0  # the connect attempt itself took 2 s
        raise httpx.ConnectTimeout("slow", request=request)

    with _client(slow_refusal, clock, request_deadline=3.0) as client, pytest.raises(DeadlineExceeded) as info:
        client.whoami()
    assert info.value.scope == "request" and info.value.seconds == 3.0


@pytest.mark.parametrize(
    ("error", "method", "retried"),
    [
        (httpx.ConnectError("x"), "GET", True),
        (httpx.ReadTimeout("x"), "GET", True),
        (httpx.RemoteProtocolError("x"), "GET", True),
        (httpx.ConnectError("x"), "POST", True),  # never sent: cannot have taken effect
        (httpx.ConnectTimeout("x"), "POST", True),
        (httpx.PoolTimeout("x"), "POST", True),
        (httpx.ReadTimeout("x"), "POST", False),  # sent: it may have taken effect
        (httpx.ReadError("x"), "POST", False),
    ],
)
def test_which_errors_retry(error: httpx.TransportError, method: str, retried: bool) -> None:
    policy = RetryPolicy()
    assert policy.retries_error(error, idempotent=method == "GET") is retried
    clock = Clock()
    tries = Attempts(policy, clock, URL)
    assert (tries.after_error(error, method == "GET", URL) is not None) is retried


@pytest.mark.parametrize(("status", "get", "post"), [(429, True, True), (503, True, True), (500, True, False),
                                                     (502, True, False), (504, True, False), (404, False, False),
                                                     (400, False, False)])
def test_which_statuses_retry(status: int, get: bool, post: bool) -> None:
    response = httpx.Response(status, request=httpx.Request("GET", URL))
    policy = RetryPolicy()
    assert (policy.status_delay(response, 0, idempotent=True) is not None) is get
    assert (policy.status_delay(response, 0, idempotent=False) is not None) is post


def test_the_sleep_budget_ends_the_retries_before_the_attempts_do() -> None:
    tries = Attempts(RetryPolicy(retries=10, backoff=4.0, backoff_cap=4.0, max_wait=5.0), Clock(), URL)
    error = httpx.ConnectError("x")
    first = tries.after_error(error, True, URL)
    assert first is not None
    tries.spend(first, limited=False)
    second = tries.after_error(error, True, URL)
    assert second is not None and first + second <= 5.0  # cut to what is left of the budget


def test_a_client_deadline_earlier_than_the_request_deadline_wins() -> None:
    clock = Clock()
    tries = Attempts(RetryPolicy(deadline=60.0), clock, URL, client_end=clock() + 2.0, client_budget=10.0)
    assert (tries.scope, tries.budget, tries.end) == ("client", 10.0, clock() + 2.0)
    clock.now += 2.0
    with pytest.raises(DeadlineExceeded):
        tries.left()


def test_a_negative_retry_count_is_refused() -> None:
    with pytest.raises(ValueError, match="retries"):
        RetryPolicy(retries=-1)


def test_a_capability_learnt_by_many_threads_at_once_is_recorded_once() -> None:
    capabilities = Capabilities()
    start = threading.Barrier(16)

    def learn(present: bool) -> bool:
        start.wait()
        return capabilities.learn("closure", present)

    with ThreadPoolExecutor(16) as pool:
        recorded = list(pool.map(learn, [i % 2 == 0 for i in range(16)]))
    assert recorded.count(True) == 1
    winner = [i % 2 == 0 for i in range(16)][recorded.index(True)]
    assert capabilities.has("closure") is winner  # the first telling answer decides, later ones do not flip it


def test_concurrent_requests_learn_the_versions_extension_once() -> None:
    learnt: list[bool] = []

    class Recording(Capabilities):
        def learn(self, extension, present):  # type: ignore[no-untyped-def]
            done = super().learn(extension, present)
            if done:
                learnt.append(present)
            return done

    def versions(request: httpx.Request) -> httpx.Response:
        slug = request.url.path.split("/")[4]
        return httpx.Response(200, json={"kind": "skill", "slug": slug, "versions": []})

    with HubClient("http://hub.test", transport=httpx.MockTransport(versions), max_workers=8) as client:
        client.capabilities = Recording()
        results = client.package_versions_many([("skill", f"s{i}") for i in range(32)])
    assert all(not isinstance(r, Exception) for r in results.values())
    assert learnt == [True] and client.capabilities.has("versions") is True
