"""`install --offline` checks each package's signature and log inclusion from what online installs kept in the
cache folder, instead of skipping the check (issue 40 item 4)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from tests._live_registry import stop_server
from tests.install._provenance import KeptRecord, World, fingerprint, open_world


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    yield from open_world(tmp_path)


def fresh(world: World) -> None:
    (world.project / "strawpot.lock").unlink(missing_ok=True)
    shutil.rmtree(world.project / ".strawpot", ignore_errors=True)


def test_an_offline_install_checks_what_was_kept_and_pins_the_signer(world: World) -> None:
    key = Ed25519PrivateKey.generate()
    world.register(key)
    world.publish("1.0.0", key)
    assert world.run("install", "skill", "kit").returncode == 0
    stop_server(world.live.process)
    record = KeptRecord(world, 1)

    fresh(world)
    done = world.run("install", "--offline")
    assert done.returncode == 0, done.stderr
    assert f'signer = {{ key = "{fingerprint(key)}", handle = "admin" }}' in world.lock_text()

    statement = json.loads(record.fields["statement"])
    record.write(statement=json.dumps({**statement, "version": "9.9.9"}, sort_keys=True, separators=(",", ":")))
    fresh(world)
    world.refused(world.run("install", "--offline"), "the log entry 1 does not match skill kit 1.0.0: its statement "
                                                     "sha256 differ")
    world.nothing_installed()

    record.write(public_key=record.head["publicKey"])
    world.refused(world.run("install", "--offline"), "skill kit 1.0.0: the key given for ed25519:")
    world.nothing_installed()

    record.path.write_text('{"heads": [], "records": {"1": 5}}')  # a damaged file is nothing kept, never a traceback
    world.refused(world.run("install", "--offline"), "cannot check the provenance of skill kit 1.0.0 offline", code=6)
    record.drop()
    world.refused(world.run("install", "--offline"), "cannot check the provenance of skill kit 1.0.0 offline", code=6)
    world.nothing_installed()


def test_what_is_kept_reads_back_as_it_was_kept(tmp_path: Path) -> None:
    from strawpot.install.provenance_kept import Kept, keep, kept_path, load_kept

    head = {"size": 3, "rootHash": "ab" * 32, "time": 1, "signature": "c2ln", "publicKey": "a2V5"}
    signed = Kept(1, "ZW50cnk=", ("01" * 32, "02" * 32), head, "c3RhdGVtZW50", "c2lnbmVk", "ed25519:k", "cHVi")
    unsigned = Kept(2, "b3RoZXI=", (), head)
    keep(tmp_path, "http://hub.test", [signed, unsigned])
    assert load_kept(tmp_path, "http://hub.test") == {1: signed, 2: unsigned}
    saved = json.loads(kept_path(tmp_path, "http://hub.test").read_text())
    assert saved["heads"] == {"3": head}  # the head once, named by its size in each record
    assert saved["records"]["1"] == {"entry": "ZW50cnk=", "proof": ["01" * 32, "02" * 32], "statement": "c3RhdGVtZW50",
                                     "signature": "c2lnbmVk", "key_id": "ed25519:k", "public_key": "cHVi",
                                     "head_size": 3}
