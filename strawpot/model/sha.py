"""SHA-256 for the start-up paths from CPython's own module: `import hashlib` loads OpenSSL (4.5 ms at start-up)."""

from __future__ import annotations

import sys

__all__ = ["sha256"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from hashlib import sha256
else:
    try:
        if sys.version_info >= (3, 12):
            from _sha2 import sha256
        else:
            from _sha256 import sha256
    except ImportError:  # a Python built without its own hashes
        from hashlib import sha256
