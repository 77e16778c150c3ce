"""Signed publishes, publisher keys and the transparency log, on every storage backend (issue 40 items 1-3)."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from registry_server.storage.base import Storage
from strawpot.model import merkle
from strawpot.model.archive import build_archive
from strawpot.model.kinds import Kind
from strawpot.model.provenance import canonical, key_id, load_public, public_b64, sign, statement, verify
from tests.registry_server._helpers import Api, skill
from tests.registry_server.conftest import Backend


def register(api: Api, token: str = "alice") -> Ed25519PrivateKey:
    key = Ed25519PrivateKey.generate()
    answer = api.client.post("/api/v1/keys", json={"publicKey": public_b64(key)}, headers=api.auth(getattr(api, token)))
    assert answer.status_code == 201, answer.text
    assert answer.json()["keyId"] == key_id(key.public_key())
    return key


def signed_fields(key: Ed25519PrivateKey, files: dict[str, bytes], slug: str, version: str, *,
                  publisher: str = "alice", **changes: Any) -> dict[str, str]:
    archive = hashlib.sha256(build_archive(files)).hexdigest()
    body = statement(kind="skill", slug=slug, version=version, archive_sha256=archive, publisher=publisher,
                     source=None, time="2026-11-27T00:00:00Z")
    text, signature = sign(key, {**body, **changes})
    return {"statement": text, "signature": signature, "keyId": key_id(key.public_key())}


def test_keys_are_registered_listed_and_revoked_once(api: Api) -> None:
    key = register(api)
    listed = api.client.get("/api/v1/users/alice/keys").json()["keys"]
    assert [(k["keyId"], k["revokedAt"]) for k in listed] == [(key_id(key.public_key()), None)]
    again = api.client.post("/api/v1/keys", json={"publicKey": public_b64(key)}, headers=api.auth(api.bob))
    assert again.status_code == 409 and "registered already" in again.json()["error"]
    bad = api.client.post("/api/v1/keys", json={"publicKey": "bm90IGEga2V5"}, headers=api.auth(api.alice))
    assert bad.status_code == 400 and "32-byte" in bad.json()["error"]
    by_bob = api.client.post("/api/v1/keys/revoke", json={"keyId": key_id(key.public_key())}, headers=api.auth(api.bob))
    assert by_bob.status_code == 404
    done = api.client.post("/api/v1/keys/revoke", json={"keyId": key_id(key.public_key())}, headers=api.auth(api.alice))
    assert done.status_code == 200 and done.json()["revokedAt"] is not None


def test_a_signed_publish_is_stored_and_served_with_its_log_index(api: Api) -> None:
    key = register(api)
    files = skill("signed")
    api.ok("skill", files, **signed_fields(key, files, "signed", "1.0.0"))
    (entry,) = api.client.get("/api/v1/skills/signed/versions").json()["versions"]
    prov = entry["provenance"]
    assert prov["keyId"] == key_id(key.public_key()) and entry["logIndex"] == 1  # index 0: the key registration
    verify(public_b64(key), prov["statement"], prov["signature"])
    logged = api.client.get("/api/v1/log/entries", params={"start": 1, "end": 2}).json()["entries"][0]
    assert '"statementSha256":"' + hashlib.sha256(prov["statement"].encode()).hexdigest() in logged


def refused(api: Api, files: dict[str, bytes], fields: dict[str, str], status: int, words: str, **kw: Any) -> None:
    answer = api.publish("skill", files, **fields, **kw)
    assert answer.status_code == status, answer.text
    message = answer.json()["error"]
    assert words in message and "\n" not in message
    assert api.client.get("/api/v1/skills/s/versions").status_code in (200, 404)


def test_each_bad_signature_is_refused_in_one_line_and_nothing_is_stored(api: Api) -> None:
    key = register(api)
    files = skill("s")
    stranger = Ed25519PrivateKey.generate()
    refused(api, files, signed_fields(stranger, files, "s", "1.0.0"), 403, "is not registered to alice")
    refused(api, files, signed_fields(key, skill("s", "2.0.0"), "s", "2.0.0"), 400, "signs version '2.0.0'")
    refused(api, files, signed_fields(key, skill("s", body="Other.\n"), "s", "1.0.0"), 400, "signs archiveSha256")
    refused(api, files, signed_fields(key, files, "s", "1.0.0", publisher="bob"), 400, "signs publisher 'bob'")
    forged = {**signed_fields(key, files, "s", "1.0.0"), "signature": signed_fields(stranger, files, "s", "1.0.0")["signature"]}
    refused(api, files, forged, 403, "does not verify")
    bob_key = register(api, "bob")
    refused(api, files, signed_fields(bob_key, files, "s", "1.0.0"), 403, "is not registered to alice")
    assert api.client.get("/api/v1/skills/s").status_code == 404
    api.client.post("/api/v1/keys/revoke", json={"keyId": key_id(key.public_key())}, headers=api.auth(api.alice))
    refused(api, files, signed_fields(key, files, "s", "1.0.0"), 403, "was revoked")
    assert api.client.get("/api/v1/skills/s").status_code == 404


def test_an_unsigned_version_after_a_signed_one_needs_the_publishers_word(api: Api) -> None:
    key = register(api)
    api.ok("skill", skill("s"), **signed_fields(key, skill("s"), "s", "1.0.0"))
    refused(api, skill("s", "1.1.0"), {}, 409, "version 1.0.0 was signed and this upload is not")
    api.ok("skill", skill("s", "1.1.0"), allowUnsigned="true")
    versions = api.client.get("/api/v1/skills/s/versions").json()["versions"]
    assert [v["provenance"] is None for v in versions] == [False, True]


def test_the_log_head_is_signed_and_its_proofs_check(api: Api) -> None:
    key = register(api)
    for n in range(5):
        version = f"1.{n}.0"
        api.ok("skill", skill("s", version), **signed_fields(key, skill("s", version), "s", version))
    api.client.post("/api/v1/skills/s/versions/1.0.0/yank", json={"yanked": True}, headers=api.auth(api.alice))
    head = api.client.get("/api/v1/log/head").json()
    assert head["size"] == 7
    body = canonical({"rootHash": head["rootHash"], "size": head["size"], "time": head["time"]})
    load_public(head["publicKey"]).verify(base64.b64decode(head["signature"]), body)
    assert api.client.get("/api/v1/log/head").json()["keyId"] == head["keyId"]  # one key, kept
    root = bytes.fromhex(head["rootHash"])
    entries = api.client.get("/api/v1/log/entries").json()["entries"]
    assert '"type":"yank"' in entries[6] and '"type":"key-add"' in entries[0]
    for index, text in enumerate(entries):
        proof = api.client.get("/api/v1/log/proof/inclusion", params={"index": index, "size": 7}).json()
        assert proof["leafHash"] == merkle.leaf_hash(text.encode()).hex()
        merkle.check_inclusion(index, 7, merkle.leaf_hash(text.encode()), [bytes.fromhex(p) for p in proof["proof"]], root)
    leaves = [merkle.leaf_hash(t.encode()) for t in entries]
    for first in range(1, 8):
        proof = api.client.get("/api/v1/log/proof/consistency", params={"first": first, "second": 7}).json()["proof"]
        merkle.check_consistency(first, 7, merkle.root(leaves[:first]), root, [bytes.fromhex(p) for p in proof])
    beyond = api.client.get("/api/v1/log/proof/inclusion", params={"index": 9, "size": 7})
    assert beyond.status_code == 400 and "outside" in beyond.json()["error"]


def test_a_registry_that_requires_signatures_refuses_an_unsigned_publish(storage: Storage) -> None:
    from starlette.testclient import TestClient

    from registry_server import create_app, create_token

    client = TestClient(create_app(storage, rate_limit=0, require_signatures=True), raise_server_exceptions=False)
    api = Api(client, storage, create_token(storage, "root", admin=True), create_token(storage, "alice"),
              create_token(storage, "bob"))
    with client:
        refused(api, skill("s"), {}, 403, "takes signed publishes only")
        key = register(api)
        api.ok("skill", skill("s"), **signed_fields(key, skill("s"), "s", "1.0.0"))


def test_concurrent_publishes_on_postgres_give_a_dense_consistent_log(pg_s3: Backend, tmp_path: Path) -> None:
    """Several storages (as several workers would open) publish at once: indexes 0..n-1, each once, all proven."""
    from concurrent.futures import ThreadPoolExecutor

    from registry_server.storage.backends import open_storage
    from registry_server.storage.base import NewVersion, VersionRecord

    stores = [open_storage(pg_s3.spec(tmp_path / f"w{i}")) for i in range(4)]
    owner = stores[0].ensure_user("alice")

    def publish(n: int) -> None:
        record = VersionRecord("1.0.0", "", {}, (), f"{n:064x}", 1, 0)
        stores[n % 4].publish(NewVersion(Kind.SKILL, f"p{n}", f"p{n}", "", (), record), owner)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(publish, range(24)))
    entries = stores[1].log_entries(0, 100)
    assert stores[2].log_size() == len(entries) == 24
    assert sorted(e.split('"slug":"')[1].split('"')[0] for e in entries) == sorted(f"p{n}" for n in range(24))
    indexes = sorted(-1 if v.log_index is None else v.log_index for n in range(24) for v in stores[3].versions(Kind.SKILL, f"p{n}") or [])
    assert indexes == list(range(24))
    for store in stores:
        store.close()


def test_the_package_page_shows_who_signed_a_version_and_its_log_index(api: Api) -> None:
    key = register(api)
    api.ok("skill", skill("s"), **signed_fields(key, skill("s"), "s", "1.0.0"))
    api.ok("skill", skill("s", "1.1.0"), allowUnsigned="true")
    browser = {"Accept": "text/html"}
    signed = api.client.get("/skills/s?version=1.0.0", headers=browser).text
    assert (f'Version 1.0.0 signed by <a href="/users/alice">@alice</a> with key <code>{key_id(key.public_key())}'
            in signed)
    assert ">#1</a>" in signed and '<span class="signed">signed</span> <span class="log-index">log #1</span>' in signed
    unsigned = api.client.get("/skills/s", headers=browser).text
    assert "Version 1.1.0 is unsigned · transparency log entry" in unsigned and ">#2</a>" in unsigned


def test_one_request_gives_the_signed_head_the_entries_and_their_proofs(api: Api) -> None:
    key = register(api)
    for n in range(3):
        api.ok("skill", skill("s", f"1.{n}.0"), **signed_fields(key, skill("s", f"1.{n}.0"), "s", f"1.{n}.0"))
    answer = api.client.post("/api/v1/log/proofs", json={"indexes": [3, 1]}).json()
    head = answer["head"]
    assert answer["size"] == head["size"] == 4 and [e["index"] for e in answer["entries"]] == [1, 3]
    for found in answer["entries"]:
        merkle.check_inclusion(found["index"], 4, merkle.leaf_hash(found["entry"].encode()),
                               [bytes.fromhex(p) for p in found["proof"]], bytes.fromhex(head["rootHash"]))
    older = api.client.post("/api/v1/log/proofs", json={"size": 2, "indexes": [1]}).json()
    assert "head" not in older and older["size"] == 2
    bad = api.client.post("/api/v1/log/proofs", json={"size": 2, "indexes": [2]})
    assert bad.status_code == 400 and "outside a tree of size 2" in bad.json()["error"]
