"""The plan's first-install shortcut (a kind with no folder: nothing of it to read) agrees with asking each package."""

from __future__ import annotations

import hashlib
from pathlib import Path

from strawpot.install.plan import Change, installed_kinds, make_plan
from strawpot.model.installed import InstalledTree
from strawpot.model.kinds import Kind
from strawpot.model.lockfile import LockedFile, LockedPackage, Lockfile

TEXT = b"# a skill\n"


def locked(kind: Kind, name: str, version: str = "1.0.0") -> LockedPackage:
    main = LockedFile(kind.main_file, hashlib.sha256(TEXT).hexdigest(), len(TEXT))
    return LockedPackage(kind, name, version, "https://hub.test", None, None, (main,))


def put(tree: InstalledTree, pkg: LockedPackage, version: str) -> None:
    folder = tree.package_dir(pkg.kind, pkg.name)
    folder.mkdir(parents=True)
    (folder / pkg.kind.main_file).write_bytes(TEXT)
    (folder / ".version").write_text(f"{version}\n")


def slow_plan(tree: InstalledTree, lock: Lockfile) -> list[Change]:
    """What asking every package gives (the plan before the shortcut)."""
    return [Change(p.kind, p.name, p.version, tree.installed_version(p.kind, p.name))
            for p in lock.packages if tree.verify_package(p, deep=False)]


def test_a_kind_without_a_folder_is_planned_as_asking_each_package_would(tmp_path: Path) -> None:
    tree = InstalledTree(tmp_path / ".strawpot")
    same, older, absent = locked(Kind.SKILL, "same"), locked(Kind.SKILL, "older"), locked(Kind.SKILL, "absent")
    role, agent = locked(Kind.ROLE, "lead"), locked(Kind.AGENT, "coder")
    lock = Lockfile((same, older, absent, role, agent), "")
    assert installed_kinds(tree) == frozenset()
    assert list(make_plan(tree, lock).changes) == slow_plan(tree, lock)  # nothing installed: every one, from nothing

    put(tree, same, "1.0.0")
    put(tree, older, "0.9.0")
    (tree.root / Kind.AGENT.plural).write_text("not a folder")  # a file where the kind's folder goes
    assert installed_kinds(tree) == {Kind.SKILL}
    plan = make_plan(tree, lock)
    assert list(plan.changes) == slow_plan(tree, lock)
    assert {c.name: c.previous for c in plan.changes} == {"older": "0.9.0", "absent": None, "lead": None,
                                                           "coder": None}
    assert plan.unchanged == 1
