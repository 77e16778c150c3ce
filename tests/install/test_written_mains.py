"""The no-op index's scripted packages, read from the main files this run wrote, agree with reading them from disk."""

from __future__ import annotations

from pathlib import Path

from strawpot.install.apply import Staged
from strawpot.install.build import Builds, scripted_packages, written_mains
from strawpot.install.prepare import Prepared
from strawpot.model.installed import InstalledTree
from strawpot.model.kinds import Kind
from strawpot.model.lockfile import LockedPackage, Lockfile

SCRIPTED = (b"---\nname: {name}\ndescription: d\nversion: 1.0.0\nmetadata:\n  strawpot:\n    install:\n"
            b"      linux: make\n      macos: make\n---\n# {name}\n")
PLAIN = b"---\nname: {name}\ndescription: d\nversion: 1.0.0\n---\n# {name}\n"


def main_file(template: bytes, name: str) -> bytes:
    return template.replace(b"{name}", name.encode())


def test_the_main_files_written_give_what_the_tree_on_disk_gives(tmp_path: Path) -> None:
    tree = InstalledTree(tmp_path / ".strawpot")
    texts = {"built": main_file(SCRIPTED, "built"), "waits": main_file(SCRIPTED, "waits"),
             "plain": main_file(PLAIN, "plain"), "kept": main_file(SCRIPTED, "kept"),
             "dropped": main_file(PLAIN, "dropped")}
    packages = {name: LockedPackage(Kind.SKILL, name, "1.0.0", "https://hub.test", None, None) for name in texts}
    for name, text in texts.items():
        folder = tree.package_dir(Kind.SKILL, name)
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_bytes(text)
    # what a script did to its own main file is on disk only; a package dropped from the swap keeps the old one
    (tree.package_dir(Kind.SKILL, "built") / "SKILL.md").write_bytes(main_file(PLAIN, "built"))
    (tree.package_dir(Kind.SKILL, "dropped") / "SKILL.md").write_bytes(main_file(SCRIPTED, "dropped"))
    lock = Lockfile(tuple(packages.values()), "")
    staged_now = ["built", "waits", "plain", "dropped"]  # "kept": installed before this run, not staged
    prepared = [Prepared(packages[name], {"SKILL.md": (texts[name], False)}) for name in staged_now]
    swapped = [Staged(Kind.SKILL, name, tmp_path / "tmp", tree.package_dir(Kind.SKILL, name))
               for name in staged_now if name != "dropped"]
    written = written_mains(prepared, swapped, Builds(ran=["skill:built"]))
    assert sorted(name for _, name in written) == ["plain", "waits"]
    assert scripted_packages(tree, lock, written) == scripted_packages(tree, lock) == {
        ("skills", "waits"), ("skills", "kept"), ("skills", "dropped")}
