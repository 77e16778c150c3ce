"""Crash safety and serialisation: a real `strawpot install` SIGKILLed at every checkpoint of its apply
step leaves each package wholly old or wholly new and strawpot.lock old or new; two installs serialise."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from strawpot.install.apply import recover
from strawpot.install.options import Options
from strawpot.install.service import run as run_service
from strawpot.model.installed import InstalledTree
from strawpot.model.lockfile import Lockfile

NAMES = ("at-a", "at-b")


@pytest.fixture(scope="module")
def versions(registry) -> dict[str, str]:
    """Two skills in two versions whose every file says which version it belongs to."""
    names = {name: registry.unique(name) for name in NAMES}
    for slug in names.values():
        for version in ("1.0.0", "2.0.0"):
            extra = {"docs/a.md": f"{slug} {version} a\n".encode(), "docs/b.md": f"{slug} {version} b\n".encode()}
            if version == "1.0.0":
                extra["only-in-1.md"] = b"old\n"
            registry.publish("skill", slug, version, files=extra)
    return names


# `strawpot install` in a child process, with the faults handed to the service as an argument (the
# production code reads no fault switch from the environment).
INSTALL = """
import json, sys
from pathlib import Path
from strawpot.install.options import Edit, Faults, Options, Requested
from strawpot.install.service import run
from strawpot.model.kinds import Kind
from strawpot.model.layout import Project
faults, add = json.loads(sys.argv[2]), json.loads(sys.argv[3])
edit = Edit(add=tuple(Requested(Kind.SKILL, slug) for slug in add))
run(Project(Path(sys.argv[1])), edit, Options(tools="skip", faults=Faults(**faults)))
"""


def install_argv(project: Path, faults: dict[str, object] | None = None, add: tuple[str, ...] = ()) -> list[str]:
    return [sys.executable, "-c", INSTALL, str(project), json.dumps(faults or {}), json.dumps(list(add))]


def install(project: Path, env: dict[str, str], faults: dict[str, object] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(install_argv(project, faults), env=env, capture_output=True, text=True, timeout=120)


def child_env(registry, isolated_env: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(STRAWPOT_REGISTRY_URL=registry.url, STRAWPOT_CACHE_DIR=str(isolated_env / "cache"),
               STRAWPOT_CONFIG_DIR=str(isolated_env / "config"), STRAWPOT_HOME=str(isolated_env / "global"))
    return env


def manifest(names: dict[str, str], spec: str) -> str:
    return "[skills]\n" + "".join(f'{slug} = "{spec}"\n' for slug in names.values())


def assert_whole(project: Path, names: dict[str, str]) -> None:
    """Each package dir is exactly one published version: its .version and every file agree."""
    for slug in names.values():
        folder = project / ".strawpot" / "skills" / slug
        assert folder.is_dir(), f"{slug} is missing"
        version = (folder / ".version").read_text().strip()
        files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
        expected = [".version", "SKILL.md", "docs/a.md", "docs/b.md"] + (["only-in-1.md"] if version == "1.0.0" else [])
        assert files == sorted(expected), f"{slug}: mixed files {files}"
        assert (folder / "docs/a.md").read_text() == f"{slug} {version} a\n"
        assert (folder / "docs/b.md").read_text() == f"{slug} {version} b\n"
        assert f"version: {version}" in (folder / "SKILL.md").read_text()


@pytest.mark.parametrize("swap", ["exchange", "renames"])
def test_sigkill_at_every_checkpoint_leaves_old_or_new(registry, versions, project, isolated_env, tmp_path, swap):
    env = child_env(registry, isolated_env)
    no_exchange = swap == "renames"
    project.manifest_path.write_text(manifest(versions, "^1.0.0"))
    first = install(project.dir, env, {"no_exchange": no_exchange})
    assert first.returncode == 0, first.stderr
    pristine = tmp_path / "pristine"
    shutil.copytree(project.dir, pristine, symlinks=True)
    old_lock = project.lock_path.read_bytes()

    new_lock = None
    kills = 0
    for n in range(1, 40):
        shutil.rmtree(project.dir)
        shutil.copytree(pristine, project.dir, symlinks=True)
        project.manifest_path.write_text(manifest(versions, "^2.0.0"))
        run = install(project.dir, env, {"kill_at": n, "no_exchange": no_exchange})
        if run.returncode == 0:
            new_lock = project.lock_path.read_bytes()
            break
        assert run.returncode == -signal.SIGKILL, run.stderr
        kills += 1
        # strawpot.lock is the old one or a whole new one, never torn (new_lock is only known after the loop,
        # so compare against what a complete new lock must hold rather than against the file itself)
        current = project.lock_path.read_bytes()
        if current != old_lock:
            written = Lockfile.load(project.lock_path)
            assert {(p.name, p.version) for p in written.packages} == {(s, "2.0.0") for s in versions.values()}
            assert written.dumps().encode() == current
        if swap == "renames":  # without an atomic exchange, the next run's recovery completes the swap
            recover(InstalledTree(project.tree_root))
        assert_whole(project.dir, versions)
        # the next run (no fault) finishes the job: recover, then converge on the new lock
        run_service(project, options=Options(registry=registry.url, tools="skip"))
        assert_whole(project.dir, versions)
        lock = Lockfile.load(project.lock_path)
        assert {p.version for p in lock.packages} == {"2.0.0"}
        assert InstalledTree(project.dir / ".strawpot").verify(lock, deep=True) == []
        leftovers = [p.name for p in (project.dir / ".strawpot" / "skills").iterdir() if p.name.startswith(".")]
        assert leftovers == []
    assert new_lock is not None and new_lock != old_lock
    assert kills >= len(NAMES) * 2 + 1  # every package staged and swapped, and the lock written, were each a kill point
    assert_whole(project.dir, versions)


def test_recover_puts_back_an_old_dir_whose_replacement_never_arrived(tmp_path):
    tree = InstalledTree(tmp_path / ".strawpot")
    skills = tree.root / "skills"
    (skills / ".old-keep-me-1a2b").mkdir(parents=True)
    (skills / ".old-keep-me-1a2b" / "SKILL.md").write_text("old")
    (skills / ".tmp-half-9f9f").mkdir()
    (skills / ".del-gone-0000").mkdir()
    (skills / "done").mkdir()
    (skills / ".old-done-abcd").mkdir()
    recover(tree)
    assert sorted(p.name for p in skills.iterdir()) == ["done", "keep-me"]
    assert (skills / "keep-me" / "SKILL.md").read_text() == "old"


def test_two_installs_at_once_serialise(registry, project, isolated_env):
    one, two = registry.unique("race-one"), registry.unique("race-two")
    registry.publish("skill", one, "1.0.0")
    registry.publish("skill", two, "1.0.0")
    env = child_env(registry, isolated_env)
    procs = [
        subprocess.Popen(install_argv(project.dir, {"sleep": 0.3}, (slug,)),
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for slug in (one, two)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    text = project.manifest_path.read_text()
    assert f'{one} = "^1.0.0"' in text and f'{two} = "^1.0.0"' in text  # neither write was lost
    lock = Lockfile.load(project.lock_path)
    assert {p.name for p in lock.packages} == {one, two}
    assert InstalledTree(project.tree_root).verify(lock) == []
