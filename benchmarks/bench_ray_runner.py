"""Benchmark: the start latency a remote session adds, `start --runner ray` against a local worktree session.

A real Ray cluster on this machine (`ray.cluster_utils.Cluster`: a head without CPUs and two worker nodes of one
CPU) and one project (fixtures/agents/stub-agent bound to the role, a git repository). Each round runs, one after
the other, `strawpot start --headless --isolation worktree --task noop` (local) and `strawpot start --headless
--runner ray --task noop` (the session on a worker, its patch merged back here), and times each command from its
start to its exit. The no-op task makes the difference the runner's own cost: Ray's import and connection, the
bundle, the installed tree and the record on the way, the node's session host and the worker's own `start`. The
first session on each node starts that node's host (a new Ray worker process); the sessions after it find the host
running and a spare `strawpot` waiting, so the figures are given for all rounds and for the warm ones.

    python benchmarks/bench_ray_runner.py [--rounds 5] [--smoke]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_delegation import build_project  # noqa: E402
from bench_install import timed  # noqa: E402

MB = 1024 * 1024
NODE_NAMES = ("node_a", "node_b")
IDENTITY = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.org", "GIT_COMMITTER_NAME": "b",
            "GIT_COMMITTER_EMAIL": "b@example.org"}


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, env={**os.environ, **IDENTITY})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="sessions of each kind (default 5)")
    parser.add_argument("--smoke", action="store_true",
                        help="one round on a one-node cluster (the head runs it), to check the benchmark still runs")
    args = parser.parse_args()
    rounds = 1 if args.smoke else args.rounds
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": int(args.smoke), "include_dashboard": False,
                                                            "object_store_memory": 80 * MB})
    for name in () if args.smoke else NODE_NAMES:  # two more nodes take the smoke run 10-20 s longer to start
        cluster.add_node(num_cpus=1, resources={name: 1}, object_store_memory=80 * MB)
    cluster.wait_for_nodes()
    try:
        with tempfile.TemporaryDirectory(prefix="bench-ray-") as scratch:
            root = build_project(Path(scratch) / "proj", sys.executable)
            (root / ".gitignore").write_text(".strawpot/\n")
            git(root, "init", "-q", "-b", "main")
            git(root, "add", "-A")
            git(root, "commit", "-q", "-m", "first")
            env = {**os.environ, **IDENTITY, "STRAWPOT_CONFIG_DIR": str(Path(scratch) / "config"),
                   "STRAWPOT_RUNNER_RAY_ADDRESS": cluster.address, "RAY_USAGE_STATS_ENABLED": "0"}
            strawpot = [sys.executable, "-m", "strawpot.cli", "start", "--headless", "--task", "noop"]
            local, remote = [], []
            for _ in range(rounds):
                local.append(timed([*strawpot, "--isolation", "worktree"], root, env))
                remote.append(timed([*strawpot, "--runner", "ray"], root, env))
    finally:
        cluster.shutdown()
    median_local, median_remote = statistics.median(local), statistics.median(remote)
    shape = "one node of 1 CPU (smoke)" if args.smoke else "head without CPUs + 2 worker nodes of 1 CPU"
    print(f"rounds: {rounds} (cluster: {shape}, this machine: {os.cpu_count()} CPUs)")
    print(f"local worktree session, start to exit: median {median_local:.2f} s  ({', '.join(f'{t:.2f}' for t in local)})")
    print(f"ray runner session, start to exit:     median {median_remote:.2f} s  "
          f"({', '.join(f'{t:.2f}' for t in remote)})")
    print(f"added per remote session: {median_remote - median_local:+.2f} s (goal: under 2 s)")
    if rounds > len(NODE_NAMES):  # the first round on each node starts its host
        warm = statistics.median(remote[len(NODE_NAMES):]) - statistics.median(local[len(NODE_NAMES):])
        print(f"added once each node's host runs (rounds after the first {len(NODE_NAMES)}): {warm:+.2f} s")


if __name__ == "__main__":
    main()
