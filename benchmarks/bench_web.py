"""Server time of the registry's web pages (package page, search) on a registry of 2,000 packages.

Fills a SQLite registry directly through the `Storage` interface (no HTTP publish, so it takes seconds),
then calls the ASGI app in-process: each sample is the time from handing the app one browser request
(`Accept: text/html`) to the last byte of its response, event loop and worker-thread hop included, no
sockets and no client. Requests go one at a time. Prints p50, p99 and max per case:

- package page, first view of each package (its version list, main file and rendering not cached yet)
- package page, any package again (warm caches)
- search: a random word from the descriptions, sometimes with a kind filter or a later page

    .venv/bin/python benchmarks/bench_web.py [--packages 2000] [--requests 2000] [--seed 1]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from registry_server import create_app  # noqa: E402
from registry_server.storage.base import FileEntry, NewVersion, VersionRecord  # noqa: E402
from registry_server.storage.sqlite import SQLiteStorage  # noqa: E402
from strawpot.model.kinds import Kind  # noqa: E402

WORDS = ["git", "review", "test", "plan", "deploy", "lint", "docs", "style", "refactor", "security", "python", "rust", "review", "commit", "branch", "debug", "profile", "cache", "queue", "api", "schema", "migrate", "release", "agent", "memory", "search", "index"]
SHARE = ((Kind.SKILL, 0.6), (Kind.ROLE, 0.25), (Kind.AGENT, 0.1), (Kind.MEMORY, 0.025), (Kind.INTEGRATION, 0.025))


def main_file(kind: Kind, slug: str, version: str, rng: random.Random, deps: dict[str, list[str]]) -> bytes:
    description = " ".join(rng.choice(WORDS) for _ in range(8)).capitalize() + "."
    lines = ["---", f"name: {slug}", f'description: "{description}"', f"version: {version}"]
    if deps:
        lines += ["metadata:", "  strawpot:", "    dependencies:"]
        if kind is Kind.SKILL:
            lines += [f"      - {d}" for d in deps["skills"]]
        else:
            lines += [f"      {group}:\n" + "\n".join(f"        - {d}" for d in entries) for group, entries in deps.items()]
    body = [f"# {slug}", "", description, "", "## Usage", ""]
    body += [f"- {' '.join(rng.choice(WORDS) for _ in range(12))} `{rng.choice(WORDS)}`" for _ in range(25)]
    body += ["", "```sh", f"strawpot install {kind.value} {slug}", "```", "", "| a | b |", "|---|---|", "| 1 | 2 |"]
    return ("\n".join([*lines, "---", "", *body]) + "\n").encode()


def fill(storage: SQLiteStorage, n: int, rng: random.Random) -> list[tuple[Kind, str]]:
    owner = storage.ensure_user("bench")
    made: list[tuple[Kind, str]] = []
    skills: list[str] = []
    for i in range(n):
        kind = rng.choices([k for k, _ in SHARE], [w for _, w in SHARE])[0]
        slug = f"{rng.choice(WORDS)}-{rng.choice(WORDS)}-{i}"
        deps: dict[str, list[str]] = {}
        if kind in (Kind.SKILL, Kind.ROLE) and skills and rng.random() < 0.6:
            deps["skills"] = [f"{s}^1.0" for s in rng.sample(skills, min(len(skills), rng.randint(1, 3)))]
        for minor in range(rng.randint(1, 3)):
            version = f"1.{minor}.0"
            data = main_file(kind, slug, version, rng, deps)
            sha = storage.put_blob(data)
            archive = storage.put_blob(data + b"\0archive")
            record = VersionRecord(version, "", deps, (FileEntry(kind.main_file, len(data), sha),), archive,
                                   len(data), 0)
            storage.publish(NewVersion(kind, slug, slug, data.split(b'"')[1].decode(), (), record), owner)
        if kind is Kind.SKILL:
            skills.append(slug)
        made.append((kind, slug))
    return made


async def call(app: Any, path: str, query: str = "") -> float:
    """Seconds from the request to the last byte of the response; fails on anything but a 200 page."""
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
        "path": path, "raw_path": path.encode(), "query_string": query.encode(), "root_path": "",
        "headers": [(b"host", b"bench"), (b"accept", b"text/html,application/xhtml+xml,*/*;q=0.8")],
        "client": ("127.0.0.1", 1), "server": ("bench", 80),
    }
    status: list[int] = []
    body: list[bytes] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            status.append(message["status"])
        else:
            body.append(message.get("body", b""))

    start = time.perf_counter()
    await app(scope, receive, send)
    elapsed = time.perf_counter() - start
    if status != [200] or b"</html>" not in b"".join(body):
        raise SystemExit(f"GET {path}?{query} answered {status}")
    return elapsed


def report(name: str, samples: list[float]) -> None:
    ms = sorted(s * 1000 for s in samples)
    p50, p99 = statistics.median(ms), ms[min(len(ms) - 1, int(len(ms) * 0.99))]
    print(f"{name:<38} n={len(ms):>5}  p50 {p50:6.2f} ms  p99 {p99:6.2f} ms  max {ms[-1]:7.2f} ms", flush=True)


async def run(args: argparse.Namespace) -> None:
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        storage = SQLiteStorage(Path(tmp) / "data")
        started = time.perf_counter()
        made = fill(storage, args.packages, rng)
        print(f"filled {len(made)} packages in {time.perf_counter() - started:.1f} s (SQLite, {tmp})", flush=True)
        app = create_app(storage, rate_limit=0)
        await call(app, "/")  # templates compiled, listing read once
        order = rng.sample(made, len(made))
        cold = [await call(app, f"/{kind.plural}/{slug}") for kind, slug in order[: args.requests]]
        warm = [await call(app, f"/{kind.plural}/{slug}") for kind, slug in rng.choices(made, k=args.requests)]
        searches = []
        for _ in range(args.requests):
            query = f"q={rng.choice(WORDS)}"
            if rng.random() < 0.3:
                query += f"&kind={rng.choice(list(Kind)).value}"
            if rng.random() < 0.3:
                query += f"&page={rng.randint(2, 5)}"
            searches.append(await call(app, "/search", query))
        report("package page, first view", cold)
        report("package page, again (warm)", warm)
        report("search (words, kinds, pages)", searches)
        app.state.registry.close()
        storage.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--packages", type=int, default=2000)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, seconds: proves the script still runs")
    args = parser.parse_args()
    if args.smoke:
        args.packages, args.requests = 20, 10
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
