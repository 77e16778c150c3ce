"""The v1 endpoints: publish multipart, file fetches, display endpoints, downloads, yank."""

from __future__ import annotations

import email
import email.policy
import json
import threading

import httpx
import pytest

from hub_client import NotFound, OfflineMiss


def multipart_parts(request: httpx.Request) -> list[tuple[str, str | None, str, bytes]]:
    """(field name, filename, content type, payload) of each part, parsed by the stdlib."""
    head = f"Content-Type: {request.headers['Content-Type']}\r\n\r\n".encode()
    message = email.message_from_bytes(head + request.content, policy=email.policy.HTTP)
    return [
        (
            part.get_param("name", header="content-disposition"),
            part.get_filename(),
            part.get_content_type(),
            part.get_payload(decode=True),
        )
        for part in message.iter_parts()
    ]


def test_publish_sends_fields_and_one_files_part_per_relative_path(registry, make_client) -> None:
    registry.on(
        "POST",
        "/api/v1/skills",
        httpx.Response(201, json={"skillId": "s1", "versionId": "v1", "version": "1.0.0"}),
    )
    fields = {
        "slug": "git-workflow",
        "version": "1.0.0",
        "changelog": "first",
        "dependencies": '{"skills": ["base^1"]}',
    }
    files = [
        ("SKILL.md", b"---\nname: git-workflow\n---\n"),
        ("scripts/run.sh", b"#!/bin/sh\n"),
        ("data/bé.bin", b"\x00\xff"),
    ]
    result = make_client(token="sh_" + "0" * 40).publish("skill", fields, files)
    assert result == {"skillId": "s1", "versionId": "v1", "version": "1.0.0"}
    (request,) = registry.requests
    assert request.headers["Content-Type"].startswith("multipart/form-data; boundary=")
    parts = multipart_parts(request)
    assert [(name, filename) for name, filename, _, _ in parts] == [
        ("slug", None),
        ("version", None),
        ("changelog", None),
        ("dependencies", None),
        ("files", "SKILL.md"),
        ("files", "scripts/run.sh"),
        ("files", "data/bé.bin"),
    ]
    assert {name: payload for name, filename, _, payload in parts if filename is None} == {
        k: v.encode() for k, v in fields.items()
    }
    assert [(ctype, payload) for name, _, ctype, payload in parts if name == "files"] == [
        ("application/octet-stream", b"---\nname: git-workflow\n---\n"),
        ("application/octet-stream", b"#!/bin/sh\n"),
        ("application/octet-stream", b"\x00\xff"),
    ]


@pytest.mark.parametrize("bad", ["/etc/passwd", "../up.md", "a/../b.md", "a\\b.md", "./a.md", ""])
def test_publish_refuses_paths_that_are_not_relative_posix(registry, make_client, bad) -> None:
    with pytest.raises(ValueError):
        make_client().publish("skill", {"slug": "x"}, [(bad, b"")])
    assert registry.requests == []


def test_fetch_file_sends_path_and_version_as_query(registry, make_client) -> None:
    registry.on("GET", "/api/v1/agents/stub/file", httpx.Response(200, content=b"\x7fELF binary"))
    data = make_client().fetch_file("agent", "stub", "bin/my tool+x", "0.1.0")
    assert data == b"\x7fELF binary"
    (request,) = registry.requests
    assert request.url.params["path"] == "bin/my tool+x"
    assert request.url.params["version"] == "0.1.0"
    assert b"+x" not in request.url.query  # a literal + would read as a space on the server


def test_fetch_files_concurrently_keyed_by_path(registry, make_client) -> None:
    barrier = threading.Barrier(2, timeout=60)

    def reply(request: httpx.Request) -> httpx.Response:
        barrier.wait()
        return httpx.Response(200, content=("content of " + request.url.params["path"]).encode())

    registry.on("GET", "/api/v1/skills/s/file", reply)
    files = make_client().fetch_files("skill", "s", "1.0.0", ["SKILL.md", "lib/a.py"])
    assert files == {"SKILL.md": b"content of SKILL.md", "lib/a.py": b"content of lib/a.py"}


def test_fetch_files_raises_when_one_is_missing(registry, make_client) -> None:
    def reply(request: httpx.Request) -> httpx.Response:
        if request.url.params["path"] == "gone.md":
            return httpx.Response(404, json={"error": "file not found: gone.md"})
        return httpx.Response(200, content=b"ok")

    registry.on("GET", "/api/v1/skills/s/file", reply)
    with pytest.raises(NotFound, match="gone.md"):
        make_client().fetch_files("skill", "s", "1.0.0", ["SKILL.md", "gone.md"])


def test_display_endpoints_send_the_v1_queries(registry, make_client) -> None:
    registry.on("GET", "/api/v1/roles/reviewer", httpx.Response(200, json={"slug": "reviewer"}))
    registry.on("GET", "/api/v1/memories", httpx.Response(200, json={"items": []}))
    registry.on("GET", "/api/v1/search", httpx.Response(200, json={"results": [], "count": 0}))
    registry.on(
        "GET",
        "/api/v1/roles/reviewer/resolve",
        httpx.Response(200, json={"role": "reviewer", "dependencies": []}),
    )
    client = make_client()
    assert client.detail("role", "reviewer", version="1.2.0") == {"slug": "reviewer"}
    assert client.list_packages("memory", limit=5, sort="stars") == {"items": []}
    assert client.search("code review", kind="skill", limit=3)["count"] == 0
    assert client.resolve("role", "reviewer")["role"] == "reviewer"
    queries = [dict(r.url.params) for r in registry.requests]
    assert queries == [
        {"version": "1.2.0"},
        {"limit": "5", "sort": "stars"},
        {"q": "code review", "kind": "skill", "limit": "3"},
        {},
    ]


def test_track_download_posts_the_v1_body(registry, make_client) -> None:
    registry.on("POST", "/api/v1/downloads", httpx.Response(200, json={"ok": True}))
    assert make_client().track_download("skills", "git-workflow", "1.2.0") is None
    (request,) = registry.requests
    assert json.loads(request.content) == {"kind": "skill", "slug": "git-workflow", "version": "1.2.0"}


@pytest.mark.parametrize(
    "failure", [httpx.Response(500), httpx.ConnectError("down"), httpx.Response(200, text="nope")]
)
def test_track_download_never_raises_nor_retries(registry, make_client, sleeps, failure) -> None:
    registry.on("POST", "/api/v1/downloads", failure)
    make_client().track_download("skill", "git-workflow", "1.2.0")
    assert registry.count("POST", "/api/v1/downloads") == 1
    assert sleeps == []


def test_track_download_is_skipped_offline(registry, make_client) -> None:
    make_client(offline=True).track_download("skill", "git-workflow", "1.2.0")
    assert registry.requests == []


def test_yank_and_undo(registry, make_client) -> None:
    def reply(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        return httpx.Response(
            200, json={"kind": "role", "slug": "r", "version": "1.0.0", "yanked": body["yanked"]}
        )

    registry.on("POST", "/api/v1/roles/r/versions/1.0.0/yank", reply)
    client = make_client()
    assert client.yank("role", "r", "1.0.0")["yanked"] is True
    assert client.yank("role", "r", "1.0.0", yanked=False)["yanked"] is False
    assert [json.loads(r.content) for r in registry.requests] == [{"yanked": True}, {"yanked": False}]


def test_network_calls_offline_are_offline_misses(registry, make_client) -> None:
    with pytest.raises(OfflineMiss):
        make_client(offline=True).search("x")
    assert registry.requests == []
