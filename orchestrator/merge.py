"""How a worktree session's work comes back: `patch` (default), `branch` or `pr` (`[session] merge`).

`patch` applies the change between the worktree as it was created (HEAD plus the user's carried-in changes)
and as the agents left it to the user's working tree, as one patch, only when `git apply --check` passes;
otherwise nothing is touched and the branch is kept. `branch` keeps the branch. `pr` pushes it to
`[session] remote` and opens a pull request with `gh` when it is on PATH.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from orchestrator.git import GitFailed, commit_all, git, git_bytes
from orchestrator.isolation import KEPT, MERGED, IsolatedEnv, Merged
from strawpot.model.errors import ConflictError, StrawpotError
from strawpot.model.plural import count

GH_TIMEOUT = 120.0


def merge_back(env: IsolatedEnv, strategy: str, remote: str, exclude: str) -> Merged:
    """Commit the worktree's work to its branch, then bring it back by `strategy`; `exclude` is never committed."""
    top, path, branch = Path(env.info["repo"]), Path(env.info["path"]), str(env.info["branch"])
    try:
        commit_all(path, exclude, f"strawpot: session {path.name}")
    except GitFailed as exc:
        env.state = KEPT
        return Merged(keep=True, error=StrawpotError(f"cannot commit the session's work on {branch}: {exc.detail}",
                                                     hint=f"the worktree is kept at {path}"))
    if strategy == "branch":
        env.state = MERGED
        return Merged(f"the session's work is on branch {branch}; merge it with `git merge {branch}`")
    if strategy == "pr":
        return _pull_request(env, top, branch, remote)
    return _patch(env, top, path, branch)


def _patch(env: IsolatedEnv, top: Path, path: Path, branch: str) -> Merged:
    base = str(env.info["base_tree"])
    patch = git_bytes(path, "diff", "--binary", base, "HEAD")
    by_hand = f"`git diff {base} {branch} | git apply --3way`, then `strawpot sessions --prune`"
    if not patch.strip():
        env.state = MERGED
        return Merged("the session changed no file")
    try:
        git_bytes(top, "apply", "--check", "--binary", "--whitespace=nowarn", input_bytes=patch)
    except GitFailed as exc:
        env.state = KEPT
        return Merged(keep=True, error=ConflictError(
            f"the session's changes do not apply cleanly to your working tree ({exc.detail}); "
            "nothing in it was changed",
            hint=f"the changes are on branch {branch} (worktree {path}); apply them by hand with {by_hand}"))
    try:
        git_bytes(top, "apply", "--binary", "--whitespace=nowarn", input_bytes=patch)
    except GitFailed as exc:  # passed --check, so only a race with the user's own edits gets here
        env.state = KEPT
        return Merged(keep=True, error=ConflictError(f"applying the session's changes failed: {exc.detail}",
                                                     hint=f"the changes are on branch {branch}; {by_hand}"))
    files = git(path, "diff", "--name-only", base, "HEAD").split()
    env.state = MERGED
    return Merged(f"applied the session's changes to your working tree ({count(len(files), 'file')}): "
                  + ", ".join(files[:10]) + (" …" if len(files) > 10 else ""))


def _pull_request(env: IsolatedEnv, top: Path, branch: str, remote: str) -> Merged:
    try:
        git(top, "push", "-q", remote, f"{branch}:{branch}")
    except GitFailed as exc:
        env.state = KEPT
        return Merged(keep=True, error=StrawpotError(f"cannot push {branch} to {remote!r}: {exc.detail}",
                                                     hint=f"push it by hand: `git push {remote} {branch}`"))
    env.state = MERGED
    gh = shutil.which("gh")
    if gh is None:
        return Merged(f"pushed branch {branch} to {remote}; gh is not on PATH, so open the pull request by hand")
    target = git(top, "symbolic-ref", "-q", "--short", "HEAD", check=False).strip()
    title = f"strawpot session {Path(str(env.info['path'])).name}"
    argv = [gh, "pr", "create", "--head", branch, "--title", title, "--body", "Opened by `strawpot start`."]
    if target:
        argv += ["--base", target]
    try:
        proc = subprocess.run(argv, cwd=top, capture_output=True, text=True, timeout=GH_TIMEOUT,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Merged(error=StrawpotError(f"pushed {branch} to {remote} but gh failed: {exc}",
                                          hint="open the pull request by hand"))
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
        return Merged(error=StrawpotError(f"pushed {branch} to {remote} but `gh pr create` failed: {last}",
                                          hint="open the pull request by hand"))
    url = (proc.stdout.strip().splitlines() or [""])[-1]
    return Merged(f"pushed branch {branch} to {remote} and opened a pull request {url}".rstrip())
