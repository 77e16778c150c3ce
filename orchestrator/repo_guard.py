"""What an agent could plant in the repository it shares with the user, undone; and git calls that run none of it.

A worktree shares `.git/config` and `.git/hooks/` with the user's repository. `save` copies them (and the other
files git reads code-running settings from) when the session starts; `restore` puts back what the session
changed, keeps the changed copy aside and says what it was. `SafeGit` runs git with hooks, fsmonitor and every
configured filter switched off, on an explicit git folder and index, so no file of the worktree (its `.git`
file, its private config) decides what runs.
"""

from __future__ import annotations

import filecmp
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import IO

from orchestrator.git import git_bytes

GUARDED_FILES = ("config", "config.worktree", "info/attributes", "info/exclude")
HOOKS = "hooks"
_ABSENT = ".absent"


class SafeGit:
    """git on the repository's common folder, `work_tree` as its work tree, and `index` as its index."""

    def __init__(self, common: Path, work_tree: Path, index: Path | None = None) -> None:
        self.common, self.work_tree, self.index = common, work_tree, index
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith("GIT_") or k.startswith(("GIT_AUTHOR_", "GIT_COMMITTER_"))}
        self.env.update(GIT_DIR=str(common), GIT_WORK_TREE=str(work_tree), GIT_TERMINAL_PROMPT="0",
                        GIT_OPTIONAL_LOCKS="0")
        if index is not None:
            self.env["GIT_INDEX_FILE"] = str(index)
        self.prefix = ("-c", f"core.hooksPath={os.devnull}", "-c", "core.fsmonitor=false",
                       "-c", "core.untrackedCache=false", *self._no_filters())

    def _no_filters(self) -> list[str]:
        listed = git_bytes(self.work_tree, "config", "-z", "--name-only", "--get-regexp", r"^filter\.",
                           env=self.env, check=False).decode("utf-8", "replace")
        names = {key[len("filter."):].rpartition(".")[0] for key in listed.split("\0") if key.count(".") >= 2}
        args: list[str] = []
        for name in sorted(names):
            for what, value in (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false")):
                args += ["-c", f"filter.{name}.{what}={value}"]
        return args

    def out(self, *args: str, input_bytes: bytes | None = None, check: bool = True,
            stdout: IO[bytes] | None = None) -> bytes:
        return git_bytes(self.work_tree, *self.prefix, *args, input_bytes=input_bytes, env=self.env, check=check,
                         stdout=stdout)

    def text(self, *args: str, check: bool = True) -> str:
        return self.out(*args, check=check).decode("utf-8", "replace")


def save(common: Path, dest: Path) -> None:
    """Copy the shared repository's config files and hooks folder to `dest`, before any agent runs."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in GUARDED_FILES:
        source, copy = common / name, dest / "files" / name
        copy.parent.mkdir(parents=True, exist_ok=True)
        if source.is_file() and not source.is_symlink():
            shutil.copy2(source, copy)
        else:
            copy.with_name(copy.name + _ABSENT).touch()
    hooks = common / HOOKS
    if hooks.is_dir() and not hooks.is_symlink():
        shutil.copytree(hooks, dest / HOOKS, symlinks=True)
    else:
        (dest / (HOOKS + _ABSENT)).touch()


def restore(common: Path, dest: Path) -> list[str]:
    """Undo the session's changes to what `save` copied; one line for each thing changed. Idempotent."""
    if not dest.is_dir():
        return []
    lines = []
    aside = dest / "changed"
    for name in GUARDED_FILES:
        live, copy = common / name, dest / "files" / name
        was_absent = copy.with_name(copy.name + _ABSENT).exists()
        if _same_file(live, None if was_absent else copy):
            continue
        kept = aside / name
        kept.parent.mkdir(parents=True, exist_ok=True)
        keys = ""
        if os.path.lexists(live):
            if live.is_file() and not live.is_symlink():
                shutil.copy2(live, kept)
                keys = _changed_keys(None if was_absent else copy, kept) if name.startswith("config") else ""
            _remove(live)
        if not was_absent:
            shutil.copy2(copy, live)
        lines.append(f".git/{name} was changed during the session{keys}: restored as it was before the run "
                     f"(the changed copy is at {kept})")
    changed = _restore_hooks(common / HOOKS, dest / HOOKS, aside / HOOKS, (dest / (HOOKS + _ABSENT)).exists())
    if changed:
        lines.append(f".git/hooks was changed during the session ({', '.join(changed)}): restored as it was "
                     f"before the run (the changed copies are in {aside / HOOKS})")
    return lines


def _restore_hooks(live: Path, copy: Path, aside: Path, was_absent: bool) -> list[str]:
    if was_absent:
        if not os.path.lexists(live):
            return []
        _move_aside(live, aside)
        return ["the hooks folder"]
    if live.is_symlink() or not live.is_dir():
        if os.path.lexists(live):
            _move_aside(live, aside)
        shutil.copytree(copy, live, symlinks=True)
        return ["the hooks folder"]
    changed = []
    names = {p.relative_to(live).as_posix() for p in live.rglob("*") if not p.is_dir() or p.is_symlink()}
    names |= {p.relative_to(copy).as_posix() for p in copy.rglob("*") if not p.is_dir() or p.is_symlink()}
    for name in sorted(names):
        here, there = live / name, copy / name
        if _same_file(here, there if os.path.lexists(there) else None):
            continue
        changed.append(name)
        if os.path.lexists(here):
            _move_aside(here, aside / name)
        if os.path.lexists(there):
            here.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(there, here, follow_symlinks=False)
    return changed


def _same_file(live: Path, copy: Path | None) -> bool:
    if copy is None:
        return not os.path.lexists(live)
    if not os.path.lexists(live) or live.is_symlink() != copy.is_symlink():
        return False
    if copy.is_symlink():
        return os.readlink(live) == os.readlink(copy)
    if not live.is_file():
        return False
    return (live.stat().st_mode & 0o111) == (copy.stat().st_mode & 0o111) and filecmp.cmp(live, copy, shallow=False)


def _changed_keys(before: Path | None, after: Path) -> str:
    old, new = _config_entries(before), _config_entries(after)
    keys = sorted({k for k, _ in old ^ new})
    return f" ({', '.join(keys[:8])}{' …' if len(keys) > 8 else ''})" if keys else ""


def _config_entries(path: Path | None) -> set[tuple[str, str]]:
    if path is None:
        return set()
    # `git config -f` reads the file alone (no includes): nothing in it runs
    env: Mapping[str, str] = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    out = git_bytes(path.parent, "config", "-f", str(path), "-z", "--list", env=env, check=False)
    return {tuple(item.partition("\n")[::2]) for item in out.decode("utf-8", "replace").split("\0") if item}  # type: ignore[misc]


def _move_aside(path: Path, aside: Path) -> None:
    aside.parent.mkdir(parents=True, exist_ok=True)
    if os.path.lexists(aside):
        _remove(aside)
    os.replace(path, aside) if path.parent.stat().st_dev == aside.parent.stat().st_dev else _copy_remove(path, aside)


def _copy_remove(path: Path, aside: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.copytree(path, aside, symlinks=True)
    else:
        shutil.copy2(path, aside, follow_symlinks=False)
    _remove(path)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()
