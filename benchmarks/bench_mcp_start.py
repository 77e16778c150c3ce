"""`strawpot mcp serve` start-up: wall time from spawning the server to its answers to `initialize` and then
`tools/list`, what an agent CLI waits for each time it starts. The bare interpreter is printed beside it for scale.

With `--baseline DIR`, a second strawpot checkout (its `.venv`) serves in turn with this one, so before and after
are measured in one run on the same load; the ratio is taken pair by pair. Results: benchmarks/results/mcp_start.txt.

    .venv/bin/python benchmarks/bench_mcp_start.py [--runs 15] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_install import compile_sources, paired_ratio, strawpot_program  # noqa: E402

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}}
TOOLS = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


def answer(process: subprocess.Popen[bytes], timeout: float = 60) -> dict[str, object]:
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], timeout)
    line = process.stdout.readline() if ready else b""
    if not line:
        raise SystemExit(f"no answer from the server within {timeout:.0f} s")
    found: dict[str, object] = json.loads(line)
    return found


def one_start(program: list[str], project: Path, env: dict[str, str]) -> tuple[float, float]:
    """Seconds from spawn to the initialize answer, and to the tools/list answer after it."""
    started = time.perf_counter()
    process = subprocess.Popen([*program, "mcp", "serve", "--project", str(project)], cwd=project, env=env,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert process.stdin is not None
    try:
        process.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
        process.stdin.flush()
        first = answer(process)
        initialized = time.perf_counter() - started
        process.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n'
                            + json.dumps(TOOLS).encode() + b"\n")
        process.stdin.flush()
        tools = answer(process)
        listed = time.perf_counter() - started
    finally:
        process.stdin.close()
        process.wait(30)
    if "result" not in first or "result" not in tools:
        raise SystemExit(f"unexpected answers: {first} {tools}")
    return initialized, listed


def bare_python(runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--smoke", action="store_true", help="two runs: proves the script still runs")
    parser.add_argument("--baseline", type=Path, metavar="DIR",
                        help="another strawpot checkout with its own .venv, run in turn with this one (before/after)")
    args = parser.parse_args()
    if args.smoke:
        args.runs = 2
    programs = {"strawpot": strawpot_program(None)}
    compile_sources()  # as an installed wheel is: without it PYTHONDONTWRITEBYTECODE=1 recompiles every run
    if args.baseline is not None:
        programs["baseline"] = strawpot_program(args.baseline.resolve())
        compile_sources(args.baseline.resolve())
    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as tmp:
        project = Path(tmp) / "proj"
        project.mkdir()
        (project / "strawpot.toml").write_text("", encoding="utf-8")
        env = {**os.environ, "STRAWPOT_CONFIG_DIR": str(Path(tmp) / "config"), "STRAWPOT_HOME": str(Path(tmp) / "home")}
        results: dict[str, list[tuple[float, float]]] = {name: [] for name in programs}
        for _ in range(args.runs):
            for name, program in programs.items():  # taking turns, so both see the same load
                results[name].append(one_start(program, project, env))
    print(f"python -c pass: {bare_python(args.runs) * 1000:.0f} ms (median of {args.runs})")
    for name, times in results.items():
        first, listed = (statistics.median(t[i] for t in times) for i in (0, 1))
        print(f"{name:9} initialize answered {first * 1000:6.0f} ms, tools/list {listed * 1000:6.0f} ms "
              f"(median of {args.runs}; min {min(t[0] for t in times) * 1000:.0f} ms)")
    if "baseline" in results:
        ratio = paired_ratio([t[1] for t in results["baseline"]], [t[1] for t in results["strawpot"]])
        print(f"baseline / strawpot to tools/list: {ratio:.1f}x (median of pairs)")


if __name__ == "__main__":
    main()
