"""scripts/bootstrap.sh: the demo's set-up needs Python and PyPI only; the tests' set-up also asks for the system
tools they drive (git, tmux, Chromium, PostgreSQL), with apt-get as root."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests._tour import ROOT, VENV


def _checkout(tmp_path: Path) -> Path:
    """A folder with the two scripts, pyproject.toml (its time kept) and the checkout's up-to-date .venv."""
    stamp = VENV / ".strawpot-installed"  # else bootstrap.sh would reinstall the shared .venv from this copy
    assert stamp.is_file() and (ROOT / "pyproject.toml").stat().st_mtime <= stamp.stat().st_mtime, \
        "the checkout's .venv is not up to date: run `bash scripts/bootstrap.sh` first"
    copy = tmp_path / "copy"
    (copy / "scripts").mkdir(parents=True)
    for name in ("scripts/bootstrap.sh", "scripts/demo.sh", "scripts/test.sh", "pyproject.toml"):
        shutil.copy2(ROOT / name, copy / name)
    (copy / ".venv").symlink_to(VENV)
    return copy


def _bare_path(tmp_path: Path) -> tuple[str, Path]:
    """A PATH with what bootstrap.sh itself runs, no git or tmux, and an apt-get that only records its call."""
    bin_dir, calls = tmp_path / "bin", tmp_path / "apt-get-calls"
    bin_dir.mkdir()
    for tool in ("dirname", "id", "touch", "tail", "cat"):
        os.symlink(shutil.which(tool) or f"/usr/bin/{tool}", bin_dir / tool)
    os.symlink(sys.executable, bin_dir / "python3")
    (bin_dir / "apt-get").write_text(f'#!/bin/sh\necho "$@" >> {calls}\nexit 1\n')
    (bin_dir / "apt-get").chmod(0o755)
    return str(bin_dir), calls


def test_the_demos_set_up_installs_no_system_tool(tmp_path: Path) -> None:
    copy = _checkout(tmp_path)
    path, calls = _bare_path(tmp_path)
    demo = subprocess.run(["/bin/bash", "scripts/bootstrap.sh"], cwd=copy, env={"PATH": path, "HOME": str(tmp_path)},
                          capture_output=True, text=True, timeout=60, check=False)
    assert demo.returncode == 0, demo.stderr
    assert not calls.exists() and demo.stderr == "", demo.stderr
    assert "bash scripts/bootstrap.sh\n" in (copy / "scripts" / "demo.sh").read_text()  # the demo runs just that


def test_the_tests_set_up_asks_for_the_tools_they_drive(tmp_path: Path) -> None:
    copy = _checkout(tmp_path)
    path, calls = _bare_path(tmp_path)
    tests = subprocess.run(["/bin/bash", "scripts/bootstrap.sh", "--test-tools"], cwd=copy,
                           env={"PATH": path, "HOME": str(tmp_path)}, capture_output=True, text=True, timeout=60,
                           check=False)
    assert tests.returncode == 1
    if os.getuid() == 0:  # as CI: apt-get is asked (the stub fails, so it is said)
        assert calls.read_text().startswith("update"), tests.stderr
        assert "error: apt-get could not install git tmux" in tests.stderr, tests.stderr
    else:
        assert "error: the tests need git tmux" in tests.stderr, tests.stderr
    assert "bash scripts/bootstrap.sh --test-tools\n" in (copy / "scripts" / "test.sh").read_text()
