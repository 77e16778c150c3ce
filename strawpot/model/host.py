"""The operating systems packages name (linux, macos, windows) and the one this process runs on."""

from __future__ import annotations

import sys

OPERATING_SYSTEMS = ("linux", "macos", "windows")


def current_os() -> str:
    """This machine as packages name it: linux, macos or windows."""
    if sys.platform == "darwin":
        return "macos"
    if sys.platform.startswith(("win", "cygwin", "msys")):
        return "windows"
    return "linux"
