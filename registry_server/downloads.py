"""Download counts, kept in memory and written to storage in batches.

An archive GET is counted on the hot path, so counting must cost a dict update, not a SQLite
write: counts are flushed in one transaction at most `delay` seconds after the first one, before
any read that shows them (list, detail, search), and when the server stops.
"""

from __future__ import annotations

import logging
import threading

from registry_server.storage.base import Storage
from strawpot.model.kinds import Kind

log = logging.getLogger("registry_server")


class DownloadTally:
    def __init__(self, storage: Storage, delay: float = 1.0) -> None:
        self.storage = storage
        self.delay = delay
        self._pending: dict[tuple[Kind, str], int] = {}
        self._lock = threading.Lock()  # guards _pending and _timer
        self._flushing = threading.Lock()  # one flush at a time, so a read after flush() sees every count
        self._timer: threading.Timer | None = None

    def add(self, kind: Kind, slug: str) -> None:
        with self._lock:
            key = (kind, slug)
            self._pending[key] = self._pending.get(key, 0) + 1
            if self._timer is None and self.delay > 0:
                self._timer = threading.Timer(self.delay, self.flush)
                self._timer.daemon = True
                self._timer.start()

    def flush(self) -> None:
        """Write every pending count (blocking; cheap when there is none)."""
        if not self._pending and not self._flushing.locked():
            return
        with self._flushing:
            with self._lock:
                pending, self._pending = self._pending, {}
                timer, self._timer = self._timer, None
            if timer is not None and timer is not threading.current_thread():
                timer.cancel()
            if not pending:
                return
            try:
                self.storage.add_downloads(pending)
            except Exception:  # storage busy or failing: keep the counts for the next flush
                log.exception("could not write %d download count(s); kept for the next attempt", len(pending))
                with self._lock:
                    for key, n in pending.items():
                        self._pending[key] = self._pending.get(key, 0) + n

    def close(self) -> None:
        self.flush()
