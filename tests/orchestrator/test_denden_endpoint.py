"""Where the Denden socket goes: a fresh private folder of the run's own, with a path gRPC takes as is; never the
project's run folder, where sandboxed agents of other runs could reach it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from orchestrator.endpoint import MAX_SOCKET_PATH, SOCKET_NAME, fits, unix_socket_for


@pytest.mark.parametrize(("path", "ok"), [
    ("/tmp/p/.strawpot/sessions/run_1/denden.sock", True),
    ("/tmp/" + "a" * (MAX_SOCKET_PATH - len("/tmp/")), True),
    ("/tmp/" + "a" * (MAX_SOCKET_PATH - len("/tmp/") + 1), False),
    ("/tmp/my project/denden.sock", False),   # gRPC clients differ on spaces
    ("/tmp/100%25/denden.sock", False),      # gRPC would percent-decode it to another path
    ("/tmp/what?/denden.sock", False),
    ("/tmp/a#b/denden.sock", False),
    ("/tmp/caf\u00e9/denden.sock", False),
    ("relative/denden.sock", False),
])
def test_fits(path: str, ok: bool) -> None:
    assert fits(Path(path)) is ok


@pytest.mark.parametrize("name", ["r", "x" * 120, "with space", "100%"])
def test_a_fresh_private_folder_whatever_the_run_folder(tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    first, second = unix_socket_for(tmp_path / name), unix_socket_for(tmp_path / name)
    try:
        assert first.private_dir is not None and first.path == first.private_dir / SOCKET_NAME
        assert fits(first.path) and first.target == f"unix:{first.path}"
        assert not first.path.is_relative_to(tmp_path)  # never in the run folder, short as its path may be
        info = first.private_dir.stat()
        assert stat.S_IMODE(info.st_mode) == 0o700 and info.st_uid == os.getuid()
        assert first.private_dir != second.private_dir  # one per run, never shared
    finally:
        first.remove()
        second.remove()
    assert not first.private_dir.exists()


def test_the_runtime_dir_is_used_only_when_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runtime = Path("/tmp") / f"rt-{os.getpid()}"
    runtime.mkdir(mode=0o700)
    try:
        os.chmod(runtime, 0o700)
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
        sock = unix_socket_for(tmp_path / ("x" * 120))
        assert sock.private_dir is not None and sock.private_dir.parent == runtime
        sock.remove()
        os.chmod(runtime, 0o755)  # others could list it: not a place for our folder
        sock = unix_socket_for(tmp_path / ("x" * 120))
        assert sock.private_dir is not None and sock.private_dir.parent != runtime
        sock.remove()
    finally:
        runtime.rmdir()
