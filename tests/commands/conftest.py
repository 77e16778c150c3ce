"""Fixtures for command tests: the orchestrator's project fixtures, the environment a run's CLI gets, the Ray cluster."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests._ray_cluster import cluster, repo  # noqa: F401 (fixtures: one cluster for the Ray tests, run together)
from tests.orchestrator.conftest import _fast_python3, group_alive, pid_alive, project  # noqa: F401 (fixtures)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The environment of the CLI: its own empty global config folder, STUB_TOKEN set."""
    config = tmp_path / "config"
    config.mkdir()
    base = {k: v for k, v in os.environ.items() if k not in ("STUB_TOKEN", "GH_TOKEN")}
    return {**base, "STRAWPOT_CONFIG_DIR": str(config), "STUB_TOKEN": "t0ken"}
