"""The `worktree` isolator: a run's agents share one git worktree on branch `strawpot/<run id>`.

The worktree lives in the repository's git folder (`<git common dir>/strawpot-worktrees/<run id>`), outside
the user's working tree. The user's uncommitted changes (tracked and untracked, not ignored) are carried into
it with `--merge patch`; `branch` and `pr` build from commits only and refuse a dirty tree. The project's
installed `.strawpot/` is linked in unchanged when the checkout does not carry it. Nothing writes to the
user's working tree but the all-or-nothing merge-back of `orchestrator/merge.py` and `orchestrator/tree_apply.py`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from pathlib import Path

from orchestrator import repo_guard
from orchestrator.git import GitFailed, common_dir, git, git_bytes, git_path, repo_top, set_timeout, snapshot
from orchestrator.isolation import KEPT, MERGED, REMOVED, IsolatedEnv, Merged
from orchestrator.merge import WORKTREES_DIR, guard_repo, merge_back, merging, recover_merges, safe_git
from orchestrator.repo_guard import SafeGit
from orchestrator.session import RUN_ID_RE
from strawpot.model.errors import StrawpotError, UsageError
from strawpot.model.fs import owned_folder
from strawpot.model.layout import TREE_DIR

BRANCH_PREFIX = "strawpot/"
_IN_PROGRESS = {"rebase-merge": "rebase", "rebase-apply": "rebase or am", "MERGE_HEAD": "merge",
                "CHERRY_PICK_HEAD": "cherry-pick", "REVERT_HEAD": "revert", "BISECT_LOG": "bisect"}


def branch_name(session_id: str) -> str:
    return BRANCH_PREFIX + session_id


class WorktreeIsolator:
    name = "worktree"

    def __init__(self, merge: str = "patch", remote: str = "origin", max_file_size: float = 50.0,
                 git_timeout: float | None = None) -> None:
        self.merge_strategy = merge
        self.remote = remote
        self.max_file_size = max_file_size
        if git_timeout is not None:
            set_timeout(git_timeout)

    # -- before the run -----------------------------------------------------------------------------

    def check(self, base_dir: Path) -> None:
        git_path()
        top = repo_top(base_dir)
        if top is None:
            raise UsageError(f"{base_dir} is not in a git repository; session isolation 'worktree' needs one",
                             hint="run `git init` and commit your files, or use `--isolation none`")
        for line in recover_merges(common_dir(top), top):
            print(f"warning: {line}", file=sys.stderr)
        if not git(top, "rev-parse", "--verify", "-q", "HEAD", check=False).strip():
            raise UsageError("the git repository has no commit yet; a worktree starts from HEAD",
                             hint="make a first commit, or use `--isolation none`")
        for marker, what in _IN_PROGRESS.items():
            if _git_path(top, marker).exists():
                raise UsageError(f"the git repository is in the middle of a {what}",
                                 hint=f"finish it or abort it (e.g. `git {what.split()[0]} --abort`), then start again")
        on_branch = git(top, "symbolic-ref", "-q", "--short", "HEAD", check=False).strip()
        if self.merge_strategy == "pr" and not on_branch:
            raise UsageError("HEAD is detached: a pull request needs a branch to target",
                             hint="check out a branch, or use `--merge patch` or `--merge branch`")
        if self.merge_strategy != "patch" and _dirty(top, rel_path(top, base_dir)):
            raise UsageError(f"the working tree has uncommitted changes; `--merge {self.merge_strategy}` builds "
                             "the session from commits only", hint="commit or stash them, or use `--merge patch`, "
                             "which carries them into the session's worktree")

    # -- the run ------------------------------------------------------------------------------------

    def create(self, session_id: str, base_dir: Path) -> IsolatedEnv:
        top = repo_top(base_dir)
        assert top is not None, "check() refuses a folder outside a repository"
        rel = rel_path(top, base_dir)
        branch = branch_name(session_id)
        if _has_branch(top, branch):
            raise UsageError(f"git branch {branch} already exists",
                             hint=f"delete it (`git branch -D {branch}`) or run `strawpot sessions --prune`")
        common = common_dir(top)
        path = common / WORKTREES_DIR / session_id
        path.parent.mkdir(parents=True, exist_ok=True)
        state = path.parent / f"{session_id}.state"
        try:
            repo_guard.save(common, state / "guard")  # before anything the agents could change
            git(top, "worktree", "add", "-q", "-b", branch, str(path), "HEAD")
        except (GitFailed, OSError) as exc:
            shutil.rmtree(state, ignore_errors=True)
            raise StrawpotError(f"cannot create the session's worktree: {getattr(exc, 'detail', exc)}") from None
        env = IsolatedEnv(self.name, path / rel, {"path": str(path), "branch": branch, "repo": str(top),
                                                  "rel": rel, "merge": self.merge_strategy, "remote": self.remote,
                                                  "head": git(top, "rev-parse", "HEAD").strip(),
                                                  "common": str(common), "state_dir": str(state),
                                                  "max_file_size": self.max_file_size})
        try:
            if self.merge_strategy == "patch":
                with merging(common):  # not from a tree another run's merge-back is half-way through
                    _carry_changes(top, path, rel)
            link = path / rel / TREE_DIR
            if not link.exists() and not link.is_symlink():
                link.symlink_to(base_dir / TREE_DIR, target_is_directory=True)
            g = safe_git(env)
            g.out("read-tree", "HEAD")
            env.info["base_tree"] = snapshot(path, _join(rel, TREE_DIR), env=g.env, prefix=g.prefix)
        except (GitFailed, OSError) as exc:
            self.cleanup(env, base_dir)
            raise StrawpotError(f"cannot carry your uncommitted changes into the worktree: {exc}",
                                hint="commit or stash them, then start again") from None
        return env

    # -- the end ------------------------------------------------------------------------------------

    def merge(self, env: IsolatedEnv, base_dir: Path) -> Merged:
        try:
            return merge_back(env, self.merge_strategy, self.remote, _join(str(env.info.get("rel", "")), TREE_DIR),
                              self.max_file_size)
        except (GitFailed, OSError, UsageError) as exc:  # git vanished, broke or hung mid-merge: keep everything
            env.state = KEPT
            return Merged(keep=True, failed=True, error=StrawpotError(
                f"cannot merge the session's work back: {exc}",
                hint=f"it is on branch {env.info.get('branch')} (worktree {env.info.get('path')}); "
                     "`strawpot sessions --prune` removes it"))

    def keep(self, env: IsolatedEnv) -> list[str]:
        """A run that did not succeed keeps its worktree; what it changed in the shared repository is undone."""
        return guard_repo(env)

    def cleanup(self, env: IsolatedEnv, base_dir: Path) -> None:
        """Remove the worktree; the branch too unless a merge kept it on purpose (`branch`, `pr`, refusals)."""
        top, path, branch = Path(env.info["repo"]), Path(env.info["path"]), str(env.info["branch"])
        if "common" in env.info:
            recover_merges(Path(str(env.info["common"])), top)
        safe = SafeGit(Path(str(env.info["common"])), top) if "common" in env.info else None

        def run(*args: str) -> None:
            if safe is not None:
                safe.out(*args, check=False)
            else:
                git(top, *args, check=False)

        run("worktree", "remove", "--force", str(path))
        if path.exists():
            shutil.rmtree(path, ignore_errors=True)
            run("worktree", "prune")
        if (env.state != MERGED or env.info.get("merge") == "patch") and not env.info.get("keep_branch"):
            run("branch", "-D", branch)
        if "state_dir" in env.info:
            shutil.rmtree(str(env.info["state_dir"]), ignore_errors=True)
        env.state = MERGED if env.state == MERGED else REMOVED


def registered(g: SafeGit) -> set[str]:
    """The real paths of the repository's worktrees, as `git worktree list` names them."""
    listed = g.text("worktree", "list", "--porcelain", "-z", check=False).split("\0")
    return {os.path.realpath(item[len("worktree "):]) for item in listed if item.startswith("worktree ")}


def reopened(recorded: IsolatedEnv, run_id: str, base_dir: Path) -> IsolatedEnv:
    """A recorded worktree environment (`strawpot resume`) with every path and the branch computed from the
    real repository, never taken from the record (it sits in a folder a clone or an agent can write).

    UsageError (exit 2) when the run's worktree is not a folder of this user's that git lists.
    """
    top = repo_top(base_dir)
    gone = UsageError(f"the worktree of run {run_id} is gone; it cannot be resumed", hint="start a new run")
    if top is None or not RUN_ID_RE.fullmatch(run_id):
        raise gone
    common = common_dir(top)
    path = common / WORKTREES_DIR / run_id
    if not owned_folder(path) or os.path.realpath(path) not in registered(SafeGit(common, top)):
        raise gone
    rel = rel_path(top, base_dir)
    merge = recorded.info.get("merge") if recorded.info.get("merge") in ("patch", "branch", "pr") else "patch"
    info = {**recorded.info, "path": str(path), "branch": branch_name(run_id), "repo": str(top), "rel": rel,
            "common": str(common), "state_dir": str(path.parent / f"{run_id}.state"), "merge": merge}
    return IsolatedEnv(WorktreeIsolator.name, path / rel, info, recorded.state)


def _carry_changes(top: Path, path: Path, rel: str) -> None:
    """The user's uncommitted work, copied file by file into the worktree (tracked changes against HEAD, then
    untracked files that are not ignored): streamed by the file system, never read into memory."""
    exclude = f":(top,exclude){_join(rel, TREE_DIR)}"
    raw = git_bytes(top, "diff", "--raw", "-z", "--no-renames", "HEAD", "--", ".", exclude).split(b"\0")
    changed = [os.fsdecode(name) for meta, name in zip(raw[0::2], raw[1::2], strict=False)
               if meta.startswith(b":") and b"160000" not in meta.split(b" ")[:2]]  # a submodule stays as it is
    for name in sorted(changed, key=lambda n: n.count("/"), reverse=True):
        if not (top / name).is_symlink() and not (top / name).is_file():  # deleted, or a folder now
            _remove(path / name)
    listed = git(top, "ls-files", "--others", "--exclude-standard", "-z", "--", ".", exclude)
    for name in [*changed, *filter(None, listed.split("\0"))]:
        source, target = top / name, path / name
        if not source.is_symlink() and not source.is_file():
            continue
        for parent in reversed(target.relative_to(path).parents[:-1]):
            if (path / parent).is_symlink() or (path / parent).is_file():
                (path / parent).unlink()  # a file of HEAD that is a folder in the user's tree
        target.parent.mkdir(parents=True, exist_ok=True)
        _remove(target)
        if source.is_symlink():
            target.symlink_to(os.readlink(source))
        else:
            shutil.copy2(source, target)


def _remove(target: Path) -> None:
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    elif target.is_symlink() or target.exists():
        target.unlink()


def _dirty(top: Path, rel: str) -> bool:
    return bool(git(top, "status", "--porcelain", "--", ".", f":(top,exclude){_join(rel, TREE_DIR)}").strip())


def _has_branch(top: Path, branch: str) -> bool:
    return bool(git(top, "branch", "--list", branch).strip())


def _git_path(top: Path, name: str) -> Path:
    found = Path(git(top, "rev-parse", "--git-path", name).strip())
    return found if found.is_absolute() else top / found


def rel_path(top: Path, base_dir: Path) -> str:
    """Where `base_dir` is in the working tree at `top` ("" at its top)."""
    with contextlib.suppress(ValueError):
        rel = base_dir.resolve().relative_to(top).as_posix()
        return "" if rel == "." else rel
    return ""


def _join(rel: str, name: str) -> str:
    return f"{rel}/{name}" if rel else name
