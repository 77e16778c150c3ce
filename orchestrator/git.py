"""The few git plumbing calls session isolation needs, each one line of error text when it fails."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import IO

from strawpot.model.errors import StrawpotError, UsageError

GIT_TIMEOUT = 120.0  # seconds one git call may take; `[session] git_timeout`
_deadline = [GIT_TIMEOUT]


class GitFailed(StrawpotError):
    """A git command exited non-zero (or hung); the message is its last stderr line. Exit 1, never a traceback."""

    def __init__(self, args: list[str], code: int, stderr: str) -> None:
        lines = [line for line in stderr.strip().splitlines() if line.strip()]
        self.detail = lines[-1] if lines else f"exit code {code}"
        super().__init__(f"git {' '.join(_command(args)[:2])}: {self.detail}")
        self.code = code
        self.stderr = stderr


def _command(args: list[str]) -> list[str]:
    """`args` without the leading `-c key=value` options: what the command was."""
    while len(args) >= 2 and args[0] == "-c":
        args = args[2:]
    return args


class GitTimedOut(GitFailed):
    """A git command did not finish within `[session] git_timeout` and was killed."""

    def __init__(self, args: list[str], seconds: float) -> None:
        super().__init__(args, -9, f"did not finish within {seconds:g} s ([session] git_timeout) and was stopped")


def set_timeout(seconds: float) -> None:
    """The deadline of every later git call of this process."""
    _deadline[0] = seconds


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
              check: bool = True, stdout: IO[bytes] | None = None) -> bytes:
    """Run git; its stdout (or, with `stdout`, streamed there and b"" returned). GitTimedOut past the deadline."""
    argv = [git_path(), "-C", str(cwd), *args]
    try:
        proc = subprocess.run(argv, input=input_bytes, stdout=stdout or subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=_deadline[0], env=None if env is None else dict(env),
                              stdin=None if input_bytes else subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise GitTimedOut(list(args), _deadline[0]) from None
    if check and proc.returncode != 0:
        raise GitFailed(list(args), proc.returncode, proc.stderr.decode("utf-8", "replace"))
    return proc.stdout or b""


def repo_top(path: Path) -> Path | None:
    """The top folder of the working tree holding `path`, or None when it is not in one."""
    try:
        out = git(path, "rev-parse", "--show-toplevel")
    except GitFailed:
        return None
    return Path(out.strip()).resolve() if out.strip() else None


def common_dir(top: Path) -> Path:
    """The git folder the worktrees of the repository at `top` share (`.git` of the main working tree)."""
    found = Path(git(top, "rev-parse", "--git-common-dir").strip())
    return (found if found.is_absolute() else top / found).resolve()


def snapshot(path: Path, exclude: str, *, env: Mapping[str, str] | None = None,
             prefix: tuple[str, ...] = ()) -> str:
    """Stage every change in the work tree at `path` (but `exclude`, from its top) and return the tree it makes.

    `exclude` is left out by a pathspec only when git does not ignore it already: git refuses an explicit
    pathspec naming an ignored path (`.gitignore` listing `.strawpot`) with an `addIgnoredFile` hint.
    """
    spec = () if _ignored(path, exclude, env, prefix) else (f":(top,exclude){exclude}",)
    git(path, *prefix, "add", "-A", "--", ".", *spec, env=env)
    return git(path, *prefix, "write-tree", env=env).strip()


def _ignored(path: Path, name: str, env: Mapping[str, str] | None, prefix: tuple[str, ...]) -> bool:
    argv = [git_path(), "-C", str(path), *prefix, "check-ignore", "-q", "--", name]
    try:
        return subprocess.run(argv, capture_output=True, timeout=_deadline[0], env=None if env is None else dict(env),
                              stdin=subprocess.DEVNULL).returncode == 0
    except subprocess.TimeoutExpired:
        raise GitTimedOut(["check-ignore"], _deadline[0]) from None
