"""One real browser over `strawpot ui`: the secret URL lets it in, and the tree updates live without a reload."""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from pathlib import Path

import uvicorn

from dashboard.app import create_app

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "registry_server" / "web"))
from _browser import save_screenshot, start_chromium  # noqa: E402

SECRET = "browser-test-secret"


def _wait_for(predicate: object, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.1)
    raise AssertionError("timed out")


def test_the_run_page_follows_the_run_folder_live(tmp_path: Path) -> None:
    project = tmp_path / "project"
    folder = project / ".strawpot" / "sessions" / "run1"
    folder.mkdir(parents=True)
    (project / "strawpot.toml").write_text("")
    session = {"run_id": "run1", "role": "lead", "state": "running", "started_at": time.time(), "agents": [
        {"agent_id": "lead-1", "role": "lead", "agent": "stub", "parent": None, "state": "running",
         "started_at": time.time()}]}
    (folder / "session.json").write_text(json.dumps(session))

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(project, SECRET), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    driver = start_chromium(tmp_path / "profile")
    try:
        driver.get(f"http://127.0.0.1:{port}/runs/run1")
        assert "forbidden" in driver.page_source
        driver.get(f"http://127.0.0.1:{port}/runs/run1?token={SECRET}")
        assert "lead-1" in driver.page_source and "token" not in driver.current_url
        driver.execute_script("window.notReloaded = true")

        # A delegation appears and the run ends, written to the run folder as the orchestrator would.
        session["agents"].append({"agent_id": "impl-2", "role": "implementer", "agent": "stub",
                                  "parent": "lead-1", "state": "cancelled", "started_at": time.time()})
        session["agents"][0]["state"] = "cancelled"
        session["state"] = "cancelled"
        (folder / "session.json").write_text(json.dumps(session))
        _wait_for(lambda: "impl-2" in driver.find_element("id", "agents").text)
        assert driver.find_element("id", "run-state").text == "cancelled"
        assert driver.execute_script("return window.notReloaded") is True
        # No CSP violation or script error (the 403 above and the absent favicon are network entries).
        assert not [e for e in driver.get_log("browser") if e["level"] == "SEVERE" and e["source"] != "network"]
        shot = save_screenshot(driver, "ui-run-live")
        assert shot.is_file()
    finally:
        driver.quit()
        server.should_exit = True
        thread.join(timeout=10)
