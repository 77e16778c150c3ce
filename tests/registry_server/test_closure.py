"""`POST /api/v1/closure` in-process over both storages: what is reachable, ETags, the bound, bad bodies."""

from __future__ import annotations

import json
import warnings

import pytest

from registry_server.app import create_app
from registry_server.storage.base import Storage
from tests.registry_server._helpers import Api, agent, role, skill
from tests.registry_server.conftest import make_api

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
    from starlette.testclient import TestClient

URL = "/api/v1/closure"
BUNDLE = "/api/v1/archives"


# A registry started with `--allow-ranges`: these tests exercise the closure walk on dependency ranges, which a
# private registry may publish and every registry still reads (versions stored before StrawHub's grammar).
pytestmark = pytest.mark.allow_ranges


def _graph(api: Api) -> None:
    api.ok("skill", skill("leaf"))
    api.ok("skill", skill("old-only"))
    api.ok("skill", skill("mid", "1.0.0", deps=["old-only"]))
    api.ok("skill", skill("mid", "2.0.0", deps=["leaf^1"]))
    api.ok("agent", agent("runner"))
    api.ok("role", role("lead", skills=["mid>=1"], default_agent="runner"))
    api.ok("skill", skill("unrelated"))


def test_closure_holds_every_reachable_versions_document(api: Api) -> None:
    _graph(api)
    answer = api.client.post(URL, json={"roots": [{"kind": "role", "slug": "lead"}, {"kind": "skill", "slug": "nope"}]})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    got = {f"{p['versions']['kind']}:{p['versions']['slug']}": p for p in body["packages"]}
    # through any version: old-only is only needed by mid 1.0.0; the role's default agent counts
    assert set(got) == {"role:lead", "skill:mid", "skill:leaf", "skill:old-only", "agent:runner"}
    assert body["missing"] == ["skill:nope"] and body["unchanged"] == [] and body["complete"] is True
    for pid, item in got.items():
        kind, slug = pid.split(":")
        plural = {"role": "roles", "skill": "skills", "agent": "agents"}[kind]
        single = api.client.get(f"/api/v1/{plural}/{slug}/versions")
        assert item["versions"] == single.json() and item["etag"] == single.headers["etag"]


def test_known_etags_are_left_out_but_still_walked(api: Api) -> None:
    _graph(api)
    first = {f"{p['versions']['kind']}:{p['versions']['slug']}": p["etag"]
             for p in api.client.post(URL, json={"roots": [{"kind": "role", "slug": "lead"}]}).json()["packages"]}
    known = {**first, "skill:leaf": '"stale"'}
    body = api.client.post(URL, json={"roots": [{"kind": "roles", "slug": "lead"}], "known": known}).json()
    assert [p["versions"]["slug"] for p in body["packages"]] == ["leaf"]
    assert sorted(body["unchanged"]) == ["agent:runner", "role:lead", "skill:mid", "skill:old-only"]


def test_closure_past_its_bound_says_it_is_incomplete(storage: Storage) -> None:
    api = make_api(storage, allow_ranges=True)
    _graph(api)
    small = TestClient(create_app(storage, rate_limit=0, closure_limit=2))
    body = small.post(URL, json={"roots": [{"kind": "role", "slug": "lead"}]}).json()
    assert len(body["packages"]) == 2 and body["complete"] is False and body["limit"] == 2
    off = TestClient(create_app(storage, rate_limit=0, closure=False))
    assert off.post(URL, json={"roots": [{"kind": "role", "slug": "lead"}]}).status_code == 404
    assert off.post(BUNDLE, json={"items": [{"kind": "skill", "slug": "leaf", "version": "1.0.0"}]}).status_code == 404


def test_bad_closure_requests_are_400_or_413(api: Api) -> None:
    for bad in ({}, {"roots": []}, {"roots": "lead"}, {"roots": [{"kind": "role"}]},
                {"roots": [{"kind": "role", "slug": "../x"}]}, {"roots": [{"kind": "thing", "slug": "x"}]},
                {"roots": [{"kind": "role", "slug": "x"}], "known": []},
                {"roots": [{"kind": "role", "slug": "x"}], "known": {"role:x": 1}},
                {"roots": [{"kind": "role", "slug": "x"}] * 101}):
        answer = api.client.post(URL, json=bad)
        assert answer.status_code == 400 and answer.json()["error"], bad
    deep = b'{"roots":' + b"[" * 40 + b"]" * 40 + b"}"
    assert api.client.post(URL, content=deep, headers={"Content-Type": "application/json"}).status_code == 400
    huge = json.dumps({"roots": [{"kind": "role", "slug": "x"}], "known": {f"skill:s{i}": "e" * 60 for i in range(2000)}})
    assert api.client.post(URL, content=huge, headers={"Content-Type": "application/json"}).status_code == 413


def test_a_bundle_holds_the_archives_asked_for_byte_for_byte(api: Api) -> None:
    _graph(api)
    items = [{"kind": "skill", "slug": "mid", "version": "1.0.0"}, {"kind": "skill", "slug": "nope", "version": "1.0.0"},
             {"kind": "agents", "slug": "runner", "version": "1.0.0"}, {"kind": "skill", "slug": "mid", "version": "9.0.0"}]
    answer = api.client.post(BUNDLE, json={"items": items})
    assert answer.status_code == 200 and answer.headers["content-type"] == "application/octet-stream"
    head, _, rest = answer.content.partition(b"\n")
    index = json.loads(head)
    assert [(e["kind"], e["slug"], e["version"]) for e in index] == [("skill", "mid", "1.0.0"), ("agent", "runner", "1.0.0")]
    offset = 0
    for entry in index:
        single = api.client.get(f"/api/v1/{entry['kind']}s/{entry['slug']}/versions/{entry['version']}/archive")
        assert rest[offset:offset + entry["size"]] == single.content
        assert entry["sha256"] == single.headers["etag"].strip('"')
        offset += entry["size"]
    assert offset == len(rest)
    for bad in ({}, {"items": []}, {"items": [{"kind": "skill", "slug": "x"}]}, {"items": [{"kind": "skill", "slug": "../x", "version": "1"}]},
                {"items": [{"kind": "skill", "slug": "x", "version": "1"}] * 201}):
        assert api.client.post(BUNDLE, json=bad).status_code == 400, bad
