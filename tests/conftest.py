"""Fixtures for every test: the user's data folder is the test's own."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _own_data_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`strawpot start` records its project in the data folder (for `strawpot ui`): never the user's real one."""
    monkeypatch.setenv("STRAWPOT_DATA_DIR", str(tmp_path / "strawpot-data"))
