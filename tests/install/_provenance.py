"""A live registry, a project and the strawpot command with its own config and cache folders, for the provenance
tests (issue 40), and the database edits a dishonest registry would make."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from strawpot.install.provenance import state_path
from strawpot.model.kinds import Kind
from strawpot.model.log_entries import leaf_hex, publish_entry
from strawpot.model.provenance import key_id, private_b64
from tests._cli import strawpot_here
from tests._live_registry import LiveRegistry, start_registry


class World:
    def __init__(self, live: LiveRegistry, tmp: Path) -> None:
        self.live, self.tmp = live, tmp
        self.project = tmp / "proj"
        self.project.mkdir()
        self.cache = tmp / "cache"

    def run(self, *args: str, cwd: Path | None = None, **extra: str) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("STRAWPOT_")}
        env.update(STRAWPOT_REGISTRY_URL=self.live.url, STRAWPOT_TOKEN=self.live.token,
                   STRAWPOT_CONFIG_DIR=str(self.tmp / "config"), STRAWPOT_CACHE_DIR=str(self.cache),
                   NO_COLOR="1", COLUMNS="300")
        env.update(extra)
        return strawpot_here(*args, cwd=cwd or self.project, env=env)

    def publish(self, version: str, key: Ed25519PrivateKey | None, *flags: str, **extra: str) -> None:
        folder = self.tmp / f"src-{version}"
        folder.mkdir()
        (folder / "SKILL.md").write_text(f"---\nname: kit\ndescription: A skill.\nversion: {version}\n---\n\nBody.\n")
        if key is not None:
            extra["STRAWPOT_SIGNING_KEY"] = private_b64(key)
        done = self.run("publish", *flags, str(folder), cwd=self.tmp, **extra)
        assert done.returncode == 0, done.stderr

    def register(self, key: Ed25519PrivateKey, **extra: str) -> None:
        done = self.run("keys", "register", cwd=self.tmp, STRAWPOT_SIGNING_KEY=private_b64(key), **extra)
        assert done.returncode == 0, done.stderr

    def lock_text(self) -> str:
        return (self.project / "strawpot.lock").read_text()

    def refused(self, done: subprocess.CompletedProcess[str], words: str, code: int = 5) -> None:
        assert done.returncode == code, done.stderr
        (error,) = [line for line in done.stderr.splitlines() if line.startswith("error:")]
        assert words in error, done.stderr
        if code == 5:
            assert error.startswith("error: provenance check failed"), error
        assert "Traceback" not in done.stderr

    def nothing_installed(self) -> None:
        assert not (self.project / "strawpot.lock").exists()
        assert not (self.project / ".strawpot" / "skills").exists()

    @property
    def state(self) -> Path:
        return state_path(self.cache, self.live.url)

    def sql(self, query: str, *args: object) -> list[tuple[object, ...]]:
        """Run one statement on the registry's database, as a dishonest operator would, and drop its caches."""
        with sqlite3.connect(self.live.data_dir / "registry.sqlite3") as db:
            rows = db.execute(query, args).fetchall()
            db.execute("UPDATE registry_changes SET seq = seq + 1 WHERE id = 1")
        return rows

    def rewrite(self, version: str, archive_sha256: str, statement: str, signature: str, key: str) -> None:
        """Serve `statement` for `version`, the log entry rewritten to agree (leaf hash too): a registry that lies
        coherently, which a client that never saw its log before can catch only by checking the statement."""
        ((index, stamp),) = self.sql("SELECT v.log_index, v.created_at FROM versions v JOIN packages p ON"
                                     " p.id = v.package_id WHERE p.slug = 'kit' AND v.version = ?", version)
        assert isinstance(index, int) and isinstance(stamp, int)
        ((entry,),) = self.sql("SELECT entry FROM log_entries WHERE idx = ?", index)
        publisher = str(entry).split('"publisher":"')[1].split('"')[0]
        when = int(str(entry).split('"time":')[1].split("}")[0].split(",")[0])
        text = publish_entry(Kind.SKILL, "kit", version, archive_sha256, publisher, statement, key, when)
        self.sql("UPDATE log_entries SET entry = ?, leaf_hash = ? WHERE idx = ?", text, leaf_hex(text), index)
        self.sql("UPDATE versions SET statement = ?, signature = ?, key_id = ?, archive_sha256 = ? WHERE log_index = ?",
                 statement, signature, key, archive_sha256, index)


def fingerprint(key: Ed25519PrivateKey) -> str:
    return key_id(key.public_key())


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def open_world(tmp_path: Path) -> Iterator[World]:
    """The body of each provenance test module's `world` fixture."""
    with start_registry(tmp_path / "data") as live:
        yield World(live, tmp_path)


class KeptRecord:
    """One record of the file an online check keeps (strawpot/install/provenance_kept.py), to read and tamper with."""

    def __init__(self, world: World, index: int) -> None:
        from strawpot.install.provenance_kept import kept_path

        self.path, self.index = kept_path(world.cache, world.live.url), str(index)
        self.original = self.path.read_text()

    @property
    def fields(self) -> dict[str, Any]:
        record: dict[str, Any] = json.loads(self.original)["records"][self.index]
        return record

    @property
    def head(self) -> dict[str, Any]:
        head: dict[str, Any] = json.loads(self.original)["heads"][str(self.fields["head_size"])]
        return head

    def write(self, *, head: dict[str, Any] | None = None, **changes: Any) -> None:
        data = json.loads(self.original)
        data["records"][self.index].update(changes)
        if head is not None:
            data["heads"][str(self.fields["head_size"])] = head
        self.path.write_text(json.dumps(data))

    def restore(self) -> None:
        self.path.write_text(self.original)

    def drop(self) -> None:
        data = json.loads(self.original)
        del data["records"][self.index]
        self.path.write_text(json.dumps(data))
