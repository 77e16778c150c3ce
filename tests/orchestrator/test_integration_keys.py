"""Capability keys: one per integration, kept across restarts, private, and only a known key names one."""

from __future__ import annotations

import stat
from pathlib import Path

from orchestrator.integration_keys import KEYS_FILE, api_url, key_for, name_for_key


def test_a_key_is_minted_once_kept_private_and_names_its_integration(tmp_path: Path) -> None:
    first = key_for(tmp_path, "telegram")
    assert key_for(tmp_path, "telegram") == first != key_for(tmp_path, "slack")
    assert name_for_key(tmp_path, first) == "telegram"
    assert name_for_key(tmp_path, first[:-1] + ("A" if first[-1] != "A" else "B")) is None
    assert name_for_key(tmp_path, "../../etc") is None
    keys = tmp_path / "integrations" / KEYS_FILE
    assert stat.S_IMODE(keys.stat().st_mode) == 0o600
    assert stat.S_IMODE(keys.parent.stat().st_mode) == 0o700
    assert api_url("http://127.0.0.1:5/", first) == f"http://127.0.0.1:5/i/{first}"


def test_a_broken_keys_file_mints_new_keys_instead_of_failing(tmp_path: Path) -> None:
    (tmp_path / "integrations").mkdir()
    (tmp_path / "integrations" / KEYS_FILE).write_text('{"telegram": "short"')
    assert name_for_key(tmp_path, "x" * 43) is None
    assert len(key_for(tmp_path, "telegram")) == 43
