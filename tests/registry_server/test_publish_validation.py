"""Every bad publish is a 4xx JSON error with nothing stored; a crash before the commit leaves nothing visible."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from registry_server.errors import ApiError
from registry_server.multipart import read_upload
from registry_server.storage import SQLiteStorage
from registry_server.storage.base import Storage
from tests.registry_server._helpers import Api, agent, main_md, role, skill

MB = 1024 * 1024


def blob_count(storage: Storage) -> int:
    return sum(1 for _ in storage.list_blobs())


def refused(api: Api, response: object, status: int, *needles: str, slug: str = "bad") -> str:
    """Assert a JSON error with `status` mentioning every needle, and that nothing was stored."""
    assert response.status_code == status, response.text  # type: ignore[attr-defined]
    assert response.headers["content-type"] == "application/json"  # type: ignore[attr-defined]
    error: str = response.json()["error"]  # type: ignore[attr-defined]
    for needle in needles:
        assert needle in error, error
    assert api.client.get(f"/api/v1/skills/{slug}/versions").status_code == 404
    assert blob_count(api.storage) == 0
    return error


def raw_multipart(fields: dict[str, str], files: list[tuple[bytes, bytes, bytes]]) -> tuple[bytes, str]:
    """A multipart body built by hand, so file names reach the server byte for byte."""
    boundary = b"strawpot-test-boundary"
    out = b""
    for name, value in fields.items():
        out += b"--" + boundary + b'\r\nContent-Disposition: form-data; name="' + name.encode() + b'"\r\n\r\n'
        out += value.encode() + b"\r\n"
    for filename, data, content_type in files:
        out += b"--" + boundary + b'\r\nContent-Disposition: form-data; name="files"; filename="' + filename + b'"\r\n'
        out += b"Content-Type: " + content_type + b"\r\n\r\n" + data + b"\r\n"
    out += b"--" + boundary + b"--\r\n"
    return out, f"multipart/form-data; boundary={boundary.decode()}"


def post_raw(api: Api, filename: bytes, content_type: bytes = b"text/plain") -> object:
    body, ctype = raw_multipart(
        {"slug": "bad", "version": "1.0.0"},
        [(b"SKILL.md", skill("bad")["SKILL.md"], b"text/markdown"), (filename, b"payload", content_type)],
    )
    return api.client.post("/api/v1/skills", content=body,
                           headers={"Content-Type": ctype, **api.auth(api.alice)})


@pytest.mark.parametrize(
    ("filename", "needle"),
    [
        (b"../x", "'..'"),
        (b"/etc/passwd", "absolute path"),
        (b"a/../../b", "'..'"),
        (b"a\\\\b.md", "backslash"),
        (b"C:\\\\Windows\\\\evil.exe", "backslash"),
        (b"C:evil", "absolute path"),
        (b"a/./b.md", "'.'"),
        (b"dir//b.md", "empty"),
        (b"nul\x00byte.md", "control character"),
        (b"tab\tname", "control character"),
    ],
)
def test_escaping_file_names_are_refused(api: Api, filename: bytes, needle: str) -> None:
    refused(api, post_raw(api, filename), 400, needle)


@pytest.mark.parametrize(("filename", "content_type"), [
    (b"link", b"inode/symlink"), (b"link", b"application/x-symlink"), (b"link -> /etc/passwd", b"text/plain"),
])
def test_symlink_like_parts_are_refused(api: Api, filename: bytes, content_type: bytes) -> None:
    refused(api, post_raw(api, filename, content_type), 400, "links are not allowed")


def test_duplicate_file_names_are_refused(api: Api) -> None:
    body, ctype = raw_multipart({"slug": "bad", "version": "1.0.0"},
                                [(b"SKILL.md", skill("bad")["SKILL.md"], b"text/markdown"),
                                 (b"SKILL.md", skill("bad")["SKILL.md"], b"text/markdown")])
    response = api.client.post("/api/v1/skills", content=body, headers={"Content-Type": ctype, **api.auth(api.alice)})
    refused(api, response, 400, "uploaded twice")


def test_a_file_over_10_mb(api: Api) -> None:
    files = {**skill("bad"), "big.bin": b"x" * (10 * MB + 1)}
    refused(api, api.publish("skill", files), 400, "big.bin", "more than the limit of 10485760 a file")


def test_over_100_files(api: Api) -> None:
    files = {**skill("bad"), **{f"f{i:03}.md": b"x" for i in range(100)}}
    refused(api, api.publish("skill", files), 400, "101 files, more than the limit of 100")


def test_over_50_mb_in_all_is_413(api: Api) -> None:
    files = {**skill("bad"), **{f"part{i}.bin": b"x" * (9 * MB) for i in range(6)}}
    refused(api, api.publish("skill", files), 413, "larger than the limit")


def test_the_total_is_enforced_while_streaming() -> None:
    """Without a Content-Length the reader stops soon after 50 MB instead of buffering the whole body."""
    consumed = 0
    chunk = b"x" * MB

    async def body() -> AsyncIterator[bytes]:
        nonlocal consumed
        yield b'--B\r\nContent-Disposition: form-data; name="files"; filename="a.bin"\r\n\r\n'
        for _ in range(200):
            consumed += len(chunk)
            yield chunk

    with pytest.raises(ApiError) as info:
        asyncio.run(read_upload("multipart/form-data; boundary=B", body(), max_total=50 * MB))
    assert info.value.status == 413
    assert consumed <= 51 * MB


def test_non_text_main_file(api: Api) -> None:
    refused(api, api.publish("skill", {"SKILL.md": b"\xff\xfe\x00binary"}, slug="bad", version="1.0.0"),
            400, "SKILL.md", "not UTF-8")


def test_missing_main_file_and_no_files(api: Api) -> None:
    refused(api, api.publish("skill", {"README.md": b"hi"}, slug="bad", version="1.0.0"), 400, "main file is missing")
    refused(api, api.publish("skill", {}, slug="bad", version="1.0.0"), 400, "no files uploaded")


def test_frontmatter_name_must_equal_slug(api: Api) -> None:
    refused(api, api.publish("skill", skill("other"), slug="bad"), 400, "'other' but the package slug is 'bad'")


def test_bad_slug_and_version_fields(api: Api) -> None:
    response = api.publish("skill", skill("bad"), slug="Bad_Slug", version="1.0")
    error = refused(api, response, 400, "slug:", "version:")
    assert "2 problems" in error or "3 problems" in error


def test_version_must_be_new_and_greater(api: Api) -> None:
    api.ok("skill", skill("git-workflow", "1.2.0"))
    blobs = blob_count(api.storage)
    same = api.publish("skill", skill("git-workflow", "1.2.0"))
    assert same.status_code == 400 and "already exists" in same.json()["error"]
    lower = api.publish("skill", skill("git-workflow", "1.1.9"))
    assert lower.status_code == 400 and "must be greater than the latest version 1.2.0" in lower.json()["error"]
    pre = api.publish("skill", skill("git-workflow", "1.2.0-rc.1"))
    assert pre.status_code == 400
    assert blob_count(api.storage) == blobs
    versions = api.client.get("/api/v1/skills/git-workflow/versions").json()["versions"]
    assert [v["version"] for v in versions] == ["1.2.0"]


def test_yanked_versions_still_block_reuse(api: Api) -> None:
    api.ok("skill", skill("git-workflow", "1.0.0"))
    api.client.post("/api/v1/skills/git-workflow/versions/1.0.0/yank", headers=api.auth(api.alice))
    assert api.publish("skill", skill("git-workflow", "1.0.0")).status_code == 400


def test_dependency_that_does_not_exist(api: Api) -> None:
    refused(api, api.publish("skill", skill("bad", deps=["ghost"])), 400, "skill 'ghost' does not exist")


def test_dependency_whose_specifier_nothing_satisfies(api: Api) -> None:
    api.ok("skill", skill("git-workflow", "1.0.0"))
    api.ok("skill", skill("git-workflow", "1.5.0"))
    api.client.post("/api/v1/skills/git-workflow/versions/1.5.0/yank", headers=api.auth(api.alice))
    blobs = blob_count(api.storage)
    response = api.publish("skill", skill("bad", deps=["git-workflow>=1.2"]))
    assert response.status_code == 400
    assert "no published version of skill 'git-workflow' satisfies '>=1.2' (available: 1.0.0)" in response.json()["error"]
    assert blob_count(api.storage) == blobs
    assert api.client.get("/api/v1/skills/bad").status_code == 404


def test_role_dependencies_are_checked_by_kind(api: Api) -> None:
    api.ok("skill", skill("shared"))
    response = api.publish("role", role("bad", skills=["shared"], roles=["shared", "*"]))
    assert response.status_code == 400 and "role 'shared' does not exist" in response.json()["error"]


def test_role_is_exactly_role_md(api: Api) -> None:
    response = api.publish("role", {**role("bad"), "extra.md": b"x"})
    assert response.status_code == 400 and "a role is exactly ROLE.md" in response.json()["error"]


def test_authentication_and_ownership(api: Api) -> None:
    refused(api, api.publish("skill", skill("bad"), token=None), 401, "authentication required")
    refused(api, api.publish("skill", skill("bad"), token="sh_" + "f" * 40), 401, "unknown token")
    refused(api, api.publish("skill", skill("bad"), token="not-a-token"), 401, "invalid token")
    api.ok("skill", skill("alices"), token="alice")
    blobs = blob_count(api.storage)
    theirs = api.publish("skill", skill("alices", "2.0.0"), token="bob")
    assert theirs.status_code == 403 and "belongs to 'alice'" in theirs.json()["error"]
    assert blob_count(api.storage) == blobs


def test_malformed_or_wrong_dependencies_field(api: Api) -> None:
    refused(api, api.publish("skill", skill("bad"), dependencies="{not json"), 400, "dependencies: not valid JSON")
    refused(api, api.publish("skill", skill("bad"), dependencies='{"agents": ["x"]}'), 400, "a skill takes")
    refused(api, api.publish("skill", skill("bad"), dependencies='{"skills": ["ghost"]}'), 400, "disagrees")


def test_unknown_kind(api: Api) -> None:
    response = api.publish("widgets", skill("bad"))
    refused(api, response, 404, "unknown package kind 'widgets'")


def test_not_multipart(api: Api) -> None:
    response = api.client.post("/api/v1/skills", json={"slug": "bad"}, headers=api.auth(api.alice))
    refused(api, response, 400, "multipart/form-data")


def test_every_problem_is_reported_at_once(api: Api) -> None:
    files = {"SKILL.md": main_md("other", strawpot={"dependencies": ["ghost"]}), "../up": b"x",
             "big.bin": b"x" * (10 * MB + 1)}
    error = refused(api, api.publish("skill", files, slug="bad", version="1.0.0", dependencies=None), 400,
                    "'..'", "big.bin", "'other' but the package slug is 'bad'")
    assert error.startswith("publish refused, 3 problems: ")
    assert api.publish("skill", files, slug="bad", version="1.0.0", dependencies=None).json()["issues"]


def test_agent_without_its_wrapper_is_accepted(api: Api) -> None:
    # a bin nothing provides on its OS is a warning (the client says it), not a refusal: the published denden
    # skill declares bin.windows with install commands for macOS and Linux only
    files = agent("no-wrapper")
    del files["bin/wrapper"]
    response = api.publish("agent", files)
    assert response.status_code == 201, response.text
    listed = api.client.get("/api/v1/agents/no-wrapper/versions").json()["versions"][0]["files"]
    assert "bin/wrapper" not in {f["path"] for f in listed}


def test_a_skill_may_declare_a_program_and_ship_it_executable(api: Api) -> None:
    files = {"SKILL.md": main_md("prog", "1.0.0", strawpot={"bin": {"linux": "bin/prog", "windows": "prog.exe"}}),
             "bin/prog": b"#!/bin/sh\n"}
    response = api.publish("skill", files)
    assert response.status_code == 201, response.text
    listed = api.client.get("/api/v1/skills/prog/versions").json()["versions"][0]["files"]
    assert {f["path"]: f["executable"] for f in listed} == {"SKILL.md": False, "bin/prog": True}


def test_agent_param_whose_default_does_not_fit_its_type(api: Api) -> None:
    strawpot = {"bin": {"linux": "bin/wrapper"}, "params": {"careful": {"type": "boolean", "default": "yes please"}}}
    files = {**agent("bad"), "AGENT.md": main_md("bad", "1.0.0", strawpot=strawpot)}
    refused(api, api.publish("agent", files), 400,
            "metadata.strawpot.params.careful.default: 'yes please' is not a boolean (type: boolean)")


def test_crash_between_blob_write_and_commit_leaves_nothing_visible(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.registry_server.conftest import make_api

    store = SQLiteStorage(tmp_path / "data")
    api = make_api(store)
    api.ok("skill", skill("git-workflow", "1.0.0"))

    def crash() -> None:
        raise RuntimeError("power cut")

    monkeypatch.setattr(store, "_before_commit", crash)
    for files in (skill("git-workflow", "1.1.0"), skill("fresh")):
        response = api.publish("skill", files)
        assert response.status_code == 500 and response.json() == {"error": "internal server error"}
    assert [v["version"] for v in api.client.get("/api/v1/skills/git-workflow/versions").json()["versions"]] == ["1.0.0"]
    assert api.client.get("/api/v1/skills/git-workflow").json()["latestVersion"]["version"] == "1.0.0"
    assert api.client.get("/api/v1/skills/fresh").status_code == 404
    assert [i["slug"] for i in api.client.get("/api/v1/skills").json()["items"]] == ["git-workflow"]
    monkeypatch.undo()
    reopened = SQLiteStorage(tmp_path / "data")  # what a restarted server would see
    assert [r.version for r in reopened.versions(*_skill("git-workflow")) or []] == ["1.0.0"]
    assert reopened.get_package(*_skill("fresh")) is None
    api.ok("skill", skill("git-workflow", "1.1.0"))  # the same version publishes cleanly afterwards
    reopened.close()
    store.close()


def _skill(slug: str) -> tuple[object, str]:
    from strawpot.model.kinds import Kind

    return Kind.SKILL, slug
