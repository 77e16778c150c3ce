"""`bash scripts/demo.sh` on a fresh machine: a copy of the checkout's tracked files with no .venv, pip and uv with
empty caches and none of this machine's pip settings (local wheels, extra indexes), so everything comes from PyPI.
Times the set-up (scripts/bootstrap.sh) and the demo (scripts/demo.py) apart, and sizes the .venv it made.

With `--baseline DIR`, another checkout (e.g. the commit before a change) runs the same way right after this one.
`--warm` keeps this machine's caches and pip settings; `--smoke` is the set-up alone, warm. Results:
benchmarks/results/demo.txt.

    .venv/bin/python benchmarks/bench_demo.py [--baseline DIR] [--warm]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def tracked_copy(checkout: Path, into: Path) -> None:
    """The files `git ls-files` names in `checkout`, as they are in its working tree."""
    names = subprocess.run(["git", "ls-files", "-z"], cwd=checkout, check=True, capture_output=True).stdout
    for name in filter(None, names.decode().split("\0")):
        source = checkout / name
        if source.is_file():
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, into / name, follow_symlinks=False)


def fresh_env(scratch: Path, *, warm: bool) -> dict[str, str]:
    """A shell on a fresh machine: this PATH less any virtual environment, and (cold) empty caches, no pip config."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if p and not (Path(p) / "activate").exists())
    if not warm:
        env = {k: v for k, v in env.items() if not k.startswith(("PIP_", "UV_"))}
        env.update(PIP_CONFIG_FILE=os.devnull, PIP_CACHE_DIR=str(scratch / "pip-cache"),
                   UV_CACHE_DIR=str(scratch / "uv-cache"))
    return env


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise SystemExit(f"`{' '.join(command)}` in {cwd} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return time.perf_counter() - started


def size_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink()) / 1e6


def one_checkout(checkout: Path, *, warm: bool, smoke: bool) -> str:
    with tempfile.TemporaryDirectory(prefix="bench-demo-", dir="/tmp") as name:
        scratch = Path(name)
        copy = scratch / "checkout"
        tracked_copy(checkout, copy)
        env = fresh_env(scratch, warm=warm)
        setup = timed(["bash", "scripts/bootstrap.sh"], copy, env)
        demo = 0.0 if smoke else timed([str(copy / ".venv" / "bin" / "python"), "scripts/demo.py"], copy, env)
        venv = size_mb(copy / ".venv")
    if smoke:
        return f"{checkout}: set-up alone {setup:5.1f} s; .venv {venv:4.0f} MB"
    return f"{checkout}: demo.sh {setup + demo:6.1f} s (set-up {setup:5.1f} s, demo {demo:5.1f} s); .venv {venv:4.0f} MB"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="another checkout, run the same way after this one")
    parser.add_argument("--warm", action="store_true", help="this machine's pip/uv caches and pip settings")
    parser.add_argument("--smoke", action="store_true", help="the set-up alone, warm (a quick check that it runs)")
    args = parser.parse_args()
    warm = args.warm or args.smoke
    lines = [f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores, "
             f"{'warm caches' if warm else 'cold: empty pip and uv caches, PyPI only'}"]
    for checkout in [REPO, *([args.baseline.resolve()] if args.baseline else [])]:
        lines.append(one_checkout(checkout, warm=warm, smoke=args.smoke))
        print(lines[-1], flush=True)
    lines.append(f"load average after: {os.getloadavg()[0]:.1f}")
    print(lines[0], lines[-1], sep="\n")
    if not args.smoke:
        results = REPO / "benchmarks" / "results" / "demo.txt"
        results.write_text(f"{' '.join(sys.argv[1:]) or '(no flags)'}\n" + "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
