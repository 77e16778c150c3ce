"""The install record: what a script created, changed (content, exec bit, links) or removed, and its checks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from strawpot.model.install_record import (
    RECORD_FILE,
    RecordUnreadable,
    check_output,
    load_record,
    make_record,
    script_sha256,
    snapshot,
)


def test_record_lists_created_changed_and_removed_files_and_links(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("same")
    (tmp_path / "edit.sh").write_text("#!/bin/sh\n")
    (tmp_path / "gone.txt").write_text("bye")
    (tmp_path / ".version").write_text("1.0.0\n")
    shipped = snapshot(tmp_path)
    assert set(shipped) == {"keep.txt", "edit.sh", "gone.txt"}
    (tmp_path / "edit.sh").chmod(0o755)  # only the exec bit changes
    (tmp_path / "gone.txt").unlink()
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "bin").write_bytes(b"\x7fELF")
    os.symlink("out/bin", tmp_path / "tool")
    os.symlink("out", tmp_path / "outdir")
    record = make_record("linux", "sh build.sh", shipped, snapshot(tmp_path))
    assert record.script_sha256 == script_sha256("sh build.sh")
    assert [(f.path, f.executable, f.link) for f in record.outputs] == [
        ("edit.sh", True, None), ("out/bin", False, None), ("outdir", False, "out"), ("tool", False, "out/bin"),
    ]
    assert record.removed == ("gone.txt",)
    (tmp_path / RECORD_FILE).write_text(record.dumps())
    assert load_record(tmp_path) == record
    by_path = {f.path: f for f in record.outputs}
    assert all(check_output(tmp_path / p, f, deep=True) is None for p, f in by_path.items())
    os.unlink(tmp_path / "tool")
    os.symlink("/etc/passwd", tmp_path / "tool")
    assert check_output(tmp_path / "tool", by_path["tool"], deep=True) == "link differs from the install record"
    (tmp_path / "out" / "bin").write_bytes(b"\x7fELG")
    assert check_output(tmp_path / "out" / "bin", by_path["out/bin"], deep=False) is None  # same size
    assert check_output(tmp_path / "out" / "bin", by_path["out/bin"], deep=True) == \
        "content differs from the install record (sha256)"


@pytest.mark.parametrize("text", ["not json", '{"format": 9}', '{"format": 1, "os": "linux"}', "[]"])
def test_a_damaged_record_is_reported_not_trusted(tmp_path: Path, text: str) -> None:
    (tmp_path / RECORD_FILE).write_text(text)
    with pytest.raises(RecordUnreadable):
        load_record(tmp_path)
    assert load_record(tmp_path / "nowhere") is None
