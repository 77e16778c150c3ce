"""The README demo: validate the fixture packages (grows with the registry, install and start)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STRAWPOT = str(ROOT / ".venv" / "bin" / "strawpot")


def run(*args: str) -> None:
    print(f"$ strawpot {' '.join(args)}", flush=True)
    subprocess.run([STRAWPOT, *args], check=True, cwd=ROOT)


def main() -> int:
    for kind in ("skills", "roles", "agents"):
        for pkg in sorted((ROOT / "fixtures" / kind).glob("*")):
            run("validate", str(pkg.relative_to(ROOT)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
