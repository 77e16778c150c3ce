"""Publish times in the past for tests of the release cooldown and `audit`: a real registry's SQLite row is
moved back, and its change counter bumped so the running server drops its cached answer (as any write does)."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path


def backdate(data_dir: Path, kind: str, slug: str, version: str, *, days: float) -> None:
    """Make `kind slug version` look published `days` ago in the registry whose data folder is `data_dir`."""
    db = sqlite3.connect(data_dir / "registry.sqlite3", timeout=30)
    try:
        with db:
            changed = db.execute(
                "UPDATE versions SET created_at = ? WHERE version = ? AND package_id ="
                " (SELECT id FROM packages WHERE kind = ? AND slug = ?)",
                (int((time.time() - days * 86400) * 1000), version, kind, slug),
            ).rowcount
            db.execute("UPDATE registry_changes SET seq = seq + 1 WHERE id = 1")
        assert changed == 1, (kind, slug, version)
    finally:
        db.close()
