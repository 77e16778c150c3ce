"""The operating systems a package names (`metadata.strawpot.bin/install/tools`) and which one this is."""

from __future__ import annotations

import sys

OPERATING_SYSTEMS = ("linux", "macos", "windows")


def current_os(platform: str = sys.platform) -> str:
    """This machine as a package names it: linux, macos or windows (Cygwin and MSYS run Windows programs).

    Another system keeps its own name (`freebsd14`), so that it matches no package's entry and the
    message says which system has none, rather than borrowing the Linux one.
    """
    if platform.startswith("linux"):
        return "linux"
    if platform == "darwin":
        return "macos"
    if platform.startswith(("win", "cygwin", "msys")):
        return "windows"
    return platform
