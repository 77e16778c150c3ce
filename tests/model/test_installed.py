"""The installed tree checked against a lock: every difference is named."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from strawpot.model.installed import InstalledPackage, InstalledTree, Mismatch
from strawpot.model.kinds import Kind
from strawpot.model.lockfile import LockedFile, LockedPackage, Lockfile

FILES = {"AGENT.md": b"---\nname: a\n---\n", "bin/run": b"#!/bin/sh\necho hi\n"}


def _lock() -> Lockfile:
    files = tuple(
        LockedFile(path, hashlib.sha256(data).hexdigest(), len(data), path == "bin/run") for path, data in FILES.items()
    )
    return Lockfile(
        (
            LockedPackage(Kind.AGENT, "stub-agent", "0.1.0", "http://r", None, None, files=files),
            LockedPackage(Kind.SKILL, "empty", "1.0.0", "http://r", None, None),
        ),
        manifest_hash="",
    )


@pytest.fixture
def tree(tmp_path: Path) -> InstalledTree:
    root = tmp_path / ".strawpot"
    agent = root / "agents" / "stub-agent"
    for path, data in FILES.items():
        (agent / path).parent.mkdir(parents=True, exist_ok=True)
        (agent / path).write_bytes(data)
    os.chmod(agent / "bin" / "run", 0o755)
    (agent / ".version").write_text("0.1.0\n")
    (root / "skills" / "empty").mkdir(parents=True)
    (root / "skills" / "empty" / ".version").write_text("1.0.0\n")
    return InstalledTree(root)


def test_a_tree_that_matches_has_no_mismatch(tree: InstalledTree) -> None:
    assert tree.verify(_lock()) == []
    assert tree.packages() == [
        InstalledPackage(Kind.SKILL, "empty", "1.0.0", tree.root / "skills" / "empty"),
        InstalledPackage(Kind.AGENT, "stub-agent", "0.1.0", tree.root / "agents" / "stub-agent"),
    ]


def test_same_size_content_change_is_found_only_when_deep(tree: InstalledTree) -> None:
    target = tree.package_dir(Kind.AGENT, "stub-agent") / "AGENT.md"
    target.write_bytes(FILES["AGENT.md"].replace(b"a", b"b"))
    assert tree.verify(_lock(), deep=False) == []
    assert [str(m) for m in tree.verify(_lock())] == ["agent stub-agent: AGENT.md: content differs from the lock (sha256)"]


def test_size_exec_bit_missing_and_extra_files(tree: InstalledTree) -> None:
    base = tree.package_dir(Kind.AGENT, "stub-agent")
    os.chmod(base / "bin" / "run", 0o644)
    (base / "AGENT.md").write_bytes(b"longer" + FILES["AGENT.md"])
    (base / "stray.txt").write_text("x")
    problems = {(m.path, m.problem) for m in tree.verify(_lock())}
    assert problems == {
        ("bin/run", "executable bit differs from the lock"),
        ("AGENT.md", f"size {len(FILES['AGENT.md']) + 6}, lock has {len(FILES['AGENT.md'])}"),
        ("stray.txt", "file not in the lock"),
    }
    (base / "bin" / "run").unlink()
    assert ("bin/run", "missing") in {(m.path, m.problem) for m in tree.verify(_lock())}


def test_a_link_in_place_of_a_file(tree: InstalledTree) -> None:
    run = tree.package_dir(Kind.AGENT, "stub-agent") / "bin" / "run"
    run.unlink()
    run.symlink_to("/bin/sh")
    assert Mismatch(Kind.AGENT, "stub-agent", "bin/run", "not a regular file") in tree.verify(_lock())


def test_versions_and_packages_missing_or_extra(tree: InstalledTree) -> None:
    (tree.package_dir(Kind.AGENT, "stub-agent") / ".version").write_text("0.2.0\n")
    (tree.root / "skills" / "empty" / ".version").unlink()
    (tree.root / "roles" / "stray").mkdir(parents=True)
    assert [str(m) for m in tree.verify(_lock())] == [
        "skill empty: not installed (lock has 1.0.0)",
        "agent stub-agent: version 0.2.0 installed, lock has 0.1.0",
        "role stray: installed but not in the lock",
    ]
    assert len(tree.verify(_lock(), extra=False)) == 2


def test_installed_version_of_nothing(tmp_path: Path) -> None:
    tree = InstalledTree(tmp_path)
    assert tree.installed_version(Kind.SKILL, "nope") is None
    assert tree.packages() == []
