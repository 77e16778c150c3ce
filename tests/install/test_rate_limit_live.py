"""A registry that rate limits (`strawpot registry serve --rate-limit 0.5`): the install waits its 429s out."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

import httpx

from hub_client import HubClient
from strawpot.publishing.prepare import prepare_upload
from tests._cli import STRAWPOT
from tests._live_registry import spawn_server, start_registry, stop_server
from tests.install.conftest import FIXTURE_ORDER, FIXTURES


def test_install_role_lead_from_a_registry_limited_to_one_request_every_two_seconds(tmp_path: Path) -> None:
    with start_registry(tmp_path) as live:  # published without a limit, then served with one
        with HubClient(live.url, token=live.token) as client:
            for rel in FIXTURE_ORDER:
                upload = prepare_upload(FIXTURES / rel, version="0.1.0" if rel.startswith("agents/") else None)
                client.publish(upload.kind.value, upload.fields, [(f.path, f.data) for f in upload.files])
        data_dir = live.data_dir
    process, url = spawn_server(data_dir, tmp_path / "limited.log", rate_limit=0.5)
    try:
        project = tmp_path / "proj"
        project.mkdir()
        home = tmp_path / "home"
        env = {**os.environ, "STRAWPOT_REGISTRY_URL": url, "STRAWPOT_CACHE_DIR": str(home / "cache"),
               "STRAWPOT_CONFIG_DIR": str(home / "config"), "STRAWPOT_HOME": str(home / "global"), "COLUMNS": "400"}
        env.pop("STRAWPOT_TOKEN", None)
        # The install itself needs two requests (closure, one bundle). Another client on the same address empties
        # the bucket (it meets a 429) before the install starts and keeps it empty until the install says it met
        # one. At 0.5 a second the bucket holds one token (a burst of 2 x rate, at least 1) and refills it in 2 s:
        # the install meets no 429 only if that client stalls 2 s AND the install takes 2 s between its two
        # requests (at 1 a second, a burst of 2, a 2 s stall of that client alone let both through).
        said = threading.Event()
        drained: list[int] = []

        def drain() -> None:
            with httpx.Client(base_url=url, timeout=10) as other:
                while not said.is_set():
                    drained.append(other.get("/api/v1/skills").status_code)
                    time.sleep(0.05)

        drainer = threading.Thread(target=drain, daemon=True)
        drainer.start()
        deadline = time.monotonic() + 30
        while 429 not in drained and time.monotonic() < deadline:
            time.sleep(0.02)
        assert 429 in drained, drained
        install = subprocess.Popen([*STRAWPOT, "install", "role", "lead", "--skip-tools"], cwd=project, env=env,
                                   stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True)
        assert install.stderr is not None
        err = []
        for line in install.stderr:
            err.append(line)
            if "rate limiting" in line:
                said.set()
        said.set()
        drainer.join(timeout=30)
        stdout, _ = install.communicate(timeout=300)
        done = subprocess.CompletedProcess(install.args, install.returncode, stdout, "".join(err))
    finally:
        stop_server(process)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (project / ".strawpot" / "roles" / "lead" / ".version").read_text() == "1.0.0\n"
    assert (project / "strawpot.lock").is_file()
    told = [line for line in done.stderr.splitlines() if "rate limiting" in line]
    assert len(told) == 1 and "Retry-After" in told[0], done.stderr
    assert "error" not in done.stderr.lower()
