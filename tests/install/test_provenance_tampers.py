"""Each tamper of issue 40's "Bad input" list, made by a dishonest registry in its own database and blob folder,
fails closed on install: exit 5, one line, nothing installed (issue 40 item 4). The registry refuses the same at
publish (tests/registry_server/test_provenance.py); here the client catches a registry that serves them anyway."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from strawpot.model.archive import build_archive
from strawpot.model.log_entries import leaf_hex
from strawpot.model.provenance import sign
from tests.install._provenance import World, fingerprint, open_world, sha256


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    yield from open_world(tmp_path)


def signed_kit(world: World) -> tuple[Ed25519PrivateKey, dict[str, object], str]:
    """kit 1.0.0 published signed by a registered key: the key, the statement's fields, the archive sha256."""
    key = Ed25519PrivateKey.generate()
    world.register(key)
    world.publish("1.0.0", key)
    ((statement, archive),) = world.sql("SELECT statement, archive_sha256 FROM versions")
    return key, json.loads(str(statement)), str(archive)


def blob(world: World, digest: str) -> Path:
    return world.live.data_dir / "blobs" / digest[:2] / digest


def test_an_archive_swapped_after_signing(world: World) -> None:
    _, _, archive = signed_kit(world)
    other = build_archive({"SKILL.md": b"---\nname: kit\ndescription: A skill.\nversion: 1.0.0\n---\n\nEvil.\n"})
    blob(world, archive).write_bytes(other)  # the registry serves other bytes under the signed sha256
    done = world.run("install", "skill", "kit")
    assert done.returncode == 5 and "Traceback" not in done.stderr, done.stderr
    (error,) = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert "sha256" in error and archive[:12] in error, error
    world.nothing_installed()

    # and the same bytes announced under their own sha256: the log entry still names the signed archive
    blob(world, sha256(other)).parent.mkdir(parents=True, exist_ok=True)
    blob(world, sha256(other)).write_bytes(other)
    world.sql("UPDATE versions SET archive_sha256 = ?", sha256(other))
    world.refused(world.run("install", "skill", "kit"),
                  "the log entry 1 does not match skill kit 1.0.0: its archive sha256 differ")
    world.nothing_installed()


def test_a_statement_over_another_version_or_archive_or_by_an_unregistered_key(world: World) -> None:
    """The registry rewrites the statement and its log entry to agree: a client new to this log catches it by the
    statement itself."""
    key, body, archive = signed_kit(world)
    for changes, words in (({"version": "1.1.0"}, "the statement names another version or archive"),
                           ({"archiveSha256": "ab" * 32}, "the statement names another version or archive")):
        statement, signature = sign(key, {**body, **changes})
        world.rewrite("1.0.0", archive, statement, signature, fingerprint(key))
        world.refused(world.run("install", "skill", "kit"), f"skill kit 1.0.0: {words}")
        world.nothing_installed()

    stranger = Ed25519PrivateKey.generate()
    statement, signature = sign(stranger, body)
    world.rewrite("1.0.0", archive, statement, signature, fingerprint(stranger))
    world.refused(world.run("install", "skill", "kit"),
                  f"skill kit 1.0.0: the key {fingerprint(stranger)} is not registered to admin")
    world.nothing_installed()


def test_a_statement_by_a_key_revoked_before_the_publish(world: World) -> None:
    key, _, _ = signed_kit(world)
    world.sql("UPDATE publisher_keys SET revoked_at = 1 WHERE key_id = ?", fingerprint(key))
    world.refused(world.run("install", "skill", "kit"),
                  f"skill kit 1.0.0: the key {fingerprint(key)} was revoked by admin before this version was published")
    world.nothing_installed()


def test_a_log_rolled_back_or_rewritten_after_a_client_saw_it(world: World) -> None:
    key, _, _ = signed_kit(world)
    assert world.run("install", "skill", "kit").returncode == 0
    world.publish("1.1.0", key)
    assert world.run("update", "--all").returncode == 0  # this machine has now seen a tree of 3 entries
    lock = world.lock_text()

    # the registry drops its last entry, and the version it logged for it: the tree head is smaller than one seen
    world.sql("DELETE FROM log_entries WHERE idx = 2")
    world.sql("UPDATE log_size SET size = 2")
    world.sql("DELETE FROM versions WHERE version = '1.1.0'")
    world.refused(world.run("update", "--all"), "the log shrank from 3 entries (seen before) to 2")
    # ...and keeps the version, whose log index is now outside its tree
    world.sql("UPDATE log_size SET size = 3")
    world.publish("1.2.0", None, "--allow-unsigned")
    world.sql("DELETE FROM log_entries WHERE idx = 3")
    world.sql("UPDATE log_size SET size = 3")
    world.refused(world.run("update", "--all"), "the log cannot prove the entries its versions name (it answered: "
                                                "index 3 is outside a tree of size 3)")
    assert world.lock_text() == lock


def test_a_log_rewritten_after_a_client_saw_it_fails_the_consistency_proof(world: World) -> None:
    key, _, _ = signed_kit(world)
    assert world.run("install", "skill", "kit").returncode == 0
    lock = world.lock_text()
    # the registry rewrites an entry this machine saw, coherently (its leaf hash too), and grows
    ((entry,),) = world.sql("SELECT entry FROM log_entries WHERE idx = 0")
    forged = str(entry).replace('"time":', '"time":1')
    world.sql("UPDATE log_entries SET entry = ?, leaf_hash = ? WHERE idx = 0", forged, leaf_hex(forged))
    world.publish("1.1.0", key)
    world.refused(world.run("update", "--all"), "the tree of size 3 does not extend the one of size 2")
    assert world.lock_text() == lock


def test_a_log_entry_whose_hash_does_not_match(world: World) -> None:
    signed_kit(world)
    ((entry,),) = world.sql("SELECT entry FROM log_entries WHERE idx = 1")
    world.sql("UPDATE log_entries SET entry = ? WHERE idx = 1", str(entry).replace('"time":', '"time":1'))
    world.refused(world.run("install", "skill", "kit"), "skill kit 1.0.0: log index 1 is not included in the tree")
    world.nothing_installed()
