"""Retries, backoff, Retry-After, and how failures map onto the error tree."""

from __future__ import annotations

import httpx
import pytest

from hub_client import AuthError, HubClient, HubError, RateLimited, RegistryUnreachable, ServerError

WHOAMI = "/api/v1/whoami"
ME = {"handle": "alice", "displayName": "Alice", "email": "a@x", "role": "user"}


def test_503_is_retried_with_backoff_then_succeeds(registry, make_client, sleeps) -> None:
    registry.on("GET", WHOAMI, httpx.Response(503), httpx.Response(503), httpx.Response(200, json=ME))
    assert make_client().whoami() == ME
    assert registry.count("GET", WHOAMI) == 3
    assert len(sleeps) == 2
    assert 0.125 <= sleeps[0] <= 0.25 and 0.25 <= sleeps[1] <= 0.5  # exponential, jittered


def test_retries_give_up_with_the_server_message(registry, make_client) -> None:
    registry.on("GET", WHOAMI, httpx.Response(500, json={"error": "database is locked"}))
    with pytest.raises(ServerError) as info:
        make_client(retries=2).whoami()
    assert info.value.status == 500
    assert info.value.message == "database is locked"
    assert registry.count("GET", WHOAMI) == 3


def test_429_honours_retry_after(registry, make_client, sleeps) -> None:
    limited = httpx.Response(429, json={"error": "slow down"}, headers={"Retry-After": "2"})
    registry.on("GET", WHOAMI, limited, httpx.Response(200, json=ME))
    assert make_client().whoami() == ME
    assert len(sleeps) == 1 and 2.0 <= sleeps[0] <= 2.5  # at least what it asks, jittered


def test_429s_are_waited_out_beyond_the_retries_and_told_once(registry, make_client, sleeps) -> None:
    limited = httpx.Response(429, json={"error": "slow down"}, headers={"Retry-After": "1"})
    registry.on("GET", WHOAMI, *[limited] * 6, httpx.Response(200, json=ME))
    client = make_client(retries=2)
    told: list[str] = []
    client.on_rate_limit = told.append
    assert client.whoami() == ME
    assert len(sleeps) == 6 and all(1.0 <= s <= 1.5 for s in sleeps)
    assert len(told) == 1 and "rate limiting" in told[0] and "Retry-After 1 s" in told[0]


def test_429_without_a_retry_after_still_waits_a_moment(registry, make_client, sleeps) -> None:
    registry.on("GET", WHOAMI, httpx.Response(429), httpx.Response(429, headers={"Retry-After": "0"}),
                httpx.Response(200, json=ME))
    assert make_client().whoami() == ME
    assert len(sleeps) == 2 and all(s >= 0.25 for s in sleeps)


def test_429_beyond_the_wait_budget_raises_rate_limited_at_once(registry, make_client, sleeps) -> None:
    registry.on(
        "GET", WHOAMI, httpx.Response(429, json={"error": "slow down"}, headers={"Retry-After": "600"})
    )
    with pytest.raises(RateLimited) as info:
        make_client().whoami()
    assert info.value.retry_after == 600
    assert sleeps == []
    assert registry.count("GET", WHOAMI) == 1


def test_total_wait_per_request_is_capped(registry, make_client, sleeps) -> None:
    registry.on("GET", WHOAMI, httpx.Response(429, headers={"Retry-After": "30"}))
    with pytest.raises(RateLimited):
        make_client(retries=1).whoami()
    assert len(sleeps) == 3 and all(30 <= s <= 30.5 for s in sleeps)  # a fourth wait would pass 120 s
    assert sum(sleeps) <= 120


@pytest.mark.parametrize("status", [400, 404, 409, 422])
def test_other_4xx_are_never_retried(registry, make_client, sleeps, status) -> None:
    registry.on("GET", WHOAMI, httpx.Response(status, json={"error": "no"}))
    with pytest.raises(HubError):
        make_client().whoami()
    assert registry.count("GET", WHOAMI) == 1
    assert sleeps == []


@pytest.mark.parametrize("status", [401, 403])
def test_401_and_403_are_auth_errors(registry, make_client, status) -> None:
    registry.on("GET", WHOAMI, httpx.Response(status, json={"error": "invalid token"}))
    with pytest.raises(AuthError) as info:
        make_client().whoami()
    assert (info.value.status, info.value.message) == (status, "invalid token")


def test_error_text_is_kept_verbatim(registry, make_client) -> None:
    text = "version 1.0.0 already exists; bump to >1.0.0\n  (and check: ROLE.md)"
    registry.on("POST", "/api/v1/roles", httpx.Response(400, json={"error": text}))
    with pytest.raises(ServerError) as info:
        make_client().publish("role", {"slug": "r", "version": "1.0.0"}, [("ROLE.md", b"x")])
    assert info.value.message == text
    assert info.value.url == "http://hub.test/api/v1/roles"


def test_connect_errors_are_retried_then_unreachable_names_the_url(registry, make_client, sleeps) -> None:
    registry.on("GET", WHOAMI, httpx.ConnectError("connection refused"))
    with pytest.raises(RegistryUnreachable) as info:
        make_client(retries=2).whoami()
    assert "http://hub.test/api/v1/whoami" in str(info.value)
    assert info.value.url == "http://hub.test/api/v1/whoami"
    assert registry.count("GET", WHOAMI) == 3
    assert len(sleeps) == 2


def test_a_timeout_then_success(registry, make_client) -> None:
    registry.on("GET", WHOAMI, httpx.ReadTimeout("slow"), httpx.Response(200, json=ME))
    assert make_client().whoami() == ME


def test_unreachable_for_real_on_a_closed_port(sleeps) -> None:
    with (
        HubClient("http://127.0.0.1:9", retries=1, timeout=2, sleep=sleeps.append) as client,
        pytest.raises(RegistryUnreachable) as info,
    ):
        client.whoami()
    assert "http://127.0.0.1:9/api/v1/whoami" in str(info.value)
    assert len(sleeps) == 1


def test_post_is_not_retried_after_a_500(registry, make_client) -> None:
    registry.on("POST", "/api/v1/roles", httpx.Response(500, json={"error": "oops"}))
    with pytest.raises(ServerError):
        make_client().publish("role", {"slug": "r"}, [("ROLE.md", b"x")])
    assert registry.count("POST", "/api/v1/roles") == 1


def test_post_is_not_retried_after_a_read_timeout(registry, make_client) -> None:
    registry.on("POST", "/api/v1/roles", httpx.ReadTimeout("sent, no answer"))
    with pytest.raises(RegistryUnreachable, match="timed out"):
        make_client().publish("role", {"slug": "r"}, [("ROLE.md", b"x")])
    assert registry.count("POST", "/api/v1/roles") == 1


def test_post_is_retried_when_it_was_never_processed(registry, make_client) -> None:
    created = httpx.Response(201, json={"roleId": "r1", "versionId": "v1", "version": "1.0.0"})
    registry.on("POST", "/api/v1/roles", httpx.ConnectError("refused"), httpx.Response(503), created)
    result = make_client().publish("role", {"slug": "r"}, [("ROLE.md", b"x")])
    assert result["versionId"] == "v1"
    bodies = [
        r.content.replace(r.headers["Content-Type"].split("boundary=")[1].encode(), b"")
        for r in registry.requests
    ]
    assert len(bodies) == 3 and bodies[1] == bodies[2] and b'filename="ROLE.md"' in bodies[2]


def test_bearer_token_and_user_agent_are_sent(registry, make_client) -> None:
    registry.on("GET", WHOAMI, httpx.Response(200, json=ME))
    make_client(token="sh_" + "ab" * 20, user_agent="test-agent/1").whoami()
    (request,) = registry.requests
    assert request.headers["Authorization"] == "Bearer sh_" + "ab" * 20
    assert request.headers["User-Agent"] == "test-agent/1"


def test_no_authorization_header_without_a_token(registry, make_client) -> None:
    registry.on("GET", WHOAMI, httpx.Response(401, json={"error": "login required"}))
    with pytest.raises(AuthError):
        make_client().whoami()
    assert "Authorization" not in registry.requests[0].headers
