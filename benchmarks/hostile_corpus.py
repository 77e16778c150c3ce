"""Issue 12's hostile corpus replayed against a live `strawpot registry serve` on loopback.

Each request's answer (status, seconds) is recorded while a sampler reads the server's resident
memory from /proc/<pid>/status every 20 ms; the table ends with the peak (VmHWM), the number of
crashes (the server process gone, or a 5xx) and the answers slower than 2 s. Slow uploads are
answered at the end of their rate window by design (5 s by default): they are listed apart, along
with what other clients saw meanwhile.

    .venv/bin/python benchmarks/hostile_corpus.py [--json benchmarks/results/hostile_corpus.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests._live_registry import LiveRegistry, start_registry  # noqa: E402
from tests.model.hostile_yaml import CORPUS, main_file  # noqa: E402
from tests.registry_server._helpers import main_md  # noqa: E402
from tests.registry_server.hostile_http import (  # noqa: E402
    Answer,
    head,
    nested_json,
    post,
    publish_body,
    send,
    trickle,
)

MB = 1 << 20
_BULK = ("POST /archives", "120 views", "publish heavy")  # bulk transfers: their seconds are bandwidth, not stalls


class Sampler(threading.Thread):
    """Peak resident memory of a process, sampled, and its high-water mark from the kernel."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak_kb, self.stop = pid, 0, threading.Event()

    def field(self, name: str) -> int:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith(name + ":"):
                return int(line.split()[1])
        return 0

    def run(self) -> None:
        while not self.stop.wait(0.02):
            try:
                self.peak_kb = max(self.peak_kb, self.field("VmRSS"))
            except OSError:
                return


class Run:
    def __init__(self, reg: LiveRegistry) -> None:
        self.reg = reg
        self.rows: list[tuple[str, Answer, str]] = []
        self.lock = threading.Lock()

    def record(self, case: str, answer: Answer, note: str = "") -> Answer:
        with self.lock:
            self.rows.append((case, answer, note or answer.error()[:90]))
        return answer

    def publish(self, case: str, slug: str, main: bytes, token: str | None = None, **kw: object) -> Answer:
        body, ctype = publish_body(slug, main, **kw)  # type: ignore[arg-type]
        return self.record(case, post(self.reg.url, "/api/v1/skills", body, content_type=ctype,
                                      token=token or self.reg.token, timeout=60))


def corpus(run: Run) -> None:
    url, token = run.reg.url, run.reg.token
    for name, text in CORPUS.items():
        run.publish(f"frontmatter: {name} ({len(text)} B)", "hostile", main_file("hostile", text).encode())
    deep = nested_json(400_000)
    run.publish("nested JSON in `dependencies` (800 KB)", "deep", main_md("deep"), dependencies=deep)
    for path in ("/api/v1/downloads", "/api/v1/stars/toggle", "/api/v1/skills/x/versions/1.0.0/yank",
                 "/api/v1/admin/set-role", "/api/v1/admin/ban-user"):
        body = f'{{"kind": "skill", "slug": "x", "n": {deep}}}'.encode()[: 60 * 1024]
        run.record(f"nested JSON body, POST {path}", post(url, path, body, content_type="application/json", token=token))
    run.publish("multipart boundary of 10,000 characters", "boundary", main_md("boundary"), boundary="b" * 10_000)
    run.record("request head of 100 KB", send(url, head("GET", "/api/v1/skills", {"X-Big": "h" * 100_000})))

    declared = head("POST", "/api/v1/downloads", {"Content-Type": "application/json", "Content-Length": str(400 * MB)})
    run.record("400 MB declared, unauthenticated POST /downloads", send(url, declared, _zeros(400 * MB)),
               "refused on the declared length")
    chunked = head("POST", "/api/v1/downloads", {"Content-Type": "application/json", "Transfer-Encoding": "chunked"})
    sent = [0]
    run.record("400 MB streamed (chunked), unauthenticated POST /downloads", send(url, chunked, _chunks(400 * MB, sent)),
               "")
    run.rows[-1] = (run.rows[-1][0], run.rows[-1][1], f"{sent[0] // 1024} KB sent before the refusal")

    owner = run.reg.create_token("owner")
    for version in ("1.0.0", "1.1.0"):
        run.publish(f"publish gone {version}", "gone", main_md("gone", version), token=owner, version=version)
    import httpx

    httpx.delete(f"{url}/api/v1/skills/gone", headers={"Authorization": f"Bearer {token}"})
    run.publish("re-publish after an admin DELETE", "gone", main_md("gone", "1.2.0"), token=owner, version="1.2.0")


def bad_input(run: Run) -> None:
    """Issue 25's input the database cannot store, a renamed file, a long search, a forged Host: each a 4xx."""
    url = run.reg.url
    for case, line in (("a lone surrogate in the description", 'description: "half \\ud83d"'),
                       ("a NUL in the description", 'description: "nul \\0"')):
        main = f"---\nname: odd\nversion: 1.0.0\n{line}\n---\n\nBody.\n".encode()
        run.publish(f"publish: {case}", "odd", main)
    run.publish("publish: a NUL in displayName", "odd", main_md("odd"), extra_fields={"displayName": "a\x00b"})
    run.publish("publish: a file named ..\\evil.md", "odd", main_md("odd"), extra={"..\\evil.md": b"x"})
    long = "q" * (15 * 1024)
    for i in range(16):
        run.record(f"15 KB search ({i + 1} of 16)", send(url, head("GET", f"/api/v1/search?q={long}", {})))
    forged = send(url, b"GET /skills/calm HTTP/1.1\r\nHost: evil.example\r\nAccept: text/html\r\n\r\n")
    run.record("package page with a forged Host", forged,
               "the forged host is on the page" if b"evil.example" in forged.body else "Host not used")


def _gallery(i: int) -> bytes:
    """A 250 KB README of reference images that renders to about 5 MB of HTML."""
    ref = f"[img]: https://images.example.org/reference/{'r' * 120}/{i}.png\n\n"
    return main_md(f"gallery{i}", body=ref + "![i][img]" * (250_000 // 9) + "\n")


def memory_cases(run: Run, sampler: Sampler, phases: dict[str, int]) -> dict[str, float]:
    """40 concurrent `/archives` of two ~30 MB versions, then 120 versions' 5 MB pages viewed once each."""
    import random

    import httpx

    url, token = run.reg.url, run.reg.token
    rng = random.Random(25)
    for slug in ("heavy-a", "heavy-b"):
        extra = {f"part{i}.bin": rng.randbytes(10 * MB - 64 * 1024) for i in range(3)}
        run.publish(f"publish {slug} (30 MB, incompressible)", slug, main_md(slug), extra=extra)
    phases["two 30 MB publishes"] = sampler.peak_kb
    items = [{"kind": "skill", "slug": s, "version": "1.0.0"} for s in ("heavy-a", "heavy-b")]
    figures: dict[str, float] = {}

    def bundle(i: int) -> None:
        started = time.monotonic()
        try:
            with httpx.Client(timeout=120) as http, http.stream("POST", f"{url}/api/v1/archives",
                                                               json={"items": items}) as answer:
                size = sum(len(chunk) for chunk in answer.iter_bytes(256 * 1024))
                status = answer.status_code
        except httpx.HTTPError as exc:
            status, size = 0, 0
            print(f"  /archives {i}: {exc!r}", file=sys.stderr)
        note = f"{size / MB:.1f} MB streamed" if status == 200 else f"{size} B"
        run.record(f"POST /archives, 2 × 30 MB ({i + 1:2} of 40 at once)",
                   Answer(status, b"", time.monotonic() - started), note)

    threads = [threading.Thread(target=bundle, args=(i,)) for i in range(40)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    figures["archives_seconds"] = time.monotonic() - started
    phases["40 /archives at once"] = sampler.peak_kb
    for i in range(120):
        body, ctype = publish_body(f"gallery{i}", _gallery(i))
        answer = post(url, "/api/v1/skills", body, content_type=ctype, token=token, timeout=60)
        if answer.status != 201:
            run.record(f"publish gallery{i}", answer)
    pages: list[Answer] = []
    lock = threading.Lock()

    def view(ids: range) -> None:
        for i in ids:
            got = send(url, head("GET", f"/skills/gallery{i}", {"Accept": "text/html"}), timeout=120)
            with lock:
                pages.append(got)

    threads = [threading.Thread(target=view, args=(range(k, 120, 8),)) for k in range(8)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    figures["pages_seconds"] = time.monotonic() - started
    phases["120 page views"] = sampler.peak_kb
    sizes = sorted(len(p.body) for p in pages if p.status == 200)
    statuses = sorted({p.status for p in pages})
    run.record("120 views of 5 MB pages (8 at a time)", Answer(max(statuses), b"", figures["pages_seconds"]),
               f"statuses {statuses}, pages of {sizes[0] / MB:.1f}-{sizes[-1] / MB:.1f} MB" if sizes else "no page")
    return figures


def _zeros(total: int) -> Iterator[bytes]:
    chunk = bytes(MB)
    for _ in range(total // MB):
        yield chunk


def _chunks(total: int, sent: list[int]) -> Iterator[bytes]:
    piece = b"%x\r\n%s\r\n" % (65536, bytes(65536))
    for _ in range(total // 65536):
        sent[0] += 65536
        yield piece


def slow_uploads(run: Run, users: list[str]) -> list[tuple[str, Answer, str]]:
    """8 users × one slow small upload, one user × 2 more, 8 users × one slow 1.2 MB upload; meanwhile a
    small and a large publish of another user and GET probes, which must not wait."""
    url = run.reg.url
    slow: list[tuple[str, Answer, str]] = []
    lock = threading.Lock()

    def trickler(case: str, token: str, slug: str, burst: int) -> None:
        body, ctype = publish_body(slug, main_md(slug), extra={"data.bin": b"d" * burst})
        request = head("POST", "/api/v1/skills", {"Content-Type": ctype, "Content-Length": str(len(body)),
                                                  "Authorization": f"Bearer {token}"})
        answer = send(url, request + body[:burst], trickle(body[burst:], 1), pause=0.5, timeout=120)
        with lock:
            slow.append((case, answer, answer.error()[:90]))

    jobs: list[tuple[Callable[..., None], tuple[object, ...]]] = []
    for i, token in enumerate(users[:8]):
        jobs.append((trickler, (f"slow small upload, user {i}", token, f"s{i}", 0)))
        jobs.append((trickler, (f"slow 1.2 MB upload, user {i}", token, f"l{i}", 1_200_000)))
    jobs += [(trickler, (f"slow small upload, user 0, extra {j}", users[0], f"x{j}", 0)) for j in range(2)]

    def head_trickler(case: str) -> None:
        request = head("GET", "/api/v1/skills", {"X-Slow": "s" * 100})
        answer = send(url, b"", trickle(request, 1), pause=0.5, timeout=120)
        with lock:
            slow.append((case, answer, "connection closed" if answer.status == 0 else answer.error()[:90]))

    jobs += [(head_trickler, (f"request head sent 1 byte every 0.5 s ({i})",)) for i in range(20)]
    threads = [threading.Thread(target=f, args=a, daemon=True) for f, a in jobs]
    for t in threads:
        t.start()
    time.sleep(1.0)
    run.publish("small publish during the slow uploads", "calm", main_md("calm"), token=users[8])
    run.publish("1.5 MB publish during the slow uploads", "calm-large", main_md("calm-large"), token=users[9],
                extra={"data.bin": b"L" * 1_500_000})
    for i in range(5):
        run.record(f"GET /skills during the slow uploads ({i + 1})", send(url, head("GET", "/api/v1/skills", {})), "ok")
        time.sleep(0.5)
    for t in threads:
        t.join(timeout=120)
    return slow


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, seconds: proves the script still runs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, start_registry(Path(tmp)) as reg:
        sampler = Sampler(reg.process.pid)
        sampler.start()
        idle_kb = sampler.field("VmRSS")
        run = Run(reg)
        users = [reg.create_token(f"user{i}") for i in range(10)]
        corpus(run)
        slow = [] if args.smoke else slow_uploads(run, users)  # the slow cases take minutes by design
        bad_input(run)
        phases = {"before the memory cases": sampler.peak_kb}
        figures = {} if args.smoke else memory_cases(run, sampler, phases)
        alive = send(reg.url, head("GET", "/api/v1/skills", {}))
        sampler.stop.set()
        hwm_kb = sampler.field("VmHWM")
        crashed = reg.process.poll() is not None or alive.status != 200
    rows = run.rows
    width = max(len(r[0]) for r in rows + slow)
    print(f"{'case':<{width}}  status  seconds  answer")
    for case, answer, note in rows:
        print(f"{case:<{width}}  {answer.status:>6}  {answer.seconds:7.3f}  {note}")
    print("\nslow uploads (1 byte every 0.5 s after the burst; cut when a 5 s window brings less than 80 KB)")
    print("and slow request heads (closed 10 s after the connection opened):")
    for case, answer, note in sorted(slow):
        print(f"{case:<{width}}  {answer.status:>6}  {answer.seconds:7.3f}  {note}")
    # A 503 (with Retry-After) is a refusal by design: a budget or the storage said "not now".
    server_errors = sum(1 for c, a, _ in rows + slow
                        if (a.status >= 500 and a.status != 503) or (a.status == 0 and "request head" not in c))
    slow_answers = [r for r in rows if r[1].seconds > 2 and not r[0].startswith(_BULK)]
    print(f"\nserver process: {'CRASHED' if crashed else 'alive'}; 5xx but 503, or no answer: {server_errors}; "
          f"answers over 2 s (slow uploads apart): {len(slow_answers)}")
    print(f"server RSS: {idle_kb / 1024:.0f} MB at rest, peak sampled {sampler.peak_kb / 1024:.0f} MB, "
          f"VmHWM {hwm_kb / 1024:.0f} MB")
    print("peak RSS up to the end of: " + ", ".join(f"{k} {v / 1024:.0f} MB" for k, v in phases.items()))
    print(f"slow uploads and heads: {len(slow)} ended, statuses {sorted({a.status for _, a, _ in slow})} (0: closed), "
          f"longest {max((a.seconds for _, a, _ in slow), default=0.0):.1f} s")
    if args.json:
        args.json.write_text(json.dumps({
            "answers": [{"case": c, "status": a.status, "seconds": round(a.seconds, 4)} for c, a, _ in rows],
            "slow_uploads": [{"case": c, "status": a.status, "seconds": round(a.seconds, 2)} for c, a, _ in slow],
            "crashed": crashed, "server_errors": server_errors, "over_2s": len(slow_answers),
            "rss_idle_mb": round(idle_kb / 1024), "rss_peak_mb": round(sampler.peak_kb / 1024),
            "vm_hwm_mb": round(hwm_kb / 1024), **{k: round(v, 2) for k, v in figures.items()},
        }, indent=2) + "\n")
    if args.smoke:
        return 1 if crashed else 0
    return 1 if crashed or server_errors or slow_answers or hwm_kb > 400 * 1024 else 0


if __name__ == "__main__":
    sys.exit(main())
