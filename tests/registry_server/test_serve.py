"""`strawpot registry serve` as a user runs it: default data folder, URL on stderr, rate limit on the wire."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests._cli import STRAWPOT, strawpot
from tests._live_registry import spawn_server, stop_server


def test_serve_creates_the_default_data_folder_and_prints_its_url(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen([*STRAWPOT, "registry", "serve", "--port", "0"],
                                   cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=out)
    try:
        deadline = time.monotonic() + 30
        while not (match := re.search(r"registry listening on (http://127\.0\.0\.1:\d+)", log.read_text())):
            assert time.monotonic() < deadline and process.poll() is None, log.read_text()
            time.sleep(0.05)
        with httpx.Client(trust_env=False) as http:
            doc = http.get(f"{match[1]}/api/v1/openapi.json").json()
            assert "/api/v1/{kinds}/{slug}/versions" in doc["paths"]
        assert (tmp_path / "registry-data" / "registry.sqlite3").is_file()
        assert (tmp_path / "registry-data" / "blobs").is_dir()
    finally:
        stop_server(process)
    assert process.returncode == 0 or process.returncode < 0


def test_rate_limit_on_the_wire(tmp_path: Path) -> None:
    # a burst of one token and one more every 100 s: the first request passes, the next seven are 429 however
    # slowly they come (at 2 a second, a burst of 4, a loaded machine's slow requests could all pass)
    process, url = spawn_server(tmp_path / "data", tmp_path / "serve.log", rate_limit=0.01)
    try:
        with httpx.Client(trust_env=False) as http:
            codes = [http.get(f"{url}/api/v1/skills") for _ in range(8)]
        assert [r.status_code for r in codes] == [200] + [429] * 7
        limited = codes[1:]
        assert limited[0].headers["retry-after"].isdigit() and 1 <= int(limited[0].headers["retry-after"]) <= 100
        assert limited[0].json()["error"].startswith("rate limit exceeded")
    finally:
        stop_server(process)


def test_serve_on_a_port_in_use_is_one_line_and_creates_nothing(tmp_path: Path) -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = strawpot("registry", "serve", "--port", str(port), "--data", str(tmp_path / "data"), cwd=tmp_path)
    assert result.returncode == 1, result.stderr  # uvicorn's own exit code here was 3 ("resolution conflict")
    assert f"error: cannot listen on 127.0.0.1:{port}" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "data").exists()


def test_serve_on_an_unknown_host_is_a_usage_error(tmp_path: Path) -> None:
    result = strawpot("registry", "serve", "--host", "no-such-host.invalid", "--port", "0",
                  "--data", str(tmp_path / "data"), cwd=tmp_path)
    assert result.returncode == 2 and "error: --host 'no-such-host.invalid'" in result.stderr, result.stderr
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize("command", [["serve", "--port", "0"], ["token", "create", "--user", "bob"]])
@pytest.mark.parametrize("where", ["file/sub", "/dev/null", "/proc/no-such-dir"])
def test_a_data_folder_that_cannot_be_one_is_a_usage_error(tmp_path: Path, command: list[str], where: str) -> None:
    (tmp_path / "file").write_text("x")
    data = where if where.startswith("/") else str(tmp_path / where)
    result = strawpot("registry", *command, "--data", data, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert f"error: --data {data}: cannot use it as the registry's data folder" in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
