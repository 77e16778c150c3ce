"""The byte budget of `POST /archives`: archive bytes all answers in flight may still have to send."""

from __future__ import annotations

from registry_server.errors import ApiError

ARCHIVES_BUDGET = 256 * 1024 * 1024  # archive bytes all answers in flight may still have to send
RETRY_AFTER = "2"


class ByteBudget:
    """Bytes promised by the answers in flight; used on the event loop only (no lock)."""

    def __init__(self, total: int = ARCHIVES_BUDGET) -> None:
        self.total, self.used = total, 0

    def take(self, size: int) -> None:
        """Reserve `size` bytes, or raise a 503 when they do not fit now."""
        if self.used + size > self.total:
            raise ApiError(503, f"the registry is sending {self.used} bytes of archives already (at most "
                                f"{self.total} at once); retry shortly, or fetch them one at a time",
                           {"Retry-After": RETRY_AFTER})
        self.used += size

    def give(self, size: int) -> None:
        self.used -= size
