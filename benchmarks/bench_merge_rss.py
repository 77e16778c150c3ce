"""Peak memory of a worktree session's merge-back with one large file: strawpot itself and its largest git child.

    .venv/bin/python benchmarks/bench_merge_rss.py [--mb 600]

Makes a repository in a temporary folder, a worktree session on it, writes an incompressible file of `--mb` MB
in the worktree (as an agent would), merges it back with `[session] max_file_size` above it, and prints the
time and the peak RSS (ru_maxrss) of this process and of its largest child. The issue's bar: under 200 MB.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import tempfile
import time
from pathlib import Path

from orchestrator.worktree import WorktreeIsolator


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=600)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, seconds: proves the script still runs")
    args = parser.parse_args()
    size = 1 if args.smoke else args.mb
    os.environ.update(GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="bench@localhost", GIT_COMMITTER_NAME="bench",
                      GIT_COMMITTER_EMAIL="bench@localhost")
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "repo"
        root.mkdir()
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        (root / "README").write_text("bench\n")
        subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
        subprocess.run(["git", "-C", str(root), "commit", "-qm", "first"], check=True)
        isolator = WorktreeIsolator(max_file_size=size * 2)
        env = isolator.create("run_bench", root)
        with open(Path(env.info["path"]) / "big.bin", "wb") as fh:
            for _ in range(size):
                fh.write(os.urandom(1 << 20))
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
        started = time.monotonic()
        merged = isolator.merge(env, root)
        if not merged.keep:
            isolator.cleanup(env, root)
        took = time.monotonic() - started
        assert merged.error is None and (root / "big.bin").stat().st_size == size << 20, merged
        own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
        child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024
        print(f"{size} MB file merged back in {took:.1f} s; peak RSS: strawpot {own} MB (before the merge {before} MB), "
              f"largest git child {child} MB")


if __name__ == "__main__":
    main()
