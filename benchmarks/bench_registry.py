"""Throughput and latency of the registry's hot read paths (`versions`, `file`) under concurrent clients.

Starts `strawpot registry serve` as a real subprocess on a free loopback port (rate limiting off),
publishes one package, then drives a fixed number of requests per endpoint from N concurrent
keep-alive clients on loopback. The default load generator is a minimal asyncio HTTP/1.1 client,
because on a 2-core machine httpx's own ~1 ms of CPU per request would share the cores with the
server and measure mostly itself; `--client httpx` runs httpx.AsyncClient instead (2 processes).
Prints req/s, p50, p99 and max latency per endpoint.

    .venv/bin/python benchmarks/bench_registry.py [--clients 32] [--requests 20000] [--client raw|httpx]
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
from pathlib import Path
from urllib.parse import urlsplit

import httpx

PACKAGE = {
    "SKILL.md": b"---\nname: bench-skill\ndescription: A package to benchmark.\nversion: 1.0.0\n---\n\n# Bench\n"
    + b"Lorem ipsum dolor sit amet. " * 80,
    "templates/plan.md": b"# Plan\n" + b"- step\n" * 200,
}


def start_server(data: Path) -> tuple[subprocess.Popen[bytes], str]:
    cmd = [sys.executable, "-m", "strawpot.cli"]
    token = subprocess.run([*cmd, "registry", "token", "create", "--user", "bench", "--data", str(data)],
                           check=True, capture_output=True, text=True).stdout.strip()
    log = data / "serve.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([*cmd, "registry", "serve", "--port", "0", "--data", str(data), "--rate-limit", "0"],
                                stdout=out, stderr=out)
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
    return proc, url


async def _raw_client(url: str, count: int, headers: dict[str, str], out: list[float]) -> None:
    """A minimal HTTP/1.1 keep-alive client on asyncio streams: almost no client-side CPU per request."""
    split = urlsplit(url)
    reader, writer = await asyncio.open_connection(split.hostname, split.port)
    target = split.path + (f"?{split.query}" if split.query else "")
    extra = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    request = f"GET {target} HTTP/1.1\r\nHost: {split.netloc}\r\n{extra}\r\n".encode()
    try:
        for _ in range(count):
            start = time.perf_counter()
            writer.write(request)
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


def run(kind: str, url: str, clients: int, requests: int, procs: int, headers: dict[str, str]) -> dict[str, float]:
    """`requests` GETs of `url` from `clients` concurrent connections, spread over `procs` processes."""
    per_client = max(1, requests // clients)
    if procs == 1:
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--requests", type=int, default=20_000, help="per endpoint")
    parser.add_argument("--client", choices=["raw", "httpx"], default="raw",
                        help="load generator: raw asyncio HTTP/1.1 (cheap) or httpx.AsyncClient")
    parser.add_argument("--procs", type=int, default=None, help="load-generator processes (raw 1, httpx 2)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    procs = args.procs or (1 if args.client == "raw" else 2)
    with tempfile.TemporaryDirectory(prefix="bench-registry-") as tmp:
        proc, url = start_server(Path(tmp))
        try:
            api = f"{url}/api/v1/skills/bench-skill"
            etag = httpx.get(f"{api}/versions").headers["etag"]
            httpx.get(f"{api}/file", params={"path": "templates/plan.md", "version": "1.0.0"})  # warm the caches
            cases = {
                "versions": (f"{api}/versions", {}),
                "versions (If-None-Match → 304)": (f"{api}/versions", {"If-None-Match": etag}),
                "file": (f"{api}/file?path=templates%2Fplan.md&version=1.0.0", {}),
            }
            results = {}
            for name, (target, headers) in cases.items():
                results[name] = run(args.client, target, args.clients, args.requests, procs, headers)
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print(f"{args.clients} concurrent keep-alive clients ({args.client}, {procs} load process(es)),"
              f" {os.cpu_count()} CPUs, one uvicorn process, rate limit off")
        for name, r in results.items():
            print(f"{name:34} {r['req_per_s']:8.0f} req/s   p50 {r['p50_ms']:6.1f} ms   p99 {r['p99_ms']:6.1f} ms"
                  f"   max {r['max_ms']:6.1f} ms   ({r['requests']} requests)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
