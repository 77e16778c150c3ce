"""An integration's virtual environment in its package folder: made before its install command runs, with the
stdlib `venv` module, so `pip install` in that command goes there and never into the user's Python."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from collections.abc import Collection
from pathlib import Path

from strawpot.model.errors import StrawpotError
from strawpot.model.tree_facts import VENV_DIR, venv_bin


class VenvFailed(StrawpotError):
    """The virtual environment could not be made (exit 1)."""


def make_venv(package_dir: Path, what: str, shipped: Collection[str]) -> Path:
    """Make `package_dir/.venv` (with pip) and return its bin folder; VenvFailed when it cannot be made, or when
    the package ships files there itself (they would be taken for ours: the interpreter, pip)."""
    clash = sorted(p for p in shipped if p == VENV_DIR or p.startswith(f"{VENV_DIR}/"))
    if clash:
        raise VenvFailed(f"{what} ships {clash[0]}, inside {VENV_DIR}/, the folder strawpot makes its virtual "
                         "environment in; the package was not installed",
                         hint="report it to the package's author: a package may not ship a .venv folder")
    try:
        venv.EnvBuilder(with_pip=True, symlinks=os.name != "nt", clear=True).create(package_dir / VENV_DIR)
    except (OSError, subprocess.CalledProcessError) as exc:
        raise VenvFailed(
            f"cannot make the virtual environment of {what} in {package_dir / VENV_DIR} ({exc}); "
            "the package was not installed",
            hint=f"check that {sys.executable} can make one: `{sys.executable} -m venv /tmp/check` "
                 "(Debian and Ubuntu need the python3-venv package)") from None
    return venv_bin(package_dir)


def relocate(package_dir: Path, old: Path, new: Path) -> None:
    """Point the environment made in `old` (the staged folder) at `new` (where it is swapped in): the scripts in
    its bin folder (pip's first line names the interpreter by its full path) and pyvenv.cfg."""
    before, after = os.fsencode(old), os.fsencode(new)
    folder = venv_bin(package_dir)
    targets = [folder / name for name in os.listdir(folder)] if folder.is_dir() else []
    for path in [*targets, package_dir / VENV_DIR / "pyvenv.cfg"]:
        if path.is_symlink() or not path.is_file():
            continue
        data = path.read_bytes()
        if before in data:
            mode = path.stat().st_mode
            path.write_bytes(data.replace(before, after))
            path.chmod(mode)
