"""p50/p99 time of `strawpot ui`'s pages over a project with 1,000 recorded runs (in-process TestClient).

The project page lists the newest 50 runs (a "more" link pages on): run ids name their start time, so only
those 50 session.json files are read (and then cached by mtime). Every request is counted, the first included.
The "asking" line is the list's worst case for open askUser questions: the 50 runs it shows all run, each with
two questions (one answered), so each row lists its run's `asks/` folder on every request.

    .venv/bin/python benchmarks/bench_ui.py [--runs 1000] [--requests 100] [--smoke]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from starlette.testclient import TestClient

from dashboard.app import create_app, home_path
from dashboard.security import COOKIE
from orchestrator import questions

SECRET = "bench"


def make_project(root: Path, runs: int, asking: int = 0) -> list[str]:
    """`runs` ended runs of 4 agents; the newest `asking` of them still running, each with an open question."""
    root.mkdir(exist_ok=True)
    (root / "strawpot.toml").write_text("")
    ids = []
    sessions = root / ".strawpot" / "sessions"
    for i in range(runs):
        run_id = time.strftime("run_%Y%m%d_%H%M%S_", time.gmtime(1.7e9 + 60 * i)) + f"{i:06x}"
        ids.append(run_id)
        folder = sessions / run_id
        folder.mkdir(parents=True)
        agents = [{"agent_id": f"a{i}-{j}", "role": "implementer", "agent": "stub", "parent": None if j == 0
                   else f"a{i}-0", "state": "succeeded", "started_at": i + j, "ended_at": i + j + 1,
                   "workspace": str(root / "ws")} for j in range(4)]
        state = "running" if i >= runs - asking else "succeeded"
        (folder / "session.json").write_text(json.dumps(
            {"run_id": run_id, "role": "lead", "state": state, "started_at": 1.7e9 + 60 * i, "agents": agents}))
        if state == "running":
            for ask in ("Which colour?", "Which size?"):
                questions.post(folder, f"a{i}-0", ask, ["s", "m"], "m", "")
            questions.answer(folder, "1", "blue", "ui")
    (root / "ws").mkdir()
    (root / "ws" / "agent.log").write_bytes(b"x" * 1_000_000 + b"\nlast line\n")
    return ids


def timed(client: TestClient, path: str, n: int) -> tuple[float, float]:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        assert client.get(path).status_code == 200
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, int(len(times) * 0.99))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=1000, help="recorded runs in the project")
    parser.add_argument("--requests", type=int, default=100, help="requests per page (p50/p99 over these)")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, seconds: proves the script still runs")
    args = parser.parse_args()
    runs, n = (20, 5) if args.smoke else (args.runs, args.requests)
    with tempfile.TemporaryDirectory() as tmp:
        ended, asking = Path(tmp) / "ended", Path(tmp) / "asking"
        ids = make_project(ended, runs)
        make_project(asking, runs, asking=min(runs, 50))
        for project, label, path in ((ended, "runs list (project page)", ""),
                                     (asking, "runs list, newest 50 asking", ""),
                                     (ended, "run page (4 agents, 1 MB logs)", f"runs/{ids[runs // 2]}")):
            client = TestClient(create_app(project, SECRET, data_dir=Path(tmp) / "data"))
            client.cookies.set(COOKIE, SECRET)
            p50, p99 = timed(client, home_path(project) + path, n)
            assert ("question waiting for you" in client.get(home_path(project)).text) == (project == asking)
            print(f"{label:34} {runs} runs: p50 {p50:7.1f} ms  p99 {p99:7.1f} ms  ({n} requests)")


if __name__ == "__main__":
    main()
