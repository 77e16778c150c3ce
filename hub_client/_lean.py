"""Import httpx without its command-line client.

`import httpx` runs `from ._main import main`, and `httpx._main` imports click, rich (console,
progress, syntax, table) and pygments for the `httpx` console script: about 45 ms of a strawpot
command's start-up that no library use needs. Importing this module first puts a stand-in for
`httpx._main` in place while httpx initialises, then removes it, so `httpx.main` loads the real
client on first call and `import httpx._main` still finds the real module.

It also keeps httpcore unimported until a transport needs it (`_main` imports it), which the default transport
(`_stdlib`) never does. Measured: `import hub_client` 0.13 s of CPU with it against 0.20 s without, 5 MiB less
memory. It relies on httpx's `__init__` importing `._main`: tests/hub_client/test_lean_import.py pins the httpx
versions it was checked against and fails once httpx no longer needs it.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any


def _main(*args: Any, **kwargs: Any) -> Any:
    sys.modules.pop("httpx._main", None)
    real = importlib.import_module("httpx._main")
    return real.main(*args, **kwargs)


if "httpx" not in sys.modules and "httpx._main" not in sys.modules:
    stand_in = types.ModuleType("httpx._main")
    stand_in.main = _main  # type: ignore[attr-defined]
    sys.modules["httpx._main"] = stand_in
    try:
        import httpx  # noqa: F401
    finally:
        if sys.modules.get("httpx._main") is stand_in:
            del sys.modules["httpx._main"]
