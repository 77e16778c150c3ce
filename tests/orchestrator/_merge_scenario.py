"""A repository with every kind of path, the agent's edits of every kind, and a tree's exact state (for merge tests)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

IDENTITY = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example.org"}
BINARY = bytes(range(256)) * 40


def git(cwd: Path, *args: str) -> str:
    proc = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True,
                          env={**os.environ, **IDENTITY})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def a_git_project(root: Path, **files: str) -> Path:
    """`root` as a git repository on `main`: README.md ("original") and `files` committed, .strawpot/ ignored."""
    git(root, "init", "-q", "-b", "main")
    (root / ".gitignore").write_text(".strawpot/\n")
    for name, text in {"README.md": "original\n", **files}.items():
        (root / name).write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "first")
    return root


def committed_files(root: Path, ignore: str = ".strawpot\n") -> None:
    """Every kind of path, committed; `ignore` is the .gitignore (it lists `.strawpot`, as most projects do)."""
    (root / ".gitignore").write_text(ignore + "build/\nsecret.env\n")
    (root / "README.md").write_text("original\n")
    (root / "notes.txt").write_text("notes\n")
    (root / "pkg").mkdir()
    (root / "pkg" / "core.py").write_text("core\n")
    (root / "pkg" / "util.py").write_text("util\n")
    (root / "tool.sh").write_text("#!/bin/sh\necho tool\n")
    (root / "link").symlink_to("README.md")
    (root / "data.bin").write_bytes(BINARY)
    (root / "old.txt").write_text("old\n")
    (root / "gone.txt").write_text("gone\n")
    (root / "file2").write_text("f2\n")
    (root / "dir2").mkdir()
    (root / "dir2" / "x").write_text("x\n")
    if not (root / ".git").exists():
        git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "first")


def users_own_work(root: Path) -> None:
    """Uncommitted, untracked and ignored work of the user's, outside what the agent touches."""
    (root / "notes.txt").write_text("notes\nmy uncommitted line\n")
    (root / "scratch.txt").write_text("untracked, mine\n")
    (root / "build").mkdir(exist_ok=True)
    (root / "build" / "out.o").write_bytes(b"\0ignored\0")


def agent_edits(tree: Path) -> None:
    """One change of every kind: folder -> file, symlink -> folder, file -> symlink, folder -> symlink,
    exec bit, binary, rename, delete, plain edit."""
    shutil.rmtree(tree / "pkg")
    (tree / "pkg").write_text("pkg is a file now\n")
    (tree / "tool.sh").chmod(0o755)
    (tree / "link").unlink()
    (tree / "link").mkdir()
    (tree / "link" / "inside.txt").write_text("inside\n")
    (tree / "data.bin").write_bytes(BINARY[::-1] + b"\0more")
    (tree / "old.txt").rename(tree / "new.txt")
    (tree / "gone.txt").unlink()
    (tree / "file2").unlink()
    (tree / "file2").symlink_to("README.md")
    shutil.rmtree(tree / "dir2")
    (tree / "dir2").symlink_to("link")
    (tree / "README.md").write_text("edited by the agent\n")


def state(root: Path) -> dict[str, tuple[object, ...]]:
    """Every path under `root` but .git and .strawpot: its type, bytes or target, and exec bit."""
    found: dict[str, tuple[object, ...]] = {}
    for here, dirs, files in os.walk(root):
        rel_here = os.path.relpath(here, root)
        if rel_here == ".":
            dirs[:] = [d for d in dirs if d not in (".git", ".strawpot")]
            files = [f for f in files if f not in (".git", ".strawpot")]
        for name in dirs + files:
            path = Path(here) / name
            rel = os.path.normpath(os.path.join(rel_here, name))
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                found[rel] = ("link", os.readlink(path))
            elif stat.S_ISDIR(mode):
                found[rel] = ("dir",)
            else:
                found[rel] = ("file", path.read_bytes(), bool(mode & 0o100))
    return found


def expected_after(root: Path, scratch: Path) -> dict[str, tuple[object, ...]]:
    """The user's tree as a full merge leaves it: their own work plus every edit of the agent."""
    copy = scratch / "expected"
    shutil.copytree(root, copy, symlinks=True, ignore=shutil.ignore_patterns(".git", ".strawpot"))
    agent_edits(copy)
    return state(copy)
