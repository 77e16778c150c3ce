"""Cold install through a warm mirror vs the same install from a local registry (issue 41; target: within 1.2x).

Three live `strawpot registry serve` on loopback: a local registry L holding a role with N transitive packages,
an upstream U holding the same packages, and a mirror M (`--upstream U`, nothing of its own). One install through
M warms it (its cache then holds every package's metadata and archive); then `strawpot install role` with an
empty cache and an empty project runs against L and against M, taking turns, and the ratio M/L is taken pair by
pair. Upstream stays up (the mirror's metadata is fresh for its TTL, 300 s by default).

    .venv/bin/python benchmarks/bench_mirror.py [--packages 100] [--repeat 5]
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
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_install import compile_sources, paired_ratio, publish_graph, run_once  # noqa: E402

from tests._live_registry import start_registry  # noqa: E402

TARGET = 1.2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--packages", type=int, default=100, help="packages in the role's closure (with the role)")
    parser.add_argument("--repeat", type=int, default=5, help="cold installs per registry (the median is shown)")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, seconds: proves the script still runs")
    args = parser.parse_args()
    if args.smoke:
        args.packages, args.repeat = 3, 1
    compile_sources()
    with tempfile.TemporaryDirectory(prefix="bench-mirror-") as tmp:
        scratch = Path(tmp)
        with start_registry(scratch / "local") as local, start_registry(scratch / "upstream") as upstream:
            role = publish_graph(local.url, local.token, scratch / "local-packages", args.packages)
            publish_graph(upstream.url, upstream.token, scratch / "upstream-packages", args.packages)
            with start_registry(scratch / "mirror", serve_args=["--upstream", upstream.url]) as mirror:
                started = time.perf_counter()
                run_once("strawpot", mirror.url, role, scratch, args.packages)
                print(f"warmed the mirror (one cold install through it, upstream asked for everything) in "
                      f"{time.perf_counter() - started:.2f}s", flush=True)
                times: dict[str, list[float]] = {"local": [], "mirror": []}
                for _ in range(args.repeat):  # taking turns: a machine that slows down mid-run moves both alike
                    times["local"].append(run_once("strawpot", local.url, role, scratch, args.packages))
                    times["mirror"].append(run_once("strawpot", mirror.url, role, scratch, args.packages))
                for name, runs in times.items():
                    print(f"  {name:>6}  " + "  ".join(f"{r:6.2f}s" for r in runs), flush=True)
    ratio = paired_ratio(times["mirror"], times["local"])
    print(f"\ncold install of a role with {args.packages} packages (median of {args.repeat}): local registry "
          f"{statistics.median(times['local']):.2f}s, warm mirror {statistics.median(times['mirror']):.2f}s, "
          f"mirror/local {ratio:.2f}x (target {TARGET}x: {'met' if ratio <= TARGET else 'NOT met'})")


if __name__ == "__main__":
    main()
