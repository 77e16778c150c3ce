"""One atomic file write (`strawpot.model.fs.atomic_write`), and hub_client's streaming copy held to it.

hub_client imports nothing of ours (DESIGN §2), so its cache keeps its own writer; every other layer
(the install pipeline, the registry's blob store, the orchestrator's session record) uses the model's.
"""

from __future__ import annotations

import ast
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from hub_client import _cache
from strawpot.model.fs import atomic_write

ROOT = Path(__file__).resolve().parents[1]
FIRST_PARTY = ("strawpot", "hub_client", "resolver", "orchestrator", "registry_server", "dashboard", "sandbox", "valueclass")


def _model(path: Path, data: bytes) -> None:
    atomic_write(path, data, mode=0o600, durable=False)  # what hub_client's cache needs: no fsync, owner-only


def _hub_client(path: Path, data: bytes) -> None:
    _cache._write_chunks(path, [data[:3], data[3:]])


WRITERS = pytest.mark.parametrize("write", [_model, _hub_client], ids=["model", "hub_client"])


def _what_is_there(folder: Path) -> dict[str, tuple[bytes | str, int]]:
    """Every entry of `folder`: its bytes (a link: its target) and permission bits."""
    found: dict[str, tuple[bytes | str, int]] = {}
    for entry in sorted(folder.iterdir()):
        st = entry.lstat()
        body: bytes | str = os.readlink(entry) if entry.is_symlink() else entry.read_bytes()
        found[entry.name] = (body, stat.S_IMODE(st.st_mode))
    return found


def _scenario(write: Callable[[Path, bytes], None], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """New file in a new folder, a file replaced, a link replaced (never followed), a failed rename."""
    folder = tmp_path / "new" / "folder"
    seen: list[object] = []
    write(folder / "a", b"first bytes")
    seen.append(_what_is_there(folder))
    (folder / "a").chmod(0o644)
    write(folder / "a", b"second")
    seen.append(_what_is_there(folder))
    (tmp_path / "elsewhere").write_bytes(b"not mine")
    (folder / "link").symlink_to(tmp_path / "elsewhere")
    write(folder / "link", b"through a link")
    seen.append((_what_is_there(folder), (tmp_path / "elsewhere").read_bytes()))

    def refuse(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="No space left"):
        write(folder / "a", b"never seen")
    monkeypatch.undo()
    seen.append(_what_is_there(folder))  # the old file, and no temp file beside it
    return seen


@WRITERS
def test_each_writer_leaves_a_whole_file_or_the_old_one(write, tmp_path: Path, monkeypatch) -> None:
    first, second, linked, failed = _scenario(write, tmp_path, monkeypatch)
    assert first == {"a": (b"first bytes", 0o600)}
    assert second == {"a": (b"second", 0o600)}
    assert linked == ({"a": (b"second", 0o600), "link": (b"through a link", 0o600)}, b"not mine")
    assert failed == linked[0]


def test_the_two_writers_behave_the_same(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "m").mkdir()
    (tmp_path / "h").mkdir()
    model = _scenario(_model, tmp_path / "m", monkeypatch)
    hub = _scenario(_hub_client, tmp_path / "h", monkeypatch)
    assert model == hub


def test_durable_writes_sync_and_the_others_do_not(tmp_path: Path, monkeypatch) -> None:
    synced: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real(fd))[1])
    atomic_write(tmp_path / "x", "text")
    assert len(synced) == 1
    atomic_write(tmp_path / "x", "text", durable=False)
    assert len(synced) == 1


def test_the_blob_store_and_the_session_record_use_the_one_write(tmp_path: Path, monkeypatch) -> None:
    from orchestrator import run_record
    from registry_server.storage import blobs

    assert blobs.atomic_write is atomic_write and run_record.atomic_write is atomic_write
    store = blobs.DirectoryBlobs(tmp_path / "blobs")
    digest = store.put(b"archive bytes")
    path = store.path(digest)
    assert _what_is_there(path.parent) == {digest: (b"archive bytes", 0o600)}


def _mkstemp_calls(root: Path) -> list[str]:
    found = []
    for top in FIRST_PARTY:
        for path in sorted((root / top).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Attribute | ast.Name) and "mkstemp" in (getattr(node, "attr", None),
                                                                                 getattr(node, "id", None)):
                    found.append(str(path.relative_to(root)))
    return sorted(set(found))


def test_only_the_two_writers_make_temp_files() -> None:
    assert _mkstemp_calls(ROOT) == ["hub_client/_cache.py", "strawpot/model/fs.py"]
