"""How a worktree session's work comes back: `patch` (default), `branch` or `pr` (`[session] merge`).

First the shared repository's config and hooks are put back as they were (`repo_guard`), then the worktree's
content is committed to its branch with git's plumbing (no hook, filter or fsmonitor runs). `patch` then
brings the change between the worktree as created (HEAD plus the user's carried-in changes) and as the
agents left it into the user's working tree, all or nothing (`tree_apply`); what the user must look at
first (a symlink out of the repository, a file over `[session] max_file_size`, a `.git*` path, a submodule)
is refused, one line each, and stays on the branch. `branch` keeps the branch. `pr` pushes it to
`[session] remote` and opens a pull request with `gh` when it is on PATH.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from contextlib import AbstractContextManager
from pathlib import Path

from orchestrator import repo_guard, tree_apply
from orchestrator.git import GitFailed, common_dir, snapshot
from orchestrator.isolation import KEPT, MERGED, IsolatedEnv, Merged
from orchestrator.repo_guard import SafeGit
from orchestrator.tree_apply import ABSENT, GITLINK, LINK, Change
from strawpot.model.display import terminal_safe
from strawpot.model.errors import ConflictError, StrawpotError
from strawpot.model.fs import file_lock, owned_folder
from strawpot.model.plural import count

GH_TIMEOUT = 120.0
FILES_RECORDED = 200  # changed files a run's record lists in its `isolation.files` (`files_total` counts all)
WORKTREES_DIR = "strawpot-worktrees"  # in the repository's git folder: each run's worktree and its `.state`
MERGE_LOCK = "merge-back.lock"  # in WORKTREES_DIR: one merge-back into the working tree at a time
MB = 1_000_000


def state_dir(env: IsolatedEnv) -> Path:
    """The run's own folder in the repository's git folder: the guard copies, the index, the merge journal."""
    return Path(str(env.info.get("state_dir") or f"{env.info['path']}.state"))  # a run recorded by 0.2 has none


def safe_git(env: IsolatedEnv, work_tree: Path | None = None) -> SafeGit:
    common = Path(str(env.info.get("common") or common_dir(Path(env.info["repo"]))))
    state_dir(env).mkdir(parents=True, exist_ok=True)
    return SafeGit(common, work_tree or Path(env.info["path"]), state_dir(env) / "index")


def merging(common: Path) -> AbstractContextManager[None]:
    """Held while a run's changes go into the working tree, or a new run reads it: runs ending at once (a fan-out)
    merge one after the other, each planned against what the one before left, and no run starts from a tree that
    is half merged."""
    return file_lock(common / WORKTREES_DIR / MERGE_LOCK)


def merge_back(env: IsolatedEnv, strategy: str, remote: str, exclude: str, max_file_size: float) -> Merged:
    """Commit the worktree's work to its branch, then bring it back by `strategy`; `exclude` is never committed."""
    top, path, branch = Path(env.info["repo"]), Path(env.info["path"]), str(env.info["branch"])
    notes = guard_repo(env)
    g = safe_git(env)
    try:
        new_tree = _commit(g, path, branch, exclude)
    except GitFailed as exc:
        env.state = KEPT
        return Merged(_lines(notes), keep=True, error=StrawpotError(
            f"cannot commit the session's work on {branch}: {exc.detail}", hint=f"the worktree is kept at {path}"))
    found = tree_apply.changes(g, str(env.info["base_tree"]), new_tree) if env.info.get("base_tree") else []
    if strategy != "patch":
        record_files(env, found, set())
    if strategy == "branch":
        env.state = MERGED
        return Merged(_lines([*notes, f"the session's work is on branch {branch}; merge it with `git merge {branch}`"]))
    if strategy == "pr":
        merged = _pull_request(env, SafeGit(g.common, top), top, branch, remote)
        return Merged(_lines([*notes, merged.message]), merged.keep, merged.error)
    with merging(g.common):
        merged = _patch(env, g, top, path, branch, found, max_file_size)
    return Merged(_lines([*notes, merged.message]), merged.keep, merged.error)


def record_files(env: IsolatedEnv, found: list[Change], brought_back: set[str]) -> None:
    """Record in the environment (so in session.json) the files the run changed, whether each was brought back to
    the user's working tree (else it is on the run's branch): what the dashboard's run page lists."""
    env.info["files"] = [{"path": c.path, "change": _change(c), "back": c.path in brought_back}
                         for c in found[:FILES_RECORDED]]
    env.info["files_total"] = len(found)


def guard_repo(env: IsolatedEnv) -> list[str]:
    """Undo what the session changed in the shared `.git/config` and hooks; a warning line for each.

    Called when the run ends (merged or kept) and by `sessions --prune` for a run that never reached its end;
    the copies stay for a resumed run, which is guarded the same way.
    """
    if "common" not in env.info:
        return []
    lines = repo_guard.restore(Path(str(env.info["common"])), state_dir(env) / "guard")
    return [f"warning: {line}" for line in lines]


def recover_merges(common: Path, top: Path) -> list[str]:
    """Undo every merge-back into `top` a killed strawpot left half-done in this repository; a line for each.

    `common` is the repository's git folder as git names it, never a path read from a run record: only the
    state folders strawpot made there (real folders of this user, no link) are looked at.
    """
    found = []
    folder = common / WORKTREES_DIR
    if not owned_folder(folder):
        return []
    for state in sorted(folder.glob("*.state")):
        if owned_folder(state) and owned_folder(state / "merge"):
            said = tree_apply.recover(state / "merge", top)
            if said:
                found.append(said)
    return found


def _commit(g: SafeGit, path: Path, branch: str, exclude: str) -> str:
    """Commit the worktree as it is on top of the branch (the agents' own commits stay); the tree it holds."""
    tip = g.text("rev-parse", "--verify", "-q", f"refs/heads/{branch}^{{commit}}").strip()
    g.out("read-tree", tip)  # what the agents committed (a file they force-added too), then the tree over it
    tree = snapshot(path, exclude, env=g.env, prefix=g.prefix)
    if tree == g.text("rev-parse", f"{tip}^{{tree}}").strip():
        return tree
    identity = () if g.text("config", "user.email", check=False).strip() else \
        ("-c", "user.name=strawpot", "-c", "user.email=strawpot@localhost")
    commit = g.text(*identity, "-c", "commit.gpgsign=false", "commit-tree", tree, "-p", tip,
                    "-m", f"strawpot: session {path.name}").strip()
    g.out("update-ref", f"refs/heads/{branch}", commit, tip)
    return tree


def _change(c: Change) -> str:
    return "deleted" if c.new_mode == ABSENT else "added" if c.old_mode == ABSENT else "modified"


def _patch(env: IsolatedEnv, g: SafeGit, top: Path, path: Path, branch: str, found: list[Change],
           max_file_size: float) -> Merged:
    base = str(env.info["base_tree"])
    by_hand = f"`git diff {base} {branch} | git apply --3way`, then `strawpot sessions --prune`"
    recovered = recover_merges(g.common, top)
    record_files(env, found, set())  # until they are applied, the changes are on the branch only
    if not found:
        env.state = MERGED
        return Merged(_lines([*recovered, "the session changed no file"]))
    accepted, refused = _screen(g, top, found, max_file_size)
    fmt = g.text("rev-parse", "--show-object-format", check=False).strip() or "sha1"
    todo = tree_apply.plan(top, accepted, fmt)
    if todo.conflicts:
        env.state = KEPT
        more = f" (and {len(todo.conflicts) - 1} more)" if len(todo.conflicts) > 1 else ""
        return Merged(_lines(recovered), keep=True, error=ConflictError(
            f"the session's changes do not apply cleanly to your working tree: {todo.conflicts[0]}{more}; "
            "nothing in it was changed",
            hint=f"the changes are on branch {branch} (worktree {path}); apply them by hand with {by_hand}"))
    try:
        tree_apply.apply(g, top, state_dir(env) / "merge", todo, fmt)
    except (OSError, GitFailed) as exc:
        env.state = KEPT
        return Merged(_lines(recovered), keep=True, error=StrawpotError(
            f"applying the session's changes failed ({exc}); every file it had touched was restored as it was",
            hint=f"the changes are on branch {branch}; {by_hand}"))
    done = [c.path for c in accepted]
    record_files(env, found, set(done))
    lines = [*recovered, f"applied the session's changes to your working tree ({count(len(done), 'file')}): "
             + ", ".join(done[:10]) + (" …" if len(done) > 10 else "")]
    env.state = MERGED
    if not refused:
        return Merged(_lines(lines))
    env.info["keep_branch"] = True
    more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
    verb = "was" if len(refused) == 1 else "were"
    return Merged(_lines([*lines, *(f"refused: {line}" for line in refused)]), error=ConflictError(
        f"{count(len(refused), 'change')} of the session {verb} not brought back: {terminal_safe(refused[0])}{more}; "
        f"they are on branch {branch}",
        hint=f"look at them with `git diff {base} {branch} -- PATH`; take one with "
             f"`git checkout {branch} -- PATH`; delete the branch with `git branch -D {branch}`"))


def _screen(g: SafeGit, top: Path, found: list[Change], max_file_size: float) -> tuple[list[Change], list[str]]:
    """The changes to bring back, and one line for each one the user must accept by hand."""
    sizes = _sizes(g, [c.new_sha for c in found if c.new_mode not in (ABSENT, GITLINK)])
    accepted, refused = [], []
    for c in found:
        why = ""
        if any(part.lower().startswith(".git") for part in c.path.split("/")):
            why = "a change under a .git* path"
        elif any(part in ("", ".", "..") for part in c.path.split("/")):
            why = "a path git itself would refuse"
        elif GITLINK in (c.old_mode, c.new_mode):
            why = "a submodule change"
        elif c.new_mode == LINK:
            target = os.fsdecode(g.out("cat-file", "blob", c.new_sha)) if sizes.get(c.new_sha, 0) < 4096 else ""
            if not target or _escapes(top, c.path, target):
                why = f"a symlink to {target[:200]!r}, outside the repository"
        elif c.new_mode != ABSENT and sizes.get(c.new_sha, 0) > max_file_size * MB:
            why = f"{sizes[c.new_sha] / MB:.3g} MB, over [session] max_file_size ({max_file_size:g} MB)"
        if why:
            refused.append(f"{c.path}: {why}")
        else:
            accepted.append(c)
    return accepted, refused


def _sizes(g: SafeGit, shas: list[str]) -> dict[str, int]:
    if not shas:
        return {}
    out = g.out("cat-file", "--batch-check=%(objectname) %(objectsize)",
                input_bytes="".join(f"{sha}\n" for sha in shas).encode()).decode()
    return {sha: int(size) for sha, _, size in (line.partition(" ") for line in out.splitlines()) if size.isdigit()}


def _escapes(top: Path, path: str, target: str) -> bool:
    where = os.path.normpath(os.path.join(top, os.path.dirname(path), target))
    return not (where == str(top) or where.startswith(str(top) + os.sep)) or "/.git" in f"/{os.path.relpath(where, top)}"


def _lines(lines: list[str]) -> str:
    """The lines to print; the file names in them are the agents' to choose, so no escape sequence is kept."""
    return terminal_safe("\n".join(line for line in lines if line))


def _pull_request(env: IsolatedEnv, g: SafeGit, top: Path, branch: str, remote: str) -> Merged:
    try:
        g.out("push", "-q", remote, f"{branch}:{branch}")
    except GitFailed as exc:
        env.state = KEPT
        return Merged(keep=True, error=StrawpotError(f"cannot push {branch} to {remote!r}: {exc.detail}",
                                                     hint=f"push it by hand: `git push {remote} {branch}`"))
    env.state = MERGED
    gh = shutil.which("gh")
    if gh is None:
        return Merged(f"pushed branch {branch} to {remote}; gh is not on PATH, so open the pull request by hand")
    target = g.text("symbolic-ref", "-q", "--short", "HEAD", check=False).strip()
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
