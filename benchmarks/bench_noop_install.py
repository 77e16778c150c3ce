"""No-op `strawpot install` (tree and lock already agree) with 100 packages: wall time of the subprocess.

Target: under 0.15 s. The bare interpreter start-up is printed beside it for scale, and the run checks
that the no-op path imported neither click, rich, httpx nor the resolver (it answers from the entry point).

    .venv/bin/python benchmarks/bench_noop_install.py [--packages 100] [--runs 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_install import publish_graph  # noqa: E402

from tests._live_registry import start_registry  # noqa: E402

BIN = Path(sys.executable).parent


def wall(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    started = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    return time.perf_counter() - started, done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--packages", type=int, default=100)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, seconds: proves the script still runs")
    args = parser.parse_args()
    if args.smoke:
        args.packages, args.runs = 3, 2

    with tempfile.TemporaryDirectory(prefix="bench-noop-") as tmp:
        scratch = Path(tmp)
        (scratch / "registry").mkdir()
        with start_registry(scratch / "registry") as live:
            role = publish_graph(live.url, live.token, scratch / "packages", args.packages)
            project = scratch / "project"
            project.mkdir()
            env = {**os.environ, "STRAWPOT_REGISTRY_URL": live.url, "STRAWPOT_CACHE_DIR": str(scratch / "cache"),
                   "STRAWPOT_CONFIG_DIR": str(scratch / "config"), "STRAWPOT_HOME": str(scratch / "global")}
            _, first = wall([str(BIN / "strawpot"), "install", "role", role, "--skip-tools"], project, env)
            if first.returncode != 0:
                raise SystemExit(first.stderr)

        # the registry is stopped now: a no-op install must not need it
        cmd = [str(BIN / "strawpot"), "install"]
        times = []
        for _ in range(args.runs):
            elapsed, done = wall(cmd, project, env)
            if done.returncode != 0 or "Already up to date" not in done.stderr:
                raise SystemExit(f"not a no-op: {done.returncode}\n{done.stderr}")
            times.append(elapsed)
        baseline = [wall([sys.executable, "-c", "pass"], project, env)[0] for _ in range(args.runs)]

        probe = ("import sys, runpy; sys.argv = ['strawpot', 'install']\n"
                 "from strawpot.cli import main\ncode = main(['install'])\n"
                 "heavy = [m for m in ('click', 'rich', 'httpx', 'resolver', 'tomlkit', 'hub_client') if m in sys.modules]\n"
                 "print(','.join(heavy))")
        _, imported = wall([sys.executable, "-c", probe], project, env)

    print(f"no-op `strawpot install` with {args.packages} packages, {args.runs} runs:")
    print(f"  median {statistics.median(times):.3f}s   min {min(times):.3f}s   max {max(times):.3f}s   (target < 0.15 s)")
    print(f"  bare `python -c pass`: median {statistics.median(baseline):.3f}s")
    print(f"  heavy modules imported on the no-op path: {imported.stdout.strip() or 'none'}")


if __name__ == "__main__":
    main()
