"""Real PostgreSQL and S3 servers on loopback for the registry tests (no mocks).

    with postgres_server(Path(tmp)) as pg:     # initdb in a temp dir, pg_ctl start, run as an unprivileged user
        pg.url("mydb")                          # postgresql://strawpot:...@127.0.0.1:PORT/mydb
    with s3_server() as s3:                     # moto's standalone S3 server (python -m moto.server)
        s3.endpoint

PostgreSQL refuses to run as root, and CI runs as root: then the cluster belongs to the `postgres` system
user (made by Debian's package, which `scripts/bootstrap.sh --test-tools` installs) or `nobody`, and its commands run
through `runuser`. Stdlib only, besides the servers themselves.
"""

from __future__ import annotations

import glob
import os
import pwd
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

PASSWORD = "pg-test-secret"
USER = "strawpot"
S3_ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _pg_bin(tool: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{tool}"))
    if found:
        return found[-1]
    path = shutil.which(tool)
    if path is None:
        raise RuntimeError(f"{tool} not found: run `bash scripts/bootstrap.sh --test-tools` (it installs Debian's postgresql)")
    return path


def _owner() -> str | None:
    """The unprivileged user that runs the cluster when we are root (None: run as ourselves)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise RuntimeError("running as root and neither a 'postgres' nor a 'nobody' user exists")


@dataclass
class Postgres:
    root: Path
    port: int
    owner: str | None

    def url(self, dbname: str = "postgres", *, password: str = PASSWORD, options: str = "") -> str:
        query = f"?options={options}" if options else ""
        return f"postgresql://{USER}:{password}@127.0.0.1:{self.port}/{dbname}{query}"

    def ctl(self, *args: str) -> None:
        _run(self.owner, _pg_bin("pg_ctl"), "-D", str(self.root / "data"), "-l", str(self.root / "log"), *args)

    def start(self) -> None:
        opts = (f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root} -c fsync=off"
                " -c synchronous_commit=off -c full_page_writes=off -c max_connections=200")
        self.ctl("-w", "-t", "60", "-o", opts, "start")

    def stop(self) -> None:
        self.ctl("-w", "-t", "60", "-m", "fast", "stop")

    def log(self) -> str:
        return (self.root / "log").read_text(errors="replace") if (self.root / "log").exists() else ""


def _run(owner: str | None, *cmd: str) -> None:
    full = ["runuser", "-u", owner, "--", *cmd] if owner else list(cmd)
    done = subprocess.run(full, capture_output=True, text=True, timeout=120, cwd="/")  # a folder any user may enter
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:2])} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")


def _started(pg: Postgres) -> Postgres:
    """`pg` started; on another free port if a parallel test worker took this one between our probe and the bind."""
    for attempt in range(3):
        try:
            pg.start()
            return pg
        except RuntimeError:
            if attempt == 2 or "already in use" not in pg.log():
                raise
            pg.port = free_port()
    raise AssertionError("unreachable")


@contextmanager
def postgres_server() -> Iterator[Postgres]:
    owner = _owner()
    root = Path(tempfile.mkdtemp(prefix="strawpot-pg-"))
    try:
        pwfile = root / "pw"
        pwfile.write_text(PASSWORD + "\n")
        if owner:
            entry = pwd.getpwnam(owner)
            for path in (root, pwfile):
                os.chown(path, entry.pw_uid, entry.pw_gid)
        _run(owner, _pg_bin("initdb"), "-D", str(root / "data"), "-U", USER, f"--pwfile={pwfile}",
             "--auth=scram-sha-256", "-E", "UTF8", "--no-sync")
        pg = _started(Postgres(root, free_port(), owner))
        try:
            yield pg
        finally:
            with suppress(RuntimeError):
                pg.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)


@dataclass
class S3Server:
    endpoint: str
    process: subprocess.Popen[bytes]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


@contextmanager
def s3_server() -> Iterator[S3Server]:
    """moto's standalone server in its own process on a loopback port it picks itself (`-p 0`), read from the line it
    prints: no window in which a parallel test worker could take the port."""
    with tempfile.TemporaryDirectory(prefix="strawpot-s3-") as tmp:
        log_path = Path(tmp) / "moto.log"
        with log_path.open("wb") as log:
            process = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", "0"],
                                       stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                                       env={**os.environ, **S3_ENV, "NO_COLOR": "1"})
        server = S3Server("", process)
        try:
            deadline = time.monotonic() + 60
            while not (found := re.search(r"Running on (http://127\.0\.0\.1:\d+)", log_path.read_text(errors="replace"))):
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"moto's S3 server did not start:\n{log_path.read_text(errors='replace')}")
                time.sleep(0.05)
            server.endpoint = found[1]
            yield server
        finally:
            server.stop()
