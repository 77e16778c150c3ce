"""`registry serve --upstream URL`: two real registries on loopback, one in front of the other (issue 41).

Local names first and never shadowed, upstream's packages cached (metadata for the TTL, archives for good) and
served when upstream is down, bytes and hashes unchanged, a loop refused.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from strawpot.model.archive import build_archive
from strawpot.model.lockfile import Lockfile
from tests._cli import strawpot_here
from tests._live_registry import LiveRegistry, start_registry, stop_server
from tests.registry_server.conftest import Backend

ROOT = Path(__file__).resolve().parents[2]
SKILLS = ROOT / "fixtures" / "skills"


def env(base: Path, url: str, token: str = "") -> dict[str, str]:
    return {"STRAWPOT_REGISTRY_URL": url, "STRAWPOT_TOKEN": token, "STRAWPOT_TOKEN_REGISTRY": "",
            "STRAWPOT_CONFIG_DIR": str(base / "config"), "STRAWPOT_CACHE_DIR": str(base / "cache")}


def publish(base: Path, registry: LiveRegistry, folder: Path, *, expect: int = 0) -> str:
    done = strawpot_here("publish", folder, cwd=base, extra_env=env(base, registry.url, registry.token))
    assert done.returncode == expect, done.stderr
    return done.stderr


def variant(base: Path, skill: str, version: str, words: str) -> Path:
    """A copy of a fixture skill at another version, with other words in it (so its sha256 differs)."""
    folder = base / f"{skill}-{version}-{hashlib.sha256(words.encode()).hexdigest()[:6]}"
    shutil.copytree(SKILLS / skill, folder)
    main = folder / "SKILL.md"
    text = main.read_text(encoding="utf-8").replace("version: 1.0.0", f"version: {version}")
    main.write_text(text + f"\n{words}\n", encoding="utf-8")
    return folder


def versions(registry: LiveRegistry | str, slug: str, kind: str = "skills") -> httpx.Response:
    url = registry if isinstance(registry, str) else registry.url
    return httpx.get(f"{url}/api/v1/{kind}/{slug}/versions", timeout=30)


@pytest.fixture
def upstream(tmp_path: Path) -> Iterator[LiveRegistry]:
    with start_registry(tmp_path / "up") as reg:
        yield reg


def mirror_of(tmp_path: Path, url: str, *more: str) -> AbstractContextManager[LiveRegistry]:
    return start_registry(tmp_path / "mirror", serve_args=["--upstream", url, *more])


def test_a_lock_mixing_private_and_public_packages_installs_through_the_mirror_then_with_upstream_stopped(
        tmp_path: Path, upstream: LiveRegistry) -> None:
    publish(tmp_path, upstream, SKILLS / "git-workflow")  # public: upstream only
    with mirror_of(tmp_path, upstream.url, "--upstream-ttl", "1") as mirror:
        publish(tmp_path, mirror, SKILLS / "code-style")  # private: the mirror's own
        project = tmp_path / "project"
        project.mkdir()
        done = strawpot_here("install", "skill", "git-workflow", "skill", "code-style", cwd=project,
                             extra_env=env(tmp_path / "first", mirror.url))
        assert done.returncode == 0, done.stderr
        lock = Lockfile.load(project / "strawpot.lock")
        assert {p.name for p in lock.packages} == {"git-workflow", "code-style"}
        assert {p.source for p in lock.packages} == {mirror.url}
        upstream_sha = versions(upstream, "git-workflow").json()["versions"][0]["sha256"]
        assert next(p for p in lock.packages if p.name == "git-workflow").archive_sha256 == upstream_sha

        stop_server(upstream.process)
        clone = tmp_path / "clone"
        clone.mkdir()
        for name in ("strawpot.toml", "strawpot.lock"):
            shutil.copy(project / name, clone / name)
        again = strawpot_here("install", cwd=clone, extra_env=env(tmp_path / "second", mirror.url))
        assert again.returncode == 0, again.stderr
        assert {p.parent.name for p in clone.rglob("SKILL.md")} >= {"git-workflow", "code-style"}
        time.sleep(1.1)  # past the TTL: upstream is asked, cannot answer, the cache answers and says so
        stale = versions(mirror, "git-workflow")
        assert stale.status_code == 200 and stale.headers["x-strawpot-upstream"] == "stale"
        assert stale.json()["versions"][0]["sha256"] == upstream_sha
        assert "upstream unreachable: skill git-workflow served from the mirror's cache" in mirror.log()


def yank(registry: LiveRegistry, slug: str, version: str) -> None:
    done = httpx.post(f"{registry.url}/api/v1/skills/{slug}/versions/{version}/yank", json={"yanked": True},
                      headers={"Authorization": f"Bearer {registry.token}"}, timeout=30)
    assert done.status_code == 200, done.text


def test_a_local_or_reserved_name_is_never_served_from_upstream_and_a_cached_name_is_not_published_here(
        tmp_path: Path, upstream: LiveRegistry) -> None:
    with mirror_of(tmp_path, upstream.url) as mirror:
        publish(tmp_path, mirror, SKILLS / "code-style")  # private
        ours = versions(mirror, "code-style").json()["versions"]
        reserved = strawpot_here("registry", "reserve", "skill:diff-reading", "--data", mirror.data_dir, cwd=tmp_path)
        assert reserved.returncode == 0 and reserved.stdout.strip() == "reserved 1 name: skill:diff-reading"
        # later, upstream publishes packages under both names, at higher versions
        publish(tmp_path, upstream, variant(tmp_path, "code-style", "9.0.0", "public"))
        publish(tmp_path, upstream, SKILLS / "git-workflow")
        publish(tmp_path, upstream, SKILLS / "diff-reading")  # it depends on git-workflow
        assert versions(mirror, "code-style").json()["versions"] == ours
        assert httpx.get(f"{mirror.url}/api/v1/skills/code-style/versions/9.0.0/archive").status_code == 404
        assert versions(mirror, "diff-reading").status_code == 404
        assert "9.0.0" not in httpx.post(f"{mirror.url}/api/v1/closure", json={"roots": [
            {"kind": "skill", "slug": "code-style"}]}, timeout=30).text
        # a name the mirror serves from upstream is not published here; the reserved one is (its dependency
        # served from upstream)
        assert versions(mirror, "git-workflow").status_code == 200
        main = "api/v1/skills/git-workflow/file?path=SKILL.md&version=1.0.0"
        assert httpx.get(f"{mirror.url}/{main}").content == httpx.get(f"{upstream.url}/{main}").content
        page = httpx.get(f"{mirror.url}/skills/git-workflow", headers={"Accept": "text/html"})
        assert page.status_code == 200 and "mirrored from" in page.text
        assert httpx.get(f"{mirror.url}/api/v1/skills/git-workflow").json()["owner"]["handle"] == "upstream"
        refused = publish(tmp_path, mirror, SKILLS / "git-workflow", expect=1)
        assert "would shadow it" in refused and "strawpot registry reserve skill:git-workflow" in refused
        publish(tmp_path, mirror, SKILLS / "diff-reading")
        assert versions(mirror, "diff-reading").status_code == 200


def test_a_yank_upstream_shows_through_the_mirror_within_the_ttl(tmp_path: Path, upstream: LiveRegistry) -> None:
    publish(tmp_path, upstream, SKILLS / "git-workflow")
    with mirror_of(tmp_path, upstream.url, "--upstream-ttl", "1") as mirror:
        assert versions(mirror, "git-workflow").json()["versions"][0]["yanked"] is False
        yank(upstream, "git-workflow", "1.0.0")
        # the mirror fetched before the yank, so once the TTL has run out since the yank it is stale, and a request
        # past the TTL asks upstream before it answers: that one request shows the yank, however slow the machine
        time.sleep(1 + 0.1)
        assert versions(mirror, "git-workflow").json()["versions"][0]["yanked"] is True, "not asked again past the TTL"
        # a locked version stays installable, as on any registry
        assert httpx.get(f"{mirror.url}/api/v1/skills/git-workflow/versions/1.0.0/archive").status_code == 200


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_upstream_down_at_the_first_request_is_one_503_naming_it_with_retry_after(tmp_path: Path) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    with mirror_of(tmp_path, dead) as mirror:
        answer = versions(mirror, "git-workflow")
        assert answer.status_code == 503 and answer.headers["retry-after"] == "5"
        error = answer.json()["error"]
        assert error.startswith(f"upstream {dead}: could not reach") and "\n" not in error
        assert not any((mirror.data_dir / "upstream-blobs").rglob("*")) if (mirror.data_dir / "upstream-blobs").exists() else True


def test_a_mirror_that_is_its_own_upstream_refuses_the_loop(tmp_path: Path) -> None:
    port = free_port()
    with mirror_of(tmp_path, f"http://127.0.0.1:{port}", "--port", str(port)) as mirror:
        assert mirror.url.endswith(f":{port}")
        answer = versions(mirror, "git-workflow")
        assert answer.status_code == 503, answer.text
        assert "mirror loop" in answer.json()["error"]


class HostileUpstream(BaseHTTPRequestHandler):
    """An upstream whose metadata is right and whose archives are not: `evil` sends other bytes than its sha256,
    `moved` redirects to another host, `huge` declares 10 GB, `endless` sends far more than it declares; `garbage` answers its metadata with no JSON, `slow` drips it."""

    archive = build_archive({"SKILL.md": b"---\nname: evil\ndescription: d\nversion: 1.0.0\n---\nbody\n"})
    asked: list[str] = []

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.asked.append(self.path)
        slug = self.path.split("/")[4] if self.path.count("/") >= 4 else ""
        if self.path.endswith("/versions") and slug in ("evil", "moved", "huge", "endless"):
            body = json.dumps({"kind": "skill", "slug": slug, "versions": [{
                "version": "1.0.0", "dependencies": {}, "defaultAgent": None, "tools": {},
                "sha256": hashlib.sha256(self.archive).hexdigest(),
                "size": 10 * 1024**3 if slug == "huge" else len(self.archive),
                "files": [], "yanked": False, "createdAt": 1}]}).encode()
            self._send(200, body, "application/json")
        elif self.path.endswith("/versions") and slug == "slow":  # a slow drip: a byte every half second
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "1000")
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the reader hung up, as it should
                for _ in range(240):  # two minutes, unless the reader hangs up
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(0.5)
        elif self.path.endswith("/versions") and slug == "garbage":
            self._send(200, b"<html>\x00not json", "application/json")
        elif self.path.endswith("/archive") and slug == "endless":  # far more than the size it declared
            self.send_response(200)
            self.send_header("Content-Type", "application/gzip")
            self.end_headers()
            try:
                for _ in range(200):
                    self.wfile.write(b"\0" * (1 << 20))
            except OSError:  # the mirror stopped reading
                pass
        elif self.path.endswith("/archive") and slug == "evil":
            self._send(200, self.archive[:-1] + bytes([self.archive[-1] ^ 1]), "application/gzip")
        elif self.path.endswith("/archive") and slug == "moved":
            self.send_response(302)
            self.send_header("Location", "http://127.0.0.2:9/elsewhere.tar.gz")
            self.send_header("Content-Length", "0")
            self.end_headers()
        else:
            self._send(404, b'{"error":"not found"}', "application/json")

    def _send(self, status: int, body: bytes, media: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", media)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def hostile() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), HostileUpstream)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_slow_drip_upstream_ends_at_the_deadline_in_a_503(tmp_path: Path, hostile: str) -> None:
    with mirror_of(tmp_path, hostile, "--upstream-deadline", "1") as mirror:
        started = time.monotonic()
        answer = versions(mirror, "slow")
        assert answer.status_code == 503 and answer.headers["retry-after"] == "5", answer.text
        assert answer.json()["error"].startswith(f"upstream {hostile}: ")
        assert time.monotonic() - started < 60  # two tries of 1 s and a backoff, not the 120 s the drip lasts


def test_an_archive_that_is_not_what_upstream_s_metadata_says_is_refused_and_not_cached(
        tmp_path: Path, hostile: str) -> None:
    with mirror_of(tmp_path, hostile) as mirror:
        garbage = versions(mirror, "garbage")  # refused (502, nothing to retry), and upstream is not paused for it
        assert garbage.status_code == 502 and garbage.json()["error"].startswith(f"upstream {hostile}: ")
        for slug in ("evil", "moved", "huge", "endless"):
            assert versions(mirror, slug).status_code == 200
            for _ in range(2):  # refused each time: nothing was cached
                answer = httpx.get(f"{mirror.url}/api/v1/skills/{slug}/versions/1.0.0/archive", timeout=30)
                assert answer.status_code in (502, 503), answer.text
                assert answer.json()["error"].startswith("upstream http://127.0.0.1:")
                assert "\n" not in answer.json()["error"]
                assert slug != "evil" or (answer.status_code == 502 and "sha256" in answer.json()["error"])
        blobs = mirror.data_dir / "upstream-blobs"
        assert not blobs.exists() or not [p for p in blobs.rglob("*") if p.is_file()]
        assert sum(p.endswith("/evil/versions/1.0.0/archive") for p in HostileUpstream.asked) >= 2
        assert not any("elsewhere" in p or "/huge/versions/1.0.0/archive" in p for p in HostileUpstream.asked)


def gc(tmp_path: Path, mirror: LiveRegistry, *args: str) -> str:
    done = strawpot_here("registry", "gc", "--data", mirror.data_dir, *args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_cache_bound_evicts_the_least_recently_used_archive_and_gc_reports_what_it_freed(
        tmp_path: Path, upstream: LiveRegistry) -> None:
    slugs = ("git-workflow", "code-style", "task-planning")
    for slug in slugs:
        publish(tmp_path, upstream, SKILLS / slug)
    meta = {slug: versions(upstream, slug).json()["versions"][0] for slug in slugs}
    size = {slug: meta[slug]["size"] for slug in slugs}
    with mirror_of(tmp_path, upstream.url, "--upstream-cache-max", str(max(size.values()) + 1)) as mirror:
        publish(tmp_path, mirror, SKILLS / "diff-reading")  # local, and it depends on git-workflow (upstream's)
        for slug in slugs:  # each over the bound: the least recently used goes, except one diff-reading needs
            answer = httpx.get(f"{mirror.url}/api/v1/skills/{slug}/versions/1.0.0/archive", timeout=30)
            assert answer.status_code == 200 and hashlib.sha256(answer.content).hexdigest() == meta[slug]["sha256"]
        stored = {p.name for p in (mirror.data_dir / "upstream-blobs").rglob("*") if p.is_file()}
        assert meta["git-workflow"]["sha256"] in stored and meta["task-planning"]["sha256"] in stored
        assert meta["code-style"]["sha256"] not in stored
        kept = size["git-workflow"] + size["task-planning"]
        assert gc(tmp_path, mirror).splitlines()[-1] == \
            f"upstream cache: removed 0 archives (0 bytes freed); kept 2 ({kept} bytes)"
        planned = gc(tmp_path, mirror, "--upstream-cache-max", "0", "--dry-run").splitlines()
        assert planned[-2:] == [
            f"would remove upstream archive skill task-planning 1.0.0 ({size['task-planning']} bytes)",
            f"upstream cache: would remove 1 archive ({size['task-planning']} bytes freed); kept 1 "
            f"({size['git-workflow']} bytes)"]
        assert meta["task-planning"]["sha256"] in {p.name for p in (mirror.data_dir / "upstream-blobs").rglob("*")}
        done = gc(tmp_path, mirror, "--upstream-cache-max", "0").splitlines()
        assert done[-1] == f"upstream cache: removed 1 archive ({size['task-planning']} bytes freed); kept 1 " \
            f"({size['git-workflow']} bytes)"
        assert meta["task-planning"]["sha256"] not in {p.name for p in (mirror.data_dir / "upstream-blobs").rglob("*")}

def test_reserve_refuses_a_malformed_name_in_one_line(tmp_path: Path) -> None:
    for name, words in (("skill", "give KIND:SLUG"), ("tool:x", "give KIND:SLUG"), ("skill:Bad_Name", "skill:Bad_Name")):
        done = strawpot_here("registry", "reserve", name, "--data", tmp_path / "data", cwd=tmp_path)
        assert done.returncode == 2 and words in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert not (tmp_path / "data").exists()  # refused before the storage is opened


def test_on_postgresql_and_s3_the_cache_lives_apart_and_answers_when_upstream_is_down(
        tmp_path: Path, upstream: LiveRegistry, pg_s3: Backend) -> None:
    import boto3

    publish(tmp_path, upstream, SKILLS / "git-workflow")
    (tmp_path / "mirror").mkdir()  # the log's folder (the data lives in PostgreSQL and S3)
    with start_registry(tmp_path / "mirror", storage_args=pg_s3.args(),
                        serve_args=["--upstream", upstream.url, "--upstream-ttl", "0"]) as mirror:
        meta = versions(mirror, "git-workflow").json()["versions"][0]
        archive = f"{mirror.url}/api/v1/skills/git-workflow/versions/1.0.0/archive"
        assert hashlib.sha256(httpx.get(archive, timeout=30).content).hexdigest() == meta["sha256"]
        bucket, prefix = pg_s3.blobs.removeprefix("s3://").split("/", 1)
        listed = boto3.client("s3", endpoint_url=pg_s3.s3_endpoint).list_objects_v2(Bucket=bucket)
        keys = [obj["Key"] for obj in listed.get("Contents", [])]
        assert f"{prefix}-upstream/{meta['sha256'][:2]}/{meta['sha256']}" in keys
        assert not any(key.startswith(f"{prefix}/") for key in keys)  # the registry's own blobs: none of upstream's
        stop_server(upstream.process)
        stale = versions(mirror, "git-workflow")
        assert stale.status_code == 200 and stale.headers["x-strawpot-upstream"] == "stale"
        assert stale.json()["versions"][0] == meta
        assert httpx.get(archive, timeout=30).status_code == 200


def test_several_upstreams_are_asked_in_order_and_one_down_is_never_skipped(
        tmp_path: Path, upstream: LiveRegistry) -> None:
    publish(tmp_path, upstream, SKILLS / "git-workflow")
    with start_registry(tmp_path / "second") as second:
        publish(tmp_path, second, SKILLS / "code-style")
        publish(tmp_path, second, variant(tmp_path, "git-workflow", "5.0.0", "the second's"))
        with mirror_of(tmp_path, upstream.url, "--upstream", second.url) as mirror:
            assert [v["version"] for v in versions(mirror, "git-workflow").json()["versions"]] == ["1.0.0"]
            code_style = versions(mirror, "code-style").json()["versions"][0]
            archive = httpx.get(f"{mirror.url}/api/v1/skills/code-style/versions/1.0.0/archive", timeout=30)
            assert hashlib.sha256(archive.content).hexdigest() == code_style["sha256"]
            stop_server(upstream.process)  # the first is down: a name it might hold is not taken from the second
            answer = versions(mirror, "task-planning")
            assert answer.status_code == 503 and answer.json()["error"].startswith(f"upstream {upstream.url}: ")
