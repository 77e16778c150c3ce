"""Throughput and latency of the registry's hot read paths (`versions`, `file`, `archive`) under concurrent clients.

Starts `strawpot registry serve` as a real subprocess on a free loopback port (rate limiting off),
with 1 and 2 workers, on SQLite + a blob folder and on PostgreSQL + S3 (a throwaway cluster from
initdb and moto's S3 server, started as the tests start them: tests/_services.py), publishes one
package, then drives a fixed number of requests per endpoint from N concurrent
keep-alive clients on loopback. "archive, first fetch" asks for each of `--versions` archives once,
so every answer misses the process's blob cache (and reads the blob folder or S3). The default load generator is a minimal asyncio HTTP/1.1 client,
because on a 2-core machine httpx's own ~1 ms of CPU per request would share the cores with the
server and measure mostly itself; `--client httpx` runs httpx.AsyncClient instead (2 processes).
Prints req/s, p50, p99 and max latency per endpoint.

    .venv/bin/python benchmarks/bench_registry.py [--clients 32] [--requests 20000] [--client raw|httpx]
        [--backend sqlite postgres postgres+s3] [--workers 1 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import re
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from urllib.parse import urlsplit

import httpx

PACKAGE = {
    "SKILL.md": b"---\nname: bench-skill\ndescription: A package to benchmark.\nversion: 1.0.0\n---\n\n# Bench\n"
    + b"Lorem ipsum dolor sit amet. " * 80,
    "templates/plan.md": b"# Plan\n" + b"- step\n" * 200,
}


def start_server(data: Path, storage: list[str], workers: int,
                 versions: int) -> tuple[subprocess.Popen[bytes], str]:
    cmd = [sys.executable, "-m", "strawpot.cli"]
    token = subprocess.run([*cmd, "registry", "token", "create", "--user", "bench", "--data", str(data), *storage],
                           check=True, capture_output=True, text=True).stdout.strip()
    log = data / "serve.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([*cmd, "registry", "serve", "--port", "0", "--data", str(data), "--rate-limit", "0",
                                 "--workers", str(workers), *storage], stdout=out, stderr=out)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if match := re.search(r"listening on (\S+)", log.read_text()):
            url = match.group(1)
            break
        time.sleep(0.05)
    else:
        proc.kill()
        raise SystemExit(f"server did not start:\n{log.read_text()}")
    files = [("files", (p, d, "application/octet-stream")) for p, d in PACKAGE.items()]
    r = httpx.post(f"{url}/api/v1/skills", data={"slug": "bench-skill", "version": "1.0.0"}, files=files,
                   headers={"Authorization": f"Bearer {token}"})
    r.raise_for_status()
    with httpx.Client(timeout=60) as http:  # the archives that "archive, first fetch" reads once each
        for i in range(versions):
            main = f"---\nname: cold-skill\ndescription: Cold.\nversion: 1.0.{i}\n---\n\n".encode() + os.urandom(300).hex().encode()
            http.post(f"{url}/api/v1/skills", data={"slug": "cold-skill", "version": f"1.0.{i}"},
                      files=[("files", ("SKILL.md", main, "text/markdown"))],
                      headers={"Authorization": f"Bearer {token}"}).raise_for_status()
    return proc, url


async def _raw_client(url: str, count: int, headers: dict[str, str], out: list[float]) -> None:
    """A minimal HTTP/1.1 keep-alive client on asyncio streams: almost no client-side CPU per request.

    `url` may be several, separated by spaces: they are taken in turn."""
    urls = url.split()
    split = urlsplit(urls[0])
    reader, writer = await asyncio.open_connection(split.hostname, split.port)
    extra = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    requests = []
    for one in urls:
        part = urlsplit(one)
        target = part.path + (f"?{part.query}" if part.query else "")
        requests.append(f"GET {target} HTTP/1.1\r\nHost: {split.netloc}\r\n{extra}\r\n".encode())
    try:
        for i in range(count):
            start = time.perf_counter()
            writer.write(requests[i % len(requests)])
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head.split(b" ", 2)[1])
            length = 0
            for line in head.split(b"\r\n"):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            await reader.readexactly(length)
            out.append(time.perf_counter() - start)
            if status not in (200, 304):
                raise RuntimeError(f"{url}: HTTP {status}")
    finally:
        writer.close()


async def _httpx_client(url: str, count: int, headers: dict[str, str], out: list[float]) -> None:
    # one AsyncClient per simulated client: httpx's shared pool degrades badly at 32 concurrent requests
    async with httpx.AsyncClient(timeout=30, trust_env=False) as http:
        await http.get(url, headers=headers)  # connect first
        for _ in range(count):
            start = time.perf_counter()
            response = await http.get(url, headers=headers)
            out.append(time.perf_counter() - start)
            if response.status_code not in (200, 304):
                raise RuntimeError(f"{url}: HTTP {response.status_code}")


async def _drive(kind: str, url: str, clients: int, per_client: int, headers: dict[str, str]) -> tuple[list[float], float]:
    latencies: list[float] = []
    one = _raw_client if kind == "raw" else _httpx_client
    began = time.perf_counter()
    await asyncio.gather(*(one(url, per_client, headers, latencies) for _ in range(clients)))
    return latencies, time.perf_counter() - began


def _worker(args: tuple[str, str, int, int, dict[str, str]]) -> tuple[list[float], float]:
    return asyncio.run(_drive(*args))


def _worker_many(kind: str, urls: list[str], per_client: int, headers: dict[str, str]) -> tuple[list[float], float]:
    async def drive() -> tuple[list[float], float]:
        latencies: list[float] = []
        began = time.perf_counter()
        await asyncio.gather(*(_raw_client(u, per_client, headers, latencies) for u in urls))
        return latencies, time.perf_counter() - began

    return asyncio.run(drive())


def run(kind: str, url: str, clients: int, requests: int, procs: int, headers: dict[str, str]) -> dict[str, float]:
    """`requests` GETs of `url` from `clients` concurrent connections, spread over `procs` processes."""
    per_client = max(1, requests // clients)
    if " " in url:  # one list of targets per client, each target once in all
        urls = url.split()
        share = len(urls) // clients
        parts = [_worker_many(kind, [" ".join(urls[i * share:(i + 1) * share]) for i in range(clients)], share, headers)]
    elif procs == 1:
        parts = [_worker((kind, url, clients, per_client, headers))]
    else:
        with mp.Pool(procs) as pool:
            parts = pool.map(_worker, [(kind, url, clients // procs, per_client, headers)] * procs)
    latencies = sorted(x for part, _ in parts for x in part)
    n, wall = len(latencies), max(elapsed for _, elapsed in parts)
    return {
        "requests": n,
        "req_per_s": n / wall,
        "p50_ms": latencies[n // 2] * 1000,
        "p99_ms": latencies[min(n - 1, int(n * 0.99))] * 1000,
        "max_ms": latencies[-1] * 1000,
    }


def read_after_write(url: str, data: Path, storage: list[str], rounds: int = 50) -> dict[str, float]:
    """Publish a version, then at once one GET of `versions` on a fresh connection (any worker): is it there?"""
    cmd = [sys.executable, "-m", "strawpot.cli", "registry", "token", "create", "--user", "raw", "--data", str(data)]
    token = subprocess.run([*cmd, *storage], check=True, capture_output=True, text=True).stdout.strip()
    fresh, gaps = 0, []
    for i in range(rounds):
        main = f"---\nname: raw-skill\ndescription: Raw.\nversion: 1.0.{i}\n---\n\nBody.\n".encode()
        httpx.post(f"{url}/api/v1/skills", data={"slug": "raw-skill", "version": f"1.0.{i}"},
                   files=[("files", ("SKILL.md", main, "text/markdown"))],
                   headers={"Authorization": f"Bearer {token}"}).raise_for_status()
        began = time.perf_counter()
        listed = httpx.get(f"{url}/api/v1/skills/raw-skill/versions").json()["versions"]
        gaps.append(time.perf_counter() - began)
        fresh += listed[-1]["version"] == f"1.0.{i}"
    gaps.sort()
    return {"requests": rounds, "req_per_s": fresh / rounds, "p50_ms": gaps[rounds // 2] * 1000,
            "p99_ms": gaps[min(rounds - 1, int(rounds * 0.99))] * 1000, "max_ms": gaps[-1] * 1000}


def bench_one(args: argparse.Namespace, procs: int, storage: list[str], workers: int, tmp: Path) -> dict[str, dict[str, float]]:
    proc, url = start_server(tmp, storage, workers, args.versions)
    try:
        api = f"{url}/api/v1/skills/bench-skill"
        etag = httpx.get(f"{api}/versions").headers["etag"]
        cold = " ".join(f"{url}/api/v1/skills/cold-skill/versions/1.0.{i}/archive" for i in range(args.versions))
        for _ in range(4 * workers):  # warm the caches of every worker
            httpx.get(f"{api}/file", params={"path": "templates/plan.md", "version": "1.0.0"})
            httpx.get(f"{api}/versions/1.0.0/archive")
            httpx.get(f"{url}/api/v1/skills/cold-skill/versions")
        cases = {
            "versions": (f"{api}/versions", {}),
            "versions (If-None-Match → 304)": (f"{api}/versions", {"If-None-Match": etag}),
            "file": (f"{api}/file?path=templates%2Fplan.md&version=1.0.0", {}),
            "archive (cached)": (f"{api}/versions/1.0.0/archive", {}),
            "archive, first fetch": (cold, {}),
        }
        results = {name: run(args.client, target, args.clients, args.requests, procs, headers)
                   for name, (target, headers) in cases.items()}
        results["read-after-write"] = read_after_write(url, tmp, storage, rounds=5 if args.smoke else 50)
        return results
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--requests", type=int, default=20_000, help="per endpoint")
    parser.add_argument("--client", choices=["raw", "httpx"], default="raw",
                        help="load generator: raw asyncio HTTP/1.1 (cheap) or httpx.AsyncClient")
    parser.add_argument("--procs", type=int, default=None, help="load-generator processes (raw 1, httpx 2)")
    parser.add_argument("--backend", choices=["sqlite", "postgres", "postgres+s3"], nargs="+",
                        default=["sqlite", "postgres+s3"], help="postgres: PostgreSQL with the blob folder (S3's cost apart)")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--versions", type=int, default=640, help="archives read once each (a cache miss each)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, seconds: proves the script still runs")
    args = parser.parse_args()
    if args.smoke:
        args.clients, args.requests, args.versions = 2, 20, 4
        args.backend, args.workers = ["sqlite"], [1]
    procs = args.procs or (1 if args.client == "raw" else 2)
    backends = args.backend
    results: dict[str, dict[str, dict[str, float]]] = {}
    with ExitStack() as stack:
        for backend in backends:
            storage: list[str] = []
            if backend != "sqlite":
                services = _services(stack)
            for workers in args.workers:
                tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-registry-")))
                if backend != "sqlite":
                    storage = _fresh_schema(services, f"bench_{workers}")
                    if backend == "postgres":
                        storage = storage[:2]
                results[f"{backend}, {workers} worker(s)"] = bench_one(args, procs, storage, workers, tmp)
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print(f"{args.clients} concurrent keep-alive clients ({args.client}, {procs} load process(es)),"
              f" {os.cpu_count()} CPUs, rate limit off")
        for setup, cases in results.items():
            print(f"-- {setup}")
            for name, r in cases.items():
                if name == "read-after-write":
                    print(f"{name:34} {r['req_per_s']:8.0%} of first reads after a publish saw it   "
                          f"p50 {r['p50_ms']:6.1f} ms   p99 {r['p99_ms']:6.1f} ms   ({r['requests']} publishes)")
                    continue
                print(f"{name:34} {r['req_per_s']:8.0f} req/s   p50 {r['p50_ms']:6.1f} ms   p99 {r['p99_ms']:6.1f} ms"
                      f"   max {r['max_ms']:6.1f} ms   ({r['requests']} requests)")
    return 0


def _services(stack: ExitStack) -> list[str]:
    """PostgreSQL and moto's S3 server as the tests start them; the `--database/--blobs/--s3-endpoint` arguments."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import boto3

    from tests._services import S3_ENV, postgres_server, s3_server

    os.environ.update(S3_ENV)
    if _started:
        return _started
    pg = stack.enter_context(postgres_server())
    s3 = stack.enter_context(s3_server())
    boto3.client("s3", endpoint_url=s3.endpoint).create_bucket(Bucket="bench")
    _started.extend(["--database", pg.url(), "--blobs", "s3://bench", "--s3-endpoint", s3.endpoint])
    return _started


_started: list[str] = []


_schemas: list[str] = []


def _fresh_schema(storage: list[str], name: str) -> list[str]:
    import psycopg

    base = storage[1].split("?")[0]
    name = f"{name}_{len(_schemas)}"
    _schemas.append(name)
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {name}".encode())
    return ["--database", f"{base}?options=-csearch_path%3D{name}", "--blobs", f"s3://bench/{name}", *storage[4:]]


if __name__ == "__main__":
    sys.exit(main())
