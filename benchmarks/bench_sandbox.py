"""Overhead of the bubblewrap sandbox on a no-op agent spawn: the runtime starts `true` (and `python -c pass`)
N times unconfined and N times inside the walls a run gives its agents, and waits for each.

Target: under 30 ms per spawn (the median of the confined spawns minus the median of the unconfined ones).

    .venv/bin/python benchmarks/bench_sandbox.py [--runs 50]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from orchestrator.confine import UNCONFINED, Confined  # noqa: E402
from orchestrator.runtime import start_process  # noqa: E402
from sandbox.walls import BwrapSandbox, SandboxSettings  # noqa: E402
from strawpot.model.wrapper import LaunchSpec  # noqa: E402

TARGET_MS = 30.0


def spawn_ms(cmd: list[str], workdir: Path, workspace: Path, confined: Confined, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        process = start_process(LaunchSpec(cmd, str(workdir)), {"PATH": "/usr/bin:/bin"}, workspace, confined=confined)
        code = process.wait()
        times.append((time.perf_counter() - started) * 1000)
        assert code == 0, process.log_tail()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, seconds: proves the script still runs")
    args = parser.parse_args()
    if args.smoke:
        args.runs = 2
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        workdir, workspace, home = root / "work", root / "ws", root / "home"
        for folder in (workdir, workspace, home / ".ssh"):
            folder.mkdir(parents=True)
        sandbox = SandboxSettings("bwrap", network=False, sandbox=BwrapSandbox())
        sandbox.sandbox.check()
        walls = sandbox.walls(home, writable=(workdir, workspace), readable=(root,))
        confined = Confined(sandbox.sandbox, walls)
        for label, cmd in (("true", ["true"]), ("python -c pass", [sys.executable, "-c", "pass"])):
            spawn_ms(cmd, workdir, workspace, UNCONFINED, 1 if args.smoke else 3)  # warm the page cache
            plain = statistics.median(spawn_ms(cmd, workdir, workspace, UNCONFINED, args.runs))
            boxed = statistics.median(spawn_ms(cmd, workdir, workspace, confined, args.runs))
            verdict = "ok" if boxed - plain < TARGET_MS else "OVER TARGET"
            print(f"{label:>16}: unconfined {plain:6.2f} ms, bwrap {boxed:6.2f} ms, "
                  f"overhead {boxed - plain:6.2f} ms per spawn (target < {TARGET_MS:g} ms: {verdict})")


if __name__ == "__main__":
    main()
