"""Install checks each package's signature, log inclusion and the log's consistency, and pins the signer in the
lock; each tamper fails closed (exit 5, one line, lock and tree unchanged) against a live registry (issue 40 item 4)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from strawpot.model.provenance import key_id, public_b64
from tests.install._provenance import World, open_world


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    yield from open_world(tmp_path)


def test_a_signed_install_pins_the_signer_and_later_changes_fail_closed(world: World) -> None:
    key = Ed25519PrivateKey.generate()
    world.register(key)
    world.publish("1.0.0", key)
    done = world.run("install", "skill", "kit")
    assert done.returncode == 0, done.stderr
    lock = world.lock_text()
    assert f'signer = {{ key = "{key_id(key.public_key())}", handle = "admin" }}' in lock
    assert "log-index = 1" in lock  # entry 0: the key's registration
    seen = json.loads(world.state.read_text())
    assert seen["size"] == 2 and seen["public_key"]

    bob = world.live.create_token("bob")
    world.sql("UPDATE packages SET owner_id = (SELECT id FROM users WHERE handle = 'bob') WHERE slug = 'kit'")
    bobs = Ed25519PrivateKey.generate()
    world.register(bobs, STRAWPOT_TOKEN=bob)
    world.publish("1.1.0", bobs, STRAWPOT_TOKEN=bob)
    world.refused(world.run("update", "--all"), "skill kit 1.1.0 is signed by bob (ed25519:")
    assert world.lock_text() == lock
    world.publish("1.2.0", None, "--allow-unsigned", STRAWPOT_TOKEN=bob)
    world.refused(world.run("update", "--all"), "arrives unsigned, but 1.0.0 was signed by admin")
    assert world.lock_text() == lock


def test_a_new_key_of_the_same_publisher_is_a_rotation_named_in_the_output(world: World) -> None:
    """Key rotation (issue 40): a new key registered to the same account, its registration in the signed log, is
    accepted and named; a registration the log does not show is refused."""
    old, new = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    world.register(old)
    world.publish("1.0.0", old)
    assert world.run("install", "skill", "kit").returncode == 0
    lock = world.lock_text()
    world.register(new)  # log entry 2
    world.publish("1.1.0", new)

    world.sql("UPDATE publisher_keys SET log_index = 1 WHERE key_id = ?", key_id(new.public_key()))
    world.refused(world.run("update", "--all"), "and the log entry 1 does not register the new key to admin")
    assert world.lock_text() == lock
    world.sql("UPDATE publisher_keys SET log_index = 2 WHERE key_id = ?", key_id(new.public_key()))

    done = world.run("update", "--all")
    assert done.returncode == 0, done.stderr
    assert (f"warning: skill kit 1.1.0 is signed by a new key of admin, {key_id(new.public_key())} (registered in "
            f"log entry 2); 1.0.0 was signed by {key_id(old.public_key())}: the lock now pins the new key") in done.stderr
    assert f'signer = {{ key = "{key_id(new.public_key())}", handle = "admin" }}' in world.lock_text()


def test_a_rolled_back_or_forked_log_and_a_changed_entry_fail_closed(world: World) -> None:
    key = Ed25519PrivateKey.generate()
    world.register(key)
    world.publish("1.0.0", key)
    assert world.run("install", "skill", "kit").returncode == 0
    seen = json.loads(world.state.read_text())
    lock = world.lock_text()

    world.state.write_text(json.dumps({**seen, "size": "many"}))
    world.refused(world.run("update", "--all"), "the last tree head seen is unreadable in the cache folder")
    world.state.write_text(json.dumps({**seen, "size": seen["size"] + 5}))
    world.refused(world.run("update", "--all"), "the log shrank from 7 entries")
    world.state.write_text(json.dumps({**seen, "root_hash": "00" * 32}))
    world.refused(world.run("update", "--all"), "two different trees of the same size 2")
    world.publish("1.1.0", key)  # the log grows: now a consistency proof is asked for, from a forked root
    world.state.write_text(json.dumps({**seen, "size": 1, "root_hash": "11" * 32}))
    world.refused(world.run("update", "--all"), "does not extend")
    assert world.lock_text() == lock

    world.state.write_text(json.dumps(seen))
    world.sql("UPDATE log_entries SET entry = replace(entry, '\"version\":\"1.1.0\"', '\"version\":\"1.1.1\"')"
              " WHERE idx = 2")
    world.refused(world.run("update", "--all"), "is not included in the tree")
    assert world.lock_text() == lock


def test_the_pinned_log_key_and_require_signatures(world: World) -> None:
    world.publish("1.0.0", None)
    world.refused(world.run("install", "skill", "kit", STRAWPOT_INSTALL_LOG_KEY=public_b64(Ed25519PrivateKey.generate())),
                  "the log is signed by key ed25519:")
    world.refused(world.run("install", "skill", "kit", STRAWPOT_INSTALL_REQUIRE_SIGNATURES="true"),
                  "skill kit 1.0.0 is unsigned and [install] require_signatures is set")
    assert not (world.project / "strawpot.lock").exists()
    done = world.run("install", "skill", "kit")
    assert done.returncode == 0, done.stderr
    assert "signer =" not in world.lock_text() and "log-index = 0" in world.lock_text()
