"""Ray, imported once and in the background while `start` prepares the run (its import is about a second)."""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import threading
from typing import Any

# What Ray imports on its first remote call (ray.util.serialization_addons: pydantic, starlette) and as it leaves
# (ray.dag), about 0.4 s: imported with it
FIRST_CALL = ("ray._common.pydantic_compat", "starlette.datastructures", "ray._private.arrow_serialization",
              "ray.dag.compiled_dag_node")
_loaded: dict[str, Any] = {}
_loader: threading.Thread | None = None
_lock = threading.Lock()


def installed() -> bool:
    """Whether Ray can be imported here, without importing it."""
    return importlib.util.find_spec("ray") is not None


def load_soon() -> None:
    """Start importing Ray in a thread of its own; `ray()` waits for it (an error there is raised by `ray()`)."""
    global _loader
    with _lock:
        if _loader is not None or "ray" in _loaded:
            return
        _loader = threading.Thread(target=_load, name="strawpot-import-ray", daemon=True)
        _loader.start()


def ray() -> Any:
    """The `ray` module (Any: its decorators and handles are beyond mypy), imported here if `load_soon` did not."""
    loader = _loader
    if loader is not None:
        loader.join()
    if "ray" not in _loaded:
        _loaded["ray"] = importlib.import_module("ray")
    return _loaded["ray"]


def _load() -> None:
    with contextlib.suppress(Exception):  # `ray()` imports again in the caller's thread and raises it there
        _loaded["ray"] = importlib.import_module("ray")
        for name in FIRST_CALL:
            importlib.import_module(name)
