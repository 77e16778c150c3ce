"""The one check for relative paths that come from a package, an upload or an archive."""

from __future__ import annotations

import re

MAX_PATH_LENGTH = 1024
MAX_NAME_BYTES = 255  # one file or folder name: what common file systems hold
_DRIVE = re.compile(r"^[A-Za-z]:")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class UnsafePath(ValueError):
    """A path that could escape its package folder or is not portable."""


def safe_relative_path(path: str) -> str:
    """Return `path` as a normalised relative POSIX path, or raise UnsafePath saying why."""
    if not path:
        raise UnsafePath("empty path")
    if len(path) > MAX_PATH_LENGTH:
        raise UnsafePath(f"path longer than {MAX_PATH_LENGTH} characters")
    if _CONTROL.search(path):
        raise UnsafePath(f"control character in path {path!r}")
    if "\\" in path:
        raise UnsafePath(f"backslash in path {path!r}")
    if path.startswith("/") or _DRIVE.match(path):
        raise UnsafePath(f"absolute path {path!r}")
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise UnsafePath(f"path {path!r} has an empty, '.' or '..' component")
    if any(len(part.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES for part in parts):
        raise UnsafePath(f"a name in path {path[:80]!r}... is longer than {MAX_NAME_BYTES} bytes")
    return path  # nothing is left to normalise: no empty, '.' or '..' part, no leading '/'
