"""Worktrees that ended runs left behind (failed, interrupted, a patch that did not apply): find and prune them.

`session.json` sits in a folder a cloned repository or an agent can write, so it only says *which* runs ended
and kept a worktree. Where that worktree, its branch and its state are is computed from the real repository
with git, never read from the record: the worktree `<git common dir>/strawpot-worktrees/<run id>`, the branch
`strawpot/<run id>`, the state folder `<run id>.state` beside it. A worktree is removed only when it is a real
folder of this user (no link) that git lists as one of the repository's worktrees; the guard copies and the
merge journal restored are only those in that state folder, which no clone carries (git never writes a tracked
file into `.git`) and no sandboxed agent can write.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from orchestrator import repo_guard, tree_apply
from orchestrator.git import GitFailed, common_dir, repo_top, snapshot
from orchestrator.isolation import ACTIVE, KEPT, REMOVED
from orchestrator.merge import WORKTREES_DIR, recover_merges
from orchestrator.orphans import owner_alive
from orchestrator.repo_guard import SafeGit
from orchestrator.run_record import RUN_ID_RE, RunRecord, RunRecordBroken, State, find_run, write_run
from orchestrator.worktree import branch_name, registered, rel_path
from strawpot.model.fs import owned_folder
from strawpot.model.layout import TREE_DIR
from strawpot.model.plural import count

UNKNOWN = -1  # `Leftover.changed` when git could not compare the worktree: counted as work


@dataclass(frozen=True)
class Leftover:
    """The worktree and branch one ended run left in the repository, as git finds them."""

    run_id: str
    top: Path  # the repository's working tree
    common: Path  # its git folder (`git rev-parse --git-common-dir`)
    worktree: Path | None  # `<common>/strawpot-worktrees/<run id>`, when it is there
    branch: str | None  # `strawpot/<run id>`, when it exists
    never_ended: bool  # its strawpot was killed: what the run changed in `.git` is put back first
    commits: int = 0  # commits no other branch, tag or HEAD holds
    changed: int = 0  # files the worktree changed since the run started (UNKNOWN: could not tell)
    refused: str = ""  # why it is left alone ("" when it can be removed)

    @property
    def work(self) -> str:
        """The agents' work pruning it would delete ("" when none)."""
        changed = "changes git could not list" if self.changed == UNKNOWN else count(self.changed, "changed file")
        parts = [*([count(self.commits, "commit")] if self.commits else []), *([changed] if self.changed else [])]
        return " and ".join(parts)

    def describe(self) -> str:
        what = " and ".join(f"{name} {value}" for name, value in
                            (("worktree", self.worktree), ("branch", self.branch)) if value is not None)
        return f"{self.run_id}: {what}" + (f" (unmerged work: {self.work})" if self.work else "")


def ended_with_worktree(record: RunRecord) -> bool:
    """Whether a recorded run kept an isolated environment that is no longer in use."""
    if record.isolation.get("kind", "none") == "none" or record.isolation.get("state") not in (ACTIVE, KEPT):
        return False
    return not (record.state == State.RUNNING and owner_alive(record))


def recover(project_dir: Path) -> list[str]:
    """Undo every merge-back a killed strawpot left half-done in the project's repository; a line for each."""
    if shutil.which("git") is None:
        return []
    top = repo_top(project_dir)
    return [] if top is None else recover_merges(common_dir(top), top)


def find(sessions_root: Path, project_dir: Path) -> list[Leftover]:
    """The leftovers of the runs recorded in `sessions_root` (run folders named by a run id only), oldest first."""
    if shutil.which("git") is None or not sessions_root.is_dir():
        return []
    top = repo_top(project_dir)
    if top is None:
        return []
    common = common_dir(top)
    g = SafeGit(common, top)
    listed = registered(g)
    rel = rel_path(top, project_dir)
    found = []
    for run_dir in sorted(sessions_root.iterdir()):
        if not RUN_ID_RE.fullmatch(run_dir.name) or not owned_folder(run_dir):
            continue
        try:
            record = find_run(sessions_root, run_dir.name)
        except RunRecordBroken:
            continue
        if record is None or record.run_id != run_dir.name or not ended_with_worktree(record):
            continue
        leftover = _leftover(g, top, common, run_dir.name, record.isolation, listed, rel)
        if leftover is not None:
            found.append(leftover)
    return found


def remove(leftover: Leftover) -> list[str]:
    """Remove a leftover's worktree, branch and state folder; warning lines for what was put back or failed."""
    if leftover.refused:
        raise ValueError(f"{leftover.run_id} is left alone: {leftover.refused}")
    lines = []
    g = SafeGit(leftover.common, leftover.top)
    state = _state_dir(leftover.common, leftover.run_id)
    if owned_folder(state):
        if leftover.never_ended:  # killed before its end: undo what it planted in .git
            lines += [f"warning: {line}" for line in repo_guard.restore(leftover.common, state / "guard")]
        if owned_folder(state / "merge"):
            said = tree_apply.recover(state / "merge", leftover.top)
            if said:
                lines.append(said)
    if leftover.worktree is not None:
        g.out("worktree", "remove", "--force", str(leftover.worktree), check=False)
        if owned_folder(leftover.worktree):  # git would not remove it (locked, broken): it is ours, checked
            shutil.rmtree(leftover.worktree)
    g.out("worktree", "prune", check=False)
    if leftover.branch is not None:
        with contextlib.suppress(GitFailed):
            g.out("branch", "-D", leftover.branch)
        if _has_branch(g, leftover.branch):
            lines.append(f"warning: branch {leftover.branch} was kept: git would not delete it (checked out?)")
    if owned_folder(state):
        shutil.rmtree(state, ignore_errors=True)
    return lines


def mark_removed(sessions_root: Path, run_id: str) -> None:
    """Record in the run's session.json that its worktree is gone."""
    try:
        record = find_run(sessions_root, run_id)
    except RunRecordBroken:
        return
    if record is None or not record.isolation or not owned_folder(sessions_root / run_id):
        return
    write_run(sessions_root / run_id, replace(record, isolation={**record.isolation, "state": REMOVED}))


def _leftover(g: SafeGit, top: Path, common: Path, run_id: str, isolation: dict[str, Any], listed: set[str],
              rel: str) -> Leftover | None:
    path = common / WORKTREES_DIR / run_id
    branch = branch_name(run_id)
    has_branch = _has_branch(g, branch)
    if not os.path.lexists(path) and not has_branch:
        return None  # nothing of it in this repository (pruned already, or a record from elsewhere)
    never_ended = isolation.get("state") == ACTIVE
    worktree = path if os.path.lexists(path) else None
    refused = ""
    if worktree is not None:
        if not owned_folder(worktree) or not owned_folder(path.parent):
            refused = f"{path} is not a folder of yours (a link, or another user's); remove it by hand"
        elif os.path.realpath(path) not in listed:
            refused = f"{path} is not a worktree git knows of; remove it by hand"
    found = Leftover(run_id, top, common, worktree, branch if has_branch else None, never_ended, refused=refused)
    if refused:
        return found
    commits = _commits_only_on(g, branch) if has_branch else 0
    changed = _changed_files(common, worktree, isolation.get("base_tree"), branch, rel) \
        if worktree is not None and path.is_dir() else 0
    return Leftover(run_id, top, common, worktree, found.branch, never_ended, commits, changed)


def _has_branch(g: SafeGit, branch: str) -> bool:
    return bool(g.text("rev-parse", "--verify", "-q", f"refs/heads/{branch}^{{commit}}", check=False).strip())


def _commits_only_on(g: SafeGit, branch: str) -> int:
    """Commits of `branch` that no other branch, tag, remote branch or the repository's HEAD holds."""
    out = g.text("rev-list", "--count", f"refs/heads/{branch}", "--not", f"--exclude=refs/heads/{branch}",
                 "--branches", "--tags", "--remotes", "HEAD", check=False).strip()
    return int(out) if out.isdigit() else 0


def _changed_files(common: Path, worktree: Path, base: Any, branch: str, rel: str) -> int:
    """Files that differ between the worktree as the run left it and as it was created (its base tree, else its
    branch's tree), hashed into a throwaway index, never the worktree's own; UNKNOWN when git cannot tell."""
    with tempfile.TemporaryDirectory(prefix="strawpot-prune-") as scratch:
        g = SafeGit(common, worktree, Path(scratch) / "index")
        tip = f"refs/heads/{branch}^{{tree}}"
        start = next((t for t in (str(base) if isinstance(base, str) else "", tip) if _is_tree(g, t)), None)
        if start is None:
            return UNKNOWN
        try:
            g.out("read-tree", tip if _is_tree(g, tip) else start)  # its stat data makes `add` hash little
            now = snapshot(worktree, f"{rel}/{TREE_DIR}" if rel else TREE_DIR, env=g.env, prefix=g.prefix)
            names = g.text("diff-tree", "-r", "-z", "--name-only", start, now)
        except GitFailed:
            return UNKNOWN
    return len([name for name in names.split("\0") if name])


def _is_tree(g: SafeGit, name: str) -> bool:
    if not name or name.startswith("-"):
        return False
    return g.text("cat-file", "-t", name, check=False).strip() == "tree"


def _state_dir(common: Path, run_id: str) -> Path:
    return common / WORKTREES_DIR / f"{run_id}.state"
