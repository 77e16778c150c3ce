"""Install checks each package's signature, log inclusion and the log's consistency, and pins the signer in the
lock; each tamper fails closed (exit 5, one line, lock and tree unchanged) against a live registry (issue 40 item 4)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from strawpot.install.provenance import state_path
from strawpot.model.provenance import key_id, private_b64, public_b64
from tests._cli import strawpot
from tests._live_registry import LiveRegistry, start_registry


class World:
    def __init__(self, live: LiveRegistry, tmp: Path) -> None:
        self.live, self.tmp = live, tmp
        self.project = tmp / "proj"
        self.project.mkdir()

    def run(self, *args: str, cwd: Path | None = None, **extra: str) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("STRAWPOT_")}
        env.update(STRAWPOT_REGISTRY_URL=self.live.url, STRAWPOT_TOKEN=self.live.token,
                   STRAWPOT_CONFIG_DIR=str(self.tmp / "config"), STRAWPOT_CACHE_DIR=str(self.tmp / "cache"),
                   NO_COLOR="1", COLUMNS="300", **extra)
        return strawpot(*args, cwd=cwd or self.project, env=env)

    def publish(self, version: str, key: Ed25519PrivateKey | None, *flags: str) -> None:
        folder = self.tmp / f"src-{version}"
        folder.mkdir()
        (folder / "SKILL.md").write_text(f"---\nname: kit\ndescription: A skill.\nversion: {version}\n---\n\nBody.\n")
        extra = {"STRAWPOT_SIGNING_KEY": private_b64(key)} if key else {}
        done = self.run("publish", *flags, str(folder), cwd=self.tmp, **extra)
        assert done.returncode == 0, done.stderr

    def register(self, key: Ed25519PrivateKey) -> None:
        assert self.run("keys", "register", cwd=self.tmp, STRAWPOT_SIGNING_KEY=private_b64(key)).returncode == 0

    def lock_text(self) -> str:
        return (self.project / "strawpot.lock").read_text()

    def refused(self, done: subprocess.CompletedProcess[str], words: str) -> None:
        assert done.returncode == 5, done.stderr
        (error,) = [line for line in done.stderr.splitlines() if line.startswith("error:")]
        assert error.startswith("error: provenance check failed") and words in error, done.stderr
        assert "Traceback" not in done.stderr

    @property
    def state(self) -> Path:
        return state_path(self.tmp / "cache", self.live.url)


@pytest.fixture
def world(tmp_path: Path) -> World:
    with start_registry(tmp_path / "data") as live:
        yield World(live, tmp_path)


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

    other = Ed25519PrivateKey.generate()
    world.register(other)
    world.publish("1.1.0", other)
    world.refused(world.run("update", "--all"), "is signed by admin (ed25519:")
    assert world.lock_text() == lock

    world.publish("1.2.0", None, "--allow-unsigned")
    world.refused(world.run("update", "--all"), "arrives unsigned, but 1.0.0 was signed by admin")
    assert world.lock_text() == lock


def test_a_rolled_back_or_forked_log_and_a_changed_entry_fail_closed(world: World) -> None:
    key = Ed25519PrivateKey.generate()
    world.register(key)
    world.publish("1.0.0", key)
    assert world.run("install", "skill", "kit").returncode == 0
    seen = json.loads(world.state.read_text())
    lock = world.lock_text()

    world.state.write_text(json.dumps({**seen, "size": seen["size"] + 5}))
    world.refused(world.run("update", "--all"), "the log shrank from 7 entries")
    world.state.write_text(json.dumps({**seen, "root_hash": "00" * 32}))
    world.refused(world.run("update", "--all"), "two different trees of the same size 2")
    world.publish("1.1.0", key)  # the log grows: now a consistency proof is asked for, from a forked root
    world.state.write_text(json.dumps({**seen, "size": 1, "root_hash": "11" * 32}))
    world.refused(world.run("update", "--all"), "does not extend")
    assert world.lock_text() == lock

    world.state.write_text(json.dumps(seen))
    with sqlite3.connect(world.live.data_dir / "registry.sqlite3") as db:
        db.execute("UPDATE log_entries SET entry = replace(entry, '\"version\":\"1.1.0\"', '\"version\":\"1.1.1\"')"
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
