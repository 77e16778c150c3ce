"""Every script in benchmarks/ runs its `--smoke` mode, so a benchmark that no longer works fails the suite."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
SCRIPTS = sorted(p.name for p in BENCHMARKS.glob("*.py") if not p.name.startswith("_"))


def test_every_benchmark_is_found() -> None:
    assert "bench_delegation.py" in SCRIPTS and len(SCRIPTS) >= 10


@pytest.mark.parametrize("script", SCRIPTS)
def test_smoke_mode_runs(script: str, tmp_path: Path) -> None:
    env = {**os.environ, "STRAWPOT_HOME": str(tmp_path / "home"), "STRAWPOT_CONFIG_DIR": str(tmp_path / "config"),
           "STRAWPOT_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, str(BENCHMARKS / script), "--smoke"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{script} --smoke failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert done.stdout.strip(), f"{script} --smoke printed no figures"


@pytest.mark.parametrize("script", SCRIPTS)
def test_help_names_the_smoke_flag(script: str, tmp_path: Path) -> None:
    """`--help` prints usage and exits 0 (not a traceback from hand-rolled argument parsing)."""
    done = subprocess.run([sys.executable, str(BENCHMARKS / script), "--help"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"{script} --help failed ({done.returncode}):\n{done.stderr[-3000:]}"
    assert "usage:" in done.stdout and "--smoke" in done.stdout
