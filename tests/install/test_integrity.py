"""Integrity: wrong bytes from a registry or the cache, and unsafe archive members, are refused before
anything is written; `verify` finds tampered files."""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile
from pathlib import Path

import pytest

from strawpot.install.options import Edit, Options, Requested
from strawpot.install.service import run
from strawpot.model.errors import IntegrityFailure
from strawpot.model.kinds import Kind
from strawpot.model.lockfile import Lockfile


def nothing_written(project_dir: Path) -> bool:
    strawpot = project_dir / ".strawpot"
    leftovers = [p for p in strawpot.rglob("*") if p.name != ".lock"] if strawpot.exists() else []
    return not leftovers and not (project_dir / "strawpot.toml").exists() and not (project_dir / "strawpot.lock").exists()


# -- against the live registry ----------------------------------------------------------------------


def test_registry_serving_bytes_that_differ_from_their_sha256_exits_5_and_writes_nothing(cli, project, registry):
    slug = registry.unique("tampered")
    registry.publish("skill", slug, "1.0.0", files={"notes.md": b"original notes\n"})
    sha = registry.client.package_versions("skill", slug).versions[-1].sha256
    blob = registry.blob_path(sha)
    data = bytearray(blob.read_bytes())
    data[-5] ^= 0xFF  # same size, different bytes
    blob.write_bytes(bytes(data))

    result = cli("install", "skill", slug, "--project", project.dir)
    assert result.code == 5, result.text
    assert "sha256" in result.err and "Traceback" not in result.err
    assert nothing_written(project.dir)


def test_a_corrupted_cache_entry_is_refetched_and_refused_offline(cli, project, isolated_env):
    assert cli("install", "skill", "git-workflow", "--project", project.dir).code == 0
    lock = Lockfile.load(project.lock_path)
    sha = lock.packages[0].archive_sha256
    assert sha
    cached = isolated_env / "cache" / "archives-v1" / sha[:2] / sha
    good = cached.read_bytes()
    cached.write_bytes(good[:-3] + b"xyz")

    import shutil

    shutil.rmtree(project.dir / ".strawpot" / "skills")
    offline = cli("install", "--offline", "--project", project.dir)
    assert offline.code == 6  # the corrupted entry is not used, and offline nothing replaces it
    assert not (project.dir / ".strawpot" / "skills" / "git-workflow").exists()

    online = cli("install", "--project", project.dir)
    assert online.code == 0, online.text
    assert cached.read_bytes() == good
    assert cli("verify", "--project", project.dir).code == 0


def test_a_bundled_download_is_cached_as_one_pack_and_a_damaged_pack_is_refetched(cli, project, isolated_env):
    assert cli("install", "role", "reviewer", "--project", project.dir).code == 0  # 11 archives, one bundle
    archives = isolated_env / "cache" / "archives-v1"
    (pack,) = (archives / "packs").iterdir()
    assert [p for p in archives.rglob("*") if p.is_file()] == [pack]  # not a file per archive
    lock = Lockfile.load(project.lock_path)

    import shutil

    second = project.dir / "second"  # another project resolves the same role: its archives come from the pack
    second.mkdir()
    assert cli("install", "role", "reviewer", "--project", second).code == 0
    shutil.rmtree(project.dir / ".strawpot")
    assert cli("install", "--offline", "--project", project.dir).code == 0
    for where in (project.dir, second):
        assert cli("verify", "--project", where).code == 0
    assert [p for p in archives.rglob("*") if p.is_file()] == [pack]  # read from the pack, never copied out

    raw = bytearray(pack.read_bytes())
    raw[-10] ^= 0xFF  # inside the last archive's bytes
    pack.write_bytes(bytes(raw))
    shutil.rmtree(project.dir / ".strawpot")
    offline = cli("install", "--offline", "--project", project.dir)
    assert offline.code == 6, offline.text  # the damaged pack is dropped, and offline nothing replaces it
    assert not pack.exists()
    online = cli("install", "--project", project.dir)
    assert online.code == 0, online.text
    assert cli("verify", "--project", project.dir).code == 0
    assert Lockfile.load(project.lock_path) == lock


def test_verify_lists_tampered_missing_and_extra_files_and_exits_5(cli, project):
    assert cli("install", "skill", "task-planning", "--project", project.dir).code == 0
    assert cli("verify", "--project", project.dir).code == 0
    base = project.dir / ".strawpot" / "skills" / "task-planning"
    main = base / "SKILL.md"
    text = main.read_bytes()
    main.write_bytes(text[:-1] + (b"X" if text[-1:] != b"X" else b"Y"))  # same size: only a hash sees it
    (base / "templates" / "plan.md").unlink()
    (base / "extra.txt").write_text("x")
    result = cli("verify", "--project", project.dir)
    assert result.code == 5
    assert "skill task-planning: SKILL.md: content differs from the lock (sha256)" in result.out
    assert "skill task-planning: templates/plan.md: missing" in result.out
    assert "skill task-planning: extra.txt: file not in the lock" in result.out
    assert cli("sync", "--project", project.dir).code == 0
    assert cli("verify", "--project", project.dir).code == 0


# -- unsafe archives (a registry the real server could never be: crafted with a mock transport) ------


def _tar(add) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        add(tar)
    return gzip.compress(raw.getvalue())


def _file(tar: tarfile.TarFile, name: str, data: bytes = b"x") -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def _special(kind: bytes, name: str, link: str = "") -> object:
    def add(tar: tarfile.TarFile) -> None:
        _file(tar, "SKILL.md", b"---\nname: evil\ndescription: d\n---\n")
        info = tarfile.TarInfo(name)
        info.type = kind
        info.linkname = link
        if kind == tarfile.CHRTYPE:
            info.devmajor, info.devminor = 1, 3
        tar.addfile(info)

    return add


def _member(name: str) -> object:
    def add(tar: tarfile.TarFile) -> None:
        _file(tar, "SKILL.md", b"---\nname: evil\ndescription: d\n---\n")
        _file(tar, name, b"pwned")

    return add


@pytest.mark.parametrize(
    ("label", "builder"),
    [
        ("dot-dot", _member("../x")),
        ("nested dot-dot", _member("docs/../../x")),
        ("absolute", _member("/tmp/strawpot-evil-abs")),
        ("symlink", _special(tarfile.SYMTYPE, "link", "/etc/passwd")),
        ("hard link", _special(tarfile.LNKTYPE, "hard", "SKILL.md")),
        ("device", _special(tarfile.CHRTYPE, "null")),
        ("fifo", _special(tarfile.FIFOTYPE, "pipe")),
    ],
)
def test_unsafe_archive_members_are_refused_before_anything_is_written(fakehub, hub_client, project, label, builder):
    archive = _tar(builder)
    fakehub.add("skill", "good", "1.0.0")
    fakehub.add("skill", "evil", "1.0.0", deps=["good"], archive=archive)
    with pytest.raises(IntegrityFailure) as caught:
        run(project, Edit(add=(Requested(Kind.SKILL, "evil"),)), Options(registry="http://hub.test"), client=hub_client)
    assert "skill evil 1.0.0" in caught.value.message
    assert caught.value.exit_code == 5
    assert nothing_written(project.dir)
    assert not (project.dir.parent / "x").exists()
    assert not Path("/tmp/strawpot-evil-abs").exists()


def test_archive_whose_files_differ_from_the_listed_file_hashes_is_refused(fakehub, hub_client, project):
    version = fakehub.add("skill", "liar", "1.0.0")
    # the archive is internally consistent with its sha256, but not with the per-file list
    from strawpot.model.archive import build_archive

    version.archive = build_archive({"SKILL.md": b"---\nname: liar\ndescription: other\n---\n"})
    entry = version.entry()
    version.entry = lambda: {**entry, "sha256": hashlib.sha256(version.archive).hexdigest(),  # type: ignore[method-assign]
                             "size": len(version.archive)}
    with pytest.raises(IntegrityFailure) as caught:
        run(project, Edit(add=(Requested(Kind.SKILL, "liar"),)), Options(registry="http://hub.test"), client=hub_client)
    assert "does not match strawpot.lock" in caught.value.message
    assert nothing_written(project.dir)


@pytest.mark.parametrize("reserved", [".install-record.json", ".version"])
def test_a_package_carrying_a_file_strawpot_writes_itself_is_refused(fakehub, hub_client, project, reserved):
    forged = b'{"format": 1, "os": "linux", "script_sha256": "", "outputs": [], "removed": []}'
    fakehub.add("skill", "forger", "1.0.0", files={reserved: forged})
    with pytest.raises(IntegrityFailure) as caught:
        run(project, Edit(add=(Requested(Kind.SKILL, "forger"),)), Options(registry="http://hub.test"), client=hub_client)
    assert f"{reserved}: a file name strawpot reserves" in caught.value.message
    assert nothing_written(project.dir)
