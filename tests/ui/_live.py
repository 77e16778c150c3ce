"""What the UI's real-server and real-browser tests share: the app on a free loopback port, and a patient wait."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator

import uvicorn
from selenium.webdriver.remote.webdriver import WebDriver

# Generous: on a loaded 2-core CI machine Chromium and a session's subprocesses share the cores.
PATIENCE = 30.0
STOP_GRACE = 0.5  # seconds the server gives open requests when the block ends (`strawpot ui` gives 2)


@contextlib.contextmanager
def serving(app: object) -> Iterator[str]:
    """`app` served by uvicorn on a free loopback port for the block; yields its base URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    # A live page's stream never ends by itself: without a grace the server waits for the browser to go, and
    # the join below gave up after 10 s (in each browser test). The test is done with its page by then.
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=STOP_GRACE))  # type: ignore[arg-type]
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def wait_for(predicate: Callable[[], object], what: str = "the page to change", timeout: float = PATIENCE) -> None:
    """Poll `predicate` until it is true; an element redrawn under us (a stale reference) just means look again."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            if predicate():
                return
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


def no_script_errors(driver: WebDriver) -> None:
    """No CSP violation or script error (a refused page or the absent favicon are network entries)."""
    assert not [e for e in driver.get_log("browser") if e["level"] == "SEVERE" and e["source"] != "network"]
