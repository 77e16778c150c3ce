"""`strawpot verify` checks each locked signer and log index offline, against what installs kept in the cache
folder, and says so plainly when nothing was kept (issue 40 item 4)."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from tests._live_registry import stop_server
from tests.install._provenance import KeptRecord, World, fingerprint, open_world


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    yield from open_world(tmp_path)


def test_verify_checks_the_locked_signers_offline_and_fails_on_each_mismatch(world: World) -> None:
    key = Ed25519PrivateKey.generate()
    world.register(key)
    world.publish("1.0.0", key)
    assert world.run("install", "skill", "kit").returncode == 0
    stop_server(world.live.process)  # from here on, nothing answers at the registry's address

    done = world.run("verify")
    assert done.returncode == 0, done.stderr
    assert "signers: 1 signed version checked offline against the lock and the transparency log, 0 unsigned" in done.stderr
    assert json.loads(world.run("verify", "--json").stdout)["signers"] == {"checked": 1, "unsigned": 0,
                                                                          "not_checked": []}
    lock_path = world.project / "strawpot.lock"
    lock = lock_path.read_text()

    other = fingerprint(Ed25519PrivateKey.generate())
    lock_path.write_text(lock.replace(fingerprint(key), other))
    world.refused(world.run("verify"), f"the lock says signed by admin ({other}), but its log entry and statement "
                                       f"say signed by admin ({fingerprint(key)})")
    (sha,) = [line.split('"')[1] for line in lock.splitlines() if line.startswith("archive = ")]
    lock_path.write_text(lock.replace(sha, "ab" * 32))
    world.refused(world.run("verify"), "the log entry 1 does not match skill kit 1.0.0: its archive sha256 differ")
    lock_path.write_text(lock)

    record = KeptRecord(world, 1)
    stranger = Ed25519PrivateKey.generate().sign(record.fields["statement"].encode())
    record.write(signature=base64.b64encode(stranger).decode())
    world.refused(world.run("verify"), f"skill kit 1.0.0: the signature does not verify with key {fingerprint(key)}")
    record.write(head={**record.head, "size": record.head["size"] + 1})
    world.refused(world.run("verify"), "the log's tree head does not verify")
    record.restore()
    assert world.run("verify").returncode == 0

    record.drop()
    done = world.run("verify")
    assert done.returncode == 0, done.stderr
    assert ("warning: cannot check the signer of skill kit 1.0.0 offline: no statement or log proof is kept in the "
            "cache folder") in done.stderr
    assert json.loads(world.run("verify", "--json").stdout)["signers"]["not_checked"] == [
        {"kind": "skill", "name": "kit", "version": "1.0.0"}]
