"""Import httpx without its command-line client.

`import httpx` runs `from ._main import main`, and `httpx._main` imports click, rich (console,
progress, syntax, table) and pygments for the `httpx` console script: about 45 ms of a strawpot
command's start-up that no library use needs. Importing this module first puts a stand-in for
`httpx._main` in place while httpx initialises, then removes it, so `httpx.main` loads the real
client on first call and `import httpx._main` still finds the real module.

It also keeps httpcore unimported until a transport needs it (`_main` imports it), which the default transport
(`_stdlib`) never does, and idna until a URL names a host that is not ASCII (httpx's `_urlparse` imports it for
those alone, ~2% of a cold install's CPU): a stand-in module takes its place while httpx initialises and imports
the real one on first use; `import idna` elsewhere finds the real module. Measured: `import hub_client` 0.13 s of CPU with it against 0.20 s without, 5 MiB less
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


class _FirstUse(types.ModuleType):
    """Stands in for a module in the namespace of whatever imported it, and imports it at its first attribute."""

    def __getattr__(self, name: str) -> Any:
        return getattr(importlib.import_module(self.__name__), name)


if "httpx" not in sys.modules and "httpx._main" not in sys.modules:
    stand_in = types.ModuleType("httpx._main")
    stand_in.main = _main  # type: ignore[attr-defined]
    stand_ins = {"httpx._main": stand_in}
    if "idna" not in sys.modules:
        stand_ins["idna"] = _FirstUse("idna")
    sys.modules.update(stand_ins)
    try:
        import httpx  # noqa: F401
    finally:
        for name, module in stand_ins.items():
            if sys.modules.get(name) is module:
                del sys.modules[name]
