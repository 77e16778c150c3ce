"""The few git plumbing calls session isolation needs, each one line of error text when it fails."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

from strawpot.model.errors import UsageError

GIT_TIMEOUT = 120.0


class GitFailed(Exception):
    """A git command exited non-zero; the message is its last stderr line."""

    def __init__(self, args: list[str], code: int, stderr: str) -> None:
        lines = [line for line in stderr.strip().splitlines() if line.strip()]
        self.detail = lines[-1] if lines else f"exit code {code}"
        super().__init__(f"git {' '.join(args[:2])}: {self.detail}")
        self.code = code
        self.stderr = stderr


def git_path() -> str:
    found = shutil.which("git")
    if found is None:
        raise UsageError("session isolation 'worktree' needs git, which is not on PATH",
                         hint="install git, or run with `--isolation none`")
    return found


def git(cwd: Path, *args: str, input_bytes: bytes | None = None, env: Mapping[str, str] | None = None,
        check: bool = True) -> str:
    """Run `git -C cwd args...`; its stdout as text. Raises GitFailed when it fails and `check` is set."""
    return git_bytes(cwd, *args, input_bytes=input_bytes, env=env, check=check).decode("utf-8", "replace")


def git_bytes(cwd: Path, *args: str, input_bytes: bytes | None = None, env: Mapping[str, str] | None = None,
              check: bool = True) -> bytes:
    argv = [git_path(), "-C", str(cwd), *args]
    proc = subprocess.run(argv, input=input_bytes, capture_output=True, timeout=GIT_TIMEOUT,
                          env=None if env is None else dict(env), stdin=None if input_bytes else subprocess.DEVNULL)
    if check and proc.returncode != 0:
        raise GitFailed(list(args), proc.returncode, proc.stderr.decode("utf-8", "replace"))
    return proc.stdout


def repo_top(path: Path) -> Path | None:
    """The top folder of the working tree holding `path`, or None when it is not in one."""
    try:
        out = git(path, "rev-parse", "--show-toplevel")
    except GitFailed:
        return None
    return Path(out.strip()).resolve() if out.strip() else None


_FALLBACK_IDENTITY = ("-c", "user.name=strawpot", "-c", "user.email=strawpot@localhost")


def snapshot(path: Path, exclude: str) -> str:
    """Stage every change in the worktree at `path` (but `exclude`, from its top) and return the tree it makes."""
    git(path, "add", "-A", "--", ".", f":(top,exclude){exclude}")
    return git(path, "write-tree").strip()


def commit_all(path: Path, exclude: str, message: str) -> None:
    """Commit everything in the worktree (but `exclude`) to its branch, if anything changed."""
    snapshot(path, exclude)
    if git(path, "diff", "--cached", "--name-only").strip():
        identity = () if git(path, "config", "user.email", check=False).strip() else _FALLBACK_IDENTITY
        # no hooks and no signing: nothing may stop or prompt an unattended commit on the session's own branch
        git(path, *identity, "-c", "commit.gpgsign=false", "commit", "-q", "--no-verify", "-m", message)
