"""Start-up of `strawpot` commands as paired ratios against a bare `python -c pass`: `--version`, `--help`, the
read-only commands on a project of 100 installed packages, and a no-op `install`.

Each round runs `python -c pass` and then the command (of each checkout, with `--baseline DIR`), so both see the
same load; a command's figure is the median over rounds of its time divided by the bare interpreter's time of that
round. The project is built as bench_install.py builds its graph (a role whose closure is 100 packages, installed
from a live registry that is stopped before the timing: none of these commands may need it).
Targets (issue 39): `--version`, `--help` <= 2.5x; read-only commands <= 4x; no-op `install` <= 4x.
Results: benchmarks/results/startup.txt.

    .venv/bin/python benchmarks/bench_startup.py [--packages 100] [--runs 15] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_install import compile_sources, publish_graph, strawpot_program  # noqa: E402
from bench_noop_install import wall as timed  # noqa: E402

from tests._live_registry import start_registry  # noqa: E402

# (arguments, target ratio); `why` asks about a package deep in the graph
COMMANDS: list[tuple[list[str], float]] = [
    (["--version"], 2.5), (["--help"], 2.5),
    (["tree"], 4.0), (["why", "skill", "bench-skill-050"], 4.0), (["list"], 4.0), (["sessions"], 4.0),
    (["config", "show"], 4.0), (["verify"], 4.0),
    (["install"], 4.0),
]
# no command: the imports `verify` cannot do without (the lock and the kept proofs are JSON, paths, the tree head's
# Ed25519 signature), so its figure can be read against what any Python program checking them would start with
FLOOR = "import json, pathlib, cryptography.hazmat.primitives.asymmetric.ed25519"


def wall(cmd: list[str], cwd: Path, env: dict[str, str]) -> float:
    """bench_noop_install's timing of one process, which must succeed here."""
    elapsed, done = timed(cmd, cwd, env)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--packages", type=int, default=100)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, seconds: proves the script still runs")
    parser.add_argument("--baseline", type=Path, metavar="DIR",
                        help="another strawpot checkout with its own .venv, run in turn with this one (before/after)")
    args = parser.parse_args()
    if args.smoke:
        args.packages, args.runs = 3, 1
    commands = [(argv if argv[:1] != ["why"] or args.packages > 51 else ["why", "skill", "bench-skill-000"], target)
                for argv, target in COMMANDS]
    programs = {"strawpot": strawpot_program(None)}
    compile_sources()  # as an installed wheel is: without it PYTHONDONTWRITEBYTECODE=1 recompiles every run
    if args.baseline is not None:
        programs["baseline"] = strawpot_program(args.baseline.resolve())
        compile_sources(args.baseline.resolve())

    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        scratch = Path(tmp)
        (scratch / "registry").mkdir()
        env = {**os.environ, "STRAWPOT_CACHE_DIR": str(scratch / "cache"), "STRAWPOT_CONFIG_DIR": str(scratch / "config"),
               "STRAWPOT_HOME": str(scratch / "global"), "NO_COLOR": "1"}
        projects: dict[str, Path] = {}
        with start_registry(scratch / "registry") as live:
            role = publish_graph(live.url, live.token, scratch / "packages", args.packages)
            env["STRAWPOT_REGISTRY_URL"] = live.url
            for name, program in programs.items():  # each checkout installs (and so indexes) its own tree
                projects[name] = scratch / f"project-{name}"
                projects[name].mkdir()
                wall([*program, "install", "role", role, "--skip-tools"], projects[name], env)
        bare = [sys.executable, "-c", "pass"]
        ratios: dict[tuple[str, str], list[float]] = {}
        seconds: dict[tuple[str, str], list[float]] = {}
        floor: list[float] = []
        verify_floor: list[float] = []
        for _ in range(args.runs):
            base = wall(bare, scratch, env)
            verify_floor.append(wall([sys.executable, "-c", FLOOR], scratch, env) / base)
            for argv, _target in commands:
                for name, program in programs.items():
                    base = wall(bare, projects[name], env)
                    took = wall([*program, *argv], projects[name], env)
                    floor.append(base)
                    ratios.setdefault((name, argv[0]), []).append(took / base)
                    seconds.setdefault((name, argv[0]), []).append(took)

    load = os.getloadavg()
    print(f"start-up against `python -c pass` ({statistics.median(floor) * 1000:.0f} ms median), {args.packages} "
          f"packages, median of {args.runs} paired ratios; load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} "
          f"on {os.cpu_count()} cores")
    for argv, target in commands:
        line = f"  {' '.join(argv):<28}"
        for name in programs:
            ratio = statistics.median(ratios[(name, argv[0])])
            took = statistics.median(seconds[(name, argv[0])])
            line += f"  {name} {took * 1000:5.0f} ms {ratio:5.1f}x"
        ratio = statistics.median(ratios[("strawpot", argv[0])])
        print(f"{line}   target <= {target:.1f}x {'ok' if ratio <= target else 'MISSED'}")
    print(f"  (python -c '{FLOOR}': {statistics.median(verify_floor):.1f}x, before verify reads a file)")


if __name__ == "__main__":
    main()
