"""No-op `strawpot install` (tree and lock already agree) with 100 packages: wall time of the subprocess.

Target: at most 0.1 s. The bare interpreter start-up is printed beside it for scale, and the run checks
that the no-op path imported neither click, rich, httpx nor the resolver (it answers from the entry point).
With `--baseline DIR`, a second strawpot checkout (its `.venv`) installs its own copy of the project and
the two no-ops take turns, so before and after are measured in one run; the ratio is taken pair by pair.

    .venv/bin/python benchmarks/bench_noop_install.py [--packages 100] [--runs 15] [--baseline DIR]
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

from bench_install import compile_sources, paired_ratio, publish_graph, strawpot_program  # noqa: E402

from tests._live_registry import start_registry  # noqa: E402


def wall(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    started = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    return time.perf_counter() - started, done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--packages", type=int, default=100)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, seconds: proves the script still runs")
    parser.add_argument("--baseline", type=Path, metavar="DIR",
                        help="another strawpot checkout with its own .venv, run in turn with this one (before/after)")
    args = parser.parse_args()
    if args.smoke:
        args.packages, args.runs = 3, 2
    programs = {"strawpot": strawpot_program(None)}
    compile_sources()  # as an installed wheel is: without it PYTHONDONTWRITEBYTECODE=1 recompiles every run
    if args.baseline is not None:
        programs["baseline"] = strawpot_program(args.baseline.resolve())
        compile_sources(args.baseline.resolve())

    with tempfile.TemporaryDirectory(prefix="bench-noop-") as tmp:
        scratch = Path(tmp)
        (scratch / "registry").mkdir()
        with start_registry(scratch / "registry") as live:
            role = publish_graph(live.url, live.token, scratch / "packages", args.packages)
            env = {**os.environ, "STRAWPOT_REGISTRY_URL": live.url, "STRAWPOT_CACHE_DIR": str(scratch / "cache"),
                   "STRAWPOT_CONFIG_DIR": str(scratch / "config"), "STRAWPOT_HOME": str(scratch / "global")}
            projects = {}
            for name, program in programs.items():  # each checkout installs (and so indexes) its own tree
                projects[name] = scratch / f"project-{name}"
                projects[name].mkdir()
                _, first = wall([*program, "install", "role", role, "--skip-tools"], projects[name], env)
                if first.returncode != 0:
                    raise SystemExit(first.stderr)
        project = projects["strawpot"]

        # the registry is stopped now: a no-op install must not need it; the checkouts take turns
        times: dict[str, list[float]] = {name: [] for name in programs}
        for _ in range(args.runs):
            for name, program in programs.items():
                elapsed, done = wall([*program, "install"], projects[name], env)
                if done.returncode != 0 or "Already up to date" not in done.stderr:
                    raise SystemExit(f"{name}: not a no-op: {done.returncode}\n{done.stderr}")
                times[name].append(elapsed)
        baseline = [wall([sys.executable, "-c", "pass"], project, env)[0] for _ in range(args.runs)]

        probe = ("import sys, runpy; sys.argv = ['strawpot', 'install']\n"
                 "from strawpot.cli import main\ncode = main(['install'])\n"
                 "heavy = [m for m in ('click', 'rich', 'httpx', 'resolver', 'tomlkit', 'hub_client') if m in sys.modules]\n"
                 "print(','.join(heavy))")
        _, imported = wall([sys.executable, "-c", probe], project, env)

    print(f"no-op `strawpot install` with {args.packages} packages, {args.runs} runs:")
    for name, runs in times.items():
        print(f"  {name:<9} median {statistics.median(runs):.3f}s   min {min(runs):.3f}s   max {max(runs):.3f}s"
              "   (target <= 0.1 s)")
    if "baseline" in times:
        print(f"  baseline/strawpot paired ratio {paired_ratio(times['baseline'], times['strawpot']):.2f}x")
    print(f"  bare `python -c pass`: median {statistics.median(baseline):.3f}s")
    print(f"  heavy modules imported on the no-op path: {imported.stdout.strip() or 'none'}")


if __name__ == "__main__":
    main()
