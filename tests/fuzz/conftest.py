"""The fuzz suite reads no user settings: the config folder is an empty temporary one."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _no_user_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("STRAWPOT_HTTP_TIMEOUT", "STRAWPOT_REGISTRY_DEADLINE", "STRAWPOT_TOKEN", "STRAWPOT_REGISTRY_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("STRAWPOT_CONFIG_DIR", str(tmp_path / "config"))
