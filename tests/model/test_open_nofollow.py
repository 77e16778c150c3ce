"""`open_nofollow`: a link or a FIFO planted where strawpot opens a file is refused, and nothing is truncated."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from strawpot.model.fs import current_umask, file_lock, open_nofollow


def test_a_link_and_a_fifo_are_refused_saying_which(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_text("kept\n")
    (tmp_path / "link").symlink_to(target)
    os.mkfifo(tmp_path / "fifo")  # opened for reading without O_NONBLOCK, it would hang
    for name, code, why in (("link", errno.ELOOP, "a symbolic link, not followed"),
                            ("fifo", errno.EINVAL, "not a regular file")):
        with pytest.raises(OSError) as refused:
            os.close(open_nofollow(tmp_path / name, os.O_RDONLY))
        assert (refused.value.errno, refused.value.strerror, refused.value.filename) == (code, why,
                                                                                          str(tmp_path / name))
    assert target.read_text() == "kept\n"


def test_a_regular_file_opens_untruncated_and_a_missing_one_is_made(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_text("kept\n")
    fd = open_nofollow(target, os.O_RDWR | os.O_CREAT)
    try:
        assert os.read(fd, 100) == b"kept\n"
    finally:
        os.close(fd)
    os.close(open_nofollow(tmp_path / "new", os.O_RDWR | os.O_CREAT, 0o600))
    assert (tmp_path / "new").stat().st_mode & 0o777 == 0o600 & ~current_umask()



def test_file_lock_takes_no_link_and_makes_nothing_where_one_points(tmp_path: Path) -> None:
    (tmp_path / ".lock").symlink_to(tmp_path / "made-by-the-lock")  # planted where a lock file goes
    with pytest.raises(OSError, match="a symbolic link, not followed"), file_lock(tmp_path / ".lock"):
        pass
    assert not (tmp_path / "made-by-the-lock").exists()
    with file_lock(tmp_path / "real.lock"):
        assert (tmp_path / "real.lock").is_file()
