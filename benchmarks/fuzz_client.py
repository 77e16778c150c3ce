"""Fuzz the client's readers: 10,000 hostile manifests, lockfiles and frontmatters (and archives, and
registry answers run through a whole install) each, through the same code a command uses; report how
many ended in a traceback (must be 0).

A "traceback" is any exception other than the reader's documented error (StrawpotError for manifests
and lockfiles and registry answers, FrontmatterError for frontmatter, ArchiveError for archives), or a
write outside the target folder. Samples come from tests/fuzz/_corpus.py with a fixed seed, so a run can be repeated
and a failing sample replayed by its number.

    .venv/bin/python benchmarks/fuzz_client.py [--count 10000] [--seed 2026] [--kinds manifest,lockfile,frontmatter]
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.fuzz._corpus import (  # noqa: E402
    Traceback,
    archive_bytes,
    check_archive,
    check_frontmatter,
    check_lockfile,
    check_manifest,
    check_registry_answer,
    frontmatter_text,
    lockfile_text,
    manifest_text,
    mutate,
    top_archive,
    versions_answer,
)


def _one(kind: str, rng: random.Random, folder: Path) -> None:
    if kind == "manifest":
        data = manifest_text(rng).encode("utf-8", "surrogatepass")
        check_manifest(mutate(rng, data) if rng.random() < 0.3 else data, folder)
    elif kind == "lockfile":
        data = lockfile_text(rng).encode("utf-8", "surrogatepass")
        check_lockfile(mutate(rng, data) if rng.random() < 0.3 else data, folder)
    elif kind == "frontmatter":
        text = frontmatter_text(rng)
        if rng.random() < 0.3:
            text = mutate(rng, text.encode()).decode("utf-8", "replace")
        check_frontmatter(text)
    elif kind == "archive":
        check_archive(archive_bytes(rng), folder)
    else:
        check_registry_answer(versions_answer(rng, "top", top_archive()), folder)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=10_000, help="samples of each kind")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--kinds", default="manifest,lockfile,frontmatter,archive,registry-answer")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, seconds: proves the script still runs")
    args = parser.parse_args()
    if args.smoke:
        args.count = 5
    settings_dir = tempfile.TemporaryDirectory()  # read no user settings
    os.environ["STRAWPOT_CONFIG_DIR"] = settings_dir.name
    for name in ("STRAWPOT_HTTP_TIMEOUT", "STRAWPOT_REGISTRY_DEADLINE"):
        os.environ.pop(name, None)
    total_tracebacks = 0
    for kind in args.kinds.split(","):
        rng = random.Random(f"{args.seed}-{kind}")
        found: collections.Counter[str] = collections.Counter()
        first: dict[str, int] = {}
        start = time.perf_counter()
        for number in range(args.count):
            with tempfile.TemporaryDirectory() as folder:
                try:
                    _one(kind, rng, Path(folder))
                except Traceback as exc:
                    headline = str(exc).splitlines()[0][:120]
                    found[headline] += 1
                    first.setdefault(headline, number)
        took = time.perf_counter() - start
        count = sum(found.values())
        total_tracebacks += count
        print(f"{kind:12} {args.count:6} samples  {count:5} tracebacks  {took:6.1f} s")
        for headline, n in found.most_common(10):
            print(f"    {n:5} x {headline}  (first: sample #{first[headline]})")
    print(f"total tracebacks: {total_tracebacks}")
    return 1 if total_tracebacks else 0


if __name__ == "__main__":
    raise SystemExit(main())
