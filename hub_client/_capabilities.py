"""What a registry was found to support (its extensions), learnt once from its answers, safe across threads."""

from __future__ import annotations

import threading
from typing import Literal

__all__ = ["Capabilities", "Extension"]

# `versions`: GET /{kinds}/{slug}/versions; `closure`: POST /closure; `bundle`: POST /archives
Extension = Literal["versions", "closure", "bundle"]


class Capabilities:
    """Per extension: True (the server has it), False (it has not) or None (no answer has told yet).

    The first answer that tells decides, for the client's lifetime: the pool's threads may learn the same
    fact at once, and it is recorded once (`learn` says whether this call recorded it).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._known: dict[Extension, bool] = {}

    def has(self, extension: Extension) -> bool | None:
        return self._known.get(extension)

    def learn(self, extension: Extension, present: bool) -> bool:
        """Record what an answer told about `extension` unless already known; whether this call recorded it."""
        with self._lock:
            if extension in self._known:
                return False
            self._known[extension] = present
            return True
