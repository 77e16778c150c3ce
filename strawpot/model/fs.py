"""Crash-safe file writes, the per-project file lock, and opening a file without following a planted link."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path


def atomic_write(path: Path, data: bytes | str, *, mode: int | None = None, durable: bool = True) -> None:
    """Write `data` to a temp file beside `path`, fsync it (unless not `durable`), then rename it over `path`:
    readers see the old file or the new one, never a mix, and a failure leaves the old one and no temp file.

    The file gets `mode`; without one it keeps the mode it had (a user's `chmod 644` survives), and a new
    file gets 0644 less the umask, as `open()` would have made it (mkstemp alone would leave 0600).
    `durable=False` skips the fsync, for a file rewritten often whose loss in a power cut costs nothing.
    The one atomic write of the tree (`hub_client` keeps its own, streaming, for it imports nothing of ours;
    tests/test_atomic_write.py holds the two alike).
    """
    payload = data.encode("utf-8") if isinstance(data, str) else data
    path.parent.mkdir(parents=True, exist_ok=True)
    if mode is None:
        mode = _existing_mode(path)
        if mode is None:
            mode = 0o644 & ~current_umask()
    import tempfile

    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _existing_mode(path: Path) -> int | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mode & 0o7777


def current_umask() -> int:
    """The process umask, read without changing it where Linux allows (os.umask is process-wide)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    current = os.umask(0o022)
    os.umask(current)
    return current


def owned_folder(path: Path) -> bool:
    """Whether `path` is a real folder (not a link to one) owned by this user: one strawpot may have made."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive advisory lock on `path` (created if missing, never through a link: see open_nofollow) for
    the block."""
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    fd = open_nofollow(path, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def open_nofollow(path: Path, flags: int, mode: int = 0o644) -> int:
    """Open `path` as a regular file, refusing a symbolic link at its last component (O_NOFOLLOW) and anything
    but a regular file (a FIFO, a device): OSError, whose strerror says which. Never truncates unless `flags`
    asks (O_TRUNC). Returns the descriptor (close-on-exec; O_NONBLOCK, so a FIFO cannot hang the open)."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP and os.path.islink(path):
            raise OSError(errno.ELOOP, "a symbolic link, not followed", str(path)) from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular_file(path: str | Path, limit: int) -> tuple[bytes, os.stat_result | None, str | None]:
    """(bytes, stat, None), or (b"", stat or None, why not): opened once, never through a link and never blocking on
    a FIFO, then checked and read through that handle (a file swapped between the check and the read cannot slip
    through); a file that is not regular, or holds more than `limit` bytes, is refused unread."""
    special = "links and special files are not allowed in a package"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        return b"", None, special if os.path.islink(path) else f"cannot be read ({exc.strerror or exc}): {path}"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # a folder too (fdopen would refuse it)
            return b"", st, special
        if st.st_size > limit:
            return b"", st, f"{st.st_size} bytes, more than the limit of {limit} a file"
        data = _read_most(fd, st.st_size, limit)
    finally:
        os.close(fd)
    if data is None:
        return b"", st, f"more than the limit of {limit} bytes a file"
    return data, st, None


# bytes of a file of the user's or the project's own (strawpot.toml, strawpot.lock, config.toml, .gitignore) any
# command reads: far more than a real one; a link to /dev/zero or a planted giant is refused, not read for ever
OWN_FILE_MOST = 64 * 1024 * 1024
OWN_FILE_HINT = f"put a regular file you can read there, of at most {OWN_FILE_MOST >> 20} MiB (a FIFO or a device is never read)"


def read_own_file(path: str | Path, limit: int = OWN_FILE_MOST) -> bytes:
    """The bytes of the regular file at `path`, a link followed (a user may link their own strawpot.toml), as
    `Path.read_bytes` gives them, but never blocking on a FIFO and never reading a device or more than `limit`
    bytes: those raise OSError saying so, as a missing file raises FileNotFoundError."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file (a FIFO, a device or a folder)", str(path))
        data = _read_most(fd, st.st_size, limit) if st.st_size <= limit else None
    finally:
        os.close(fd)
    if data is None:
        raise OSError(errno.EFBIG, f"larger than {limit} bytes, more than any real one", str(path))
    return data


def read_own_text(path: str | Path, limit: int = OWN_FILE_MOST) -> str:
    """`read_own_file` as text (`as_text`)."""
    return as_text(read_own_file(path, limit))


def as_text(data: bytes) -> str:
    """`data` as `Path.read_text(encoding="utf-8")` gives a file's bytes: UnicodeDecodeError when not UTF-8, newlines
    translated (CRLF and CR to LF)."""
    text = data.decode("utf-8")
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def _read_most(fd: int, size: int, limit: int) -> bytes | None:
    """Up to `limit` bytes from `fd` (whose file says it holds `size`), or None when it holds more: a file that grows
    while read, or a size that lies, never reads past the limit."""
    chunks, left = [], limit + 1
    while left > 0 and (chunk := os.read(fd, min(left, max(size + 1, 1 << 16)))):  # the size, then EOF
        chunks.append(chunk)
        left -= len(chunk)
    data = b"".join(chunks)
    return None if len(data) > limit else data
