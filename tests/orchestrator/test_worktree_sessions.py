"""Worktree isolation and merge back, end to end: real git, `strawpot start` as a subprocess, real gRPC."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from orchestrator.worktree import WorktreeIsolator
from strawpot.model.errors import UsageError
from tests._cli import STRAWPOT, strawpot, strawpot_here
from tests.orchestrator._merge_scenario import IDENTITY, a_git_project, git

pytestmark = pytest.mark.e2e


def run(root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`strawpot ARGS` in `root`: `start` as a real process (it runs agents), the rest through main() here."""
    if args[0] == "start":
        return strawpot(*args, cwd=root, extra_env={**IDENTITY, **(env or {})})
    return strawpot_here(*args, cwd=root, extra_env={**IDENTITY, **(env or {})})


def start(root: Path, task: str, *extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run(root, "start", "--headless", "--task", task, "--isolation", "worktree", *extra, env=env)


@pytest.fixture
def repo(project):  # type: ignore[no-untyped-def]
    """The project as a git repository: README.md and notes.txt committed, .strawpot/ ignored."""
    project.build()
    a_git_project(project.root, **{"notes.txt": "notes\n"})
    return project


def branches(root: Path) -> list[str]:
    return git(root, "branch", "--format=%(refname:short)").split()


def worktrees(root: Path) -> list[str]:
    return [line.split()[1] for line in git(root, "worktree", "list", "--porcelain").splitlines()
            if line.startswith("worktree ")]


def the_run(repo) -> dict:  # type: ignore[no-untyped-def]
    return json.loads(run(repo.root, "sessions", "--json").stdout)["sessions"][0]


def test_patch_brings_edits_and_new_files_back_and_keeps_the_users_own_changes(repo) -> None:  # type: ignore[no-untyped-def]
    root = repo.root
    (root / "notes.txt").write_text("notes\nmy own uncommitted line\n")
    (root / "scratch.txt").write_text("untracked, mine\n")
    proc = start(root, "cwd then write:README.md=edited by the agent then write:src/new.txt=added "
                       "then delegate:implementer:write:impl.txt=from the sub-agent", "--merge", "patch")
    assert proc.returncode == 0, proc.stderr
    worked_in = proc.stdout.splitlines()[0]
    assert Path(worked_in) != root and ".git/strawpot-worktrees/" in worked_in  # outside the user's working tree
    assert (root / "README.md").read_text() == "edited by the agent"
    assert (root / "src" / "new.txt").read_text() == "added"
    assert (root / "impl.txt").read_text() == "from the sub-agent"  # every agent works in the same worktree
    assert (root / "notes.txt").read_text() == "notes\nmy own uncommitted line\n"
    assert (root / "scratch.txt").read_text() == "untracked, mine\n"
    assert branches(root) == ["main"] and worktrees(root) == [str(root)]
    assert "applied the session's changes to your working tree (3 files)" in proc.stderr
    assert the_run(repo)["isolation"]["state"] == "merged"
    assert git(root, "log", "--format=%s").split("\n")[0] == "first"  # the user's history is not touched


def test_the_installed_tree_is_available_in_the_worktree_and_never_merged(repo) -> None:  # type: ignore[no-untyped-def]
    proc = start(repo.root, "write:x.txt=x then fail:1", "--merge", "patch")  # a failed run keeps its worktree
    assert proc.returncode == 1, proc.stderr
    path = Path(the_run(repo)["isolation"]["path"])
    assert (path / ".strawpot").resolve() == (repo.root / ".strawpot").resolve()
    assert (path / ".strawpot" / "agents" / "stub-agent" / "AGENT.md").is_file()


def test_a_conflicting_patch_leaves_the_users_tree_untouched_and_keeps_the_branch(repo) -> None:  # type: ignore[no-untyped-def]
    root = repo.root
    # the user edits README.md while the session runs (the agent does it for them, by absolute path)
    proc = start(root, f"write:{root}/README.md=the user's edit during the run then write:README.md=the agent's edit "
                       "then write:other.txt=new", "--merge", "patch")
    assert proc.returncode == 3, proc.stderr
    assert "do not apply cleanly to your working tree" in proc.stderr and "nothing in it was changed" in proc.stderr
    assert "git apply --3way" in proc.stderr and "Traceback" not in proc.stderr
    assert (root / "README.md").read_text() == "the user's edit during the run"
    assert not (root / "other.txt").exists()
    record = the_run(repo)
    # its work did not come back: the run failed, and nothing said `succeeded` first
    assert record["state"] == "failed" and "succeeded" not in proc.stderr
    assert f"run {record['run_id']} failed (exit code 3)" in proc.stderr
    branch = record["isolation"]["branch"]
    assert branch in branches(root) and record["isolation"]["state"] == "kept"
    assert git(root, "show", f"{branch}:README.md") == "the agent's edit"
    listing = run(root, "sessions").stdout
    assert f"{branch} (kept)" in listing
    pruned = run(root, "sessions", "--prune", "--force")
    assert pruned.returncode == 0 and record["run_id"] in pruned.stderr
    assert branches(root) == ["main"] and worktrees(root) == [str(root)]
    assert the_run(repo)["isolation"]["state"] == "removed"


def test_a_failed_run_keeps_its_worktree_and_git_status_stays_as_it_was(repo) -> None:  # type: ignore[no-untyped-def]
    root = repo.root
    (root / "notes.txt").write_text("dirty\n")
    before = git(root, "status", "--porcelain")
    proc = start(root, "write:half.txt=half done then fail:4")
    assert proc.returncode == 4, proc.stderr
    assert "worktree is kept at" in proc.stderr and "strawpot sessions --prune" in proc.stderr
    assert git(root, "status", "--porcelain") == before and not (root / "half.txt").exists()
    record = the_run(repo)
    assert record["isolation"]["state"] == "kept" and Path(record["isolation"]["path"], "half.txt").is_file()
    assert run(root, "sessions", "--prune", "--force").returncode == 0
    assert not Path(record["isolation"]["path"]).exists() and branches(root) == ["main"]


def test_branch_merge_keeps_the_branch_and_says_how_to_merge(repo) -> None:  # type: ignore[no-untyped-def]
    root = repo.root
    proc = start(root, "write:feature.txt=done", "--merge", "branch")
    assert proc.returncode == 0, proc.stderr
    branch = the_run(repo)["isolation"]["branch"]
    assert f"git merge {branch}" in proc.stderr and worktrees(root) == [str(root)]
    assert not (root / "feature.txt").exists()
    assert ".strawpot" not in git(root, "ls-tree", "-r", "--name-only", branch)  # the linked tree is never merged
    git(root, "merge", "-q", branch)
    assert (root / "feature.txt").read_text() == "done"


def _fake_gh(tmp_path: Path, code: int) -> dict[str, str]:
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir(exist_ok=True)
    gh = bin_dir / "gh"
    gh.write_text(f"#!/bin/sh\necho \"$@\" > {tmp_path}/gh.args\n"
                  + ("echo 'https://example.org/pr/1'\n" if code == 0 else "echo 'GraphQL: no access' >&2\n")
                  + f"exit {code}\n")
    gh.chmod(0o755)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}


@pytest.mark.parametrize("gh_code", [0, 1])
def test_pr_pushes_to_the_remote_and_opens_a_pull_request_with_gh(repo, tmp_path, gh_code) -> None:  # type: ignore[no-untyped-def]
    root = repo.root
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    git(root, "remote", "add", "origin", str(remote))
    proc = start(root, "write:pr.txt=for review", "--merge", "pr", env=_fake_gh(tmp_path, gh_code))
    branch = the_run(repo)["isolation"]["branch"]
    assert git(remote, "show", f"{branch}:pr.txt") == "for review"
    args = (tmp_path / "gh.args").read_text()
    assert f"pr create --head {branch}" in args and "--base main" in args
    if gh_code == 0:
        assert proc.returncode == 0, proc.stderr
        assert "opened a pull request https://example.org/pr/1" in proc.stderr
    else:
        assert proc.returncode == 1
        assert f"pushed {branch} to origin but `gh pr create` failed: GraphQL: no access" in proc.stderr
    assert worktrees(root) == [str(root)]


def test_pr_without_gh_pushes_and_names_the_branch(repo, tmp_path) -> None:  # type: ignore[no-untyped-def]
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    git(repo.root, "remote", "add", "origin", str(remote))
    bin_dir = tmp_path / "nogh"
    bin_dir.mkdir()
    for tool in ("git", "python3", "sh"):  # a PATH with what the run needs and no gh
        (bin_dir / tool).symlink_to(subprocess.check_output(["which", tool], text=True).strip())
    (bin_dir / "python3").unlink()
    (bin_dir / "python3").symlink_to(sys.executable)
    proc = start(repo.root, "write:x.txt=x", "--merge", "pr", env={"PATH": str(bin_dir)})
    assert proc.returncode == 0, proc.stderr
    branch = the_run(repo)["isolation"]["branch"]
    assert f"pushed branch {branch} to origin; gh is not on PATH" in proc.stderr


# -- bad input -----------------------------------------------------------------------------------------------


def test_not_a_git_repository_is_exit_2(project) -> None:  # type: ignore[no-untyped-def]
    project.build()
    proc = start(project.root, "echo:x")
    assert proc.returncode == 2
    assert "is not in a git repository; session isolation 'worktree' needs one" in proc.stderr
    assert "--isolation none" in proc.stderr and not project.sessions_dir.exists()


def test_a_repository_in_the_middle_of_a_merge_is_exit_2(repo) -> None:  # type: ignore[no-untyped-def]
    root = repo.root
    git(root, "checkout", "-q", "-b", "other")
    (root / "README.md").write_text("other\n")
    git(root, "commit", "-qam", "other")
    git(root, "checkout", "-q", "main")
    (root / "README.md").write_text("main\n")
    git(root, "commit", "-qam", "main")
    subprocess.run(["git", "-C", str(root), "merge", "other"], capture_output=True, env={**os.environ, **IDENTITY})
    proc = start(root, "echo:x")
    assert proc.returncode == 2 and "in the middle of a merge" in proc.stderr and "git merge --abort" in proc.stderr


def test_detached_head_refuses_a_pull_request_and_dirty_trees_refuse_branch(repo) -> None:  # type: ignore[no-untyped-def]
    root = repo.root
    git(root, "checkout", "-q", "--detach")
    proc = start(root, "echo:x", "--merge", "pr")
    assert proc.returncode == 2 and "HEAD is detached" in proc.stderr
    git(root, "checkout", "-q", "main")
    (root / "README.md").write_text("dirty\n")
    proc = start(root, "echo:x", "--merge", "branch")
    assert proc.returncode == 2 and "uncommitted changes" in proc.stderr and "--merge patch" in proc.stderr


def test_a_branch_that_already_exists_is_refused(repo) -> None:  # type: ignore[no-untyped-def]
    root = repo.root
    git(root, "branch", "strawpot/run_20260101_000000_abcdef")
    with pytest.raises(UsageError, match="branch strawpot/run_20260101_000000_abcdef already exists"):
        WorktreeIsolator().create("run_20260101_000000_abcdef", root)
    assert worktrees(root) == [str(root)]


def test_a_killed_strawpot_leaves_git_status_as_it_was_and_prune_cleans_up(repo) -> None:  # type: ignore[no-untyped-def]
    root = repo.root
    (root / "notes.txt").write_text("dirty\n")
    before = git(root, "status", "--porcelain")
    proc = subprocess.Popen([*STRAWPOT, "start", "--headless", "--isolation", "worktree", "--task",
                             "write:wip.txt=half then sleep:60"], cwd=root, env={**os.environ, **IDENTITY},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    sessions = root / ".strawpot" / "sessions"
    deadline = time.monotonic() + 60
    record: dict = {}
    while time.monotonic() < deadline:
        runs = list(sessions.glob("run_*/session.json")) if sessions.is_dir() else []
        record = json.loads(runs[0].read_text()) if runs else {}
        if record.get("agents") and record["agents"][0].get("state") == "running":
            break
        time.sleep(0.05)
    assert record.get("agents"), "the run never started its agent"
    os.killpg(proc.pid, signal.SIGKILL)  # strawpot itself dies, no cleanup of any kind
    proc.wait(timeout=10)
    agent_pid = record["agents"][0]["pid"]
    with contextlib.suppress(ProcessLookupError):
        os.killpg(agent_pid, signal.SIGKILL)
    status = subprocess.run(["git", "-C", str(root), "status", "--porcelain"], capture_output=True, text=True)
    assert status.returncode == 0 and status.stderr == "" and status.stdout == before
    assert str(root) in worktrees(root)[0] and len(worktrees(root)) == 2  # registered, outside the working tree
    assert run(root, "sessions", "--prune", "--force").returncode == 0
    assert worktrees(root) == [str(root)] and branches(root) == ["main"]
    assert git(root, "status", "--porcelain") == before


def test_a_project_in_a_subfolder_of_the_repository(project, tmp_path) -> None:  # type: ignore[no-untyped-def]
    top = project.root
    project.root = top / "sub" / "proj"
    project.root.mkdir(parents=True)
    project.build()
    git(top, "init", "-q", "-b", "main")
    (top / ".gitignore").write_text(".strawpot/\n")
    (top / "top.txt").write_text("top\n")
    git(top, "add", "-A")
    git(top, "commit", "-q", "-m", "first")
    proc = start(project.root, "cwd then write:here.txt=in the project folder", "--merge", "patch")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].endswith("/sub/proj")
    assert (project.root / "here.txt").read_text() == "in the project folder"
    assert branches(top) == ["main"] and worktrees(top) == [str(top)]


def test_git_missing_is_exit_2(repo, tmp_path) -> None:  # type: ignore[no-untyped-def]
    bin_dir = tmp_path / "nogit"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)
    proc = start(repo.root, "echo:x", env={"PATH": str(bin_dir)})
    assert proc.returncode == 2 and "needs git, which is not on PATH" in proc.stderr


def test_a_failing_push_keeps_the_worktree(repo) -> None:  # type: ignore[no-untyped-def]
    proc = start(repo.root, "write:x.txt=x", "--merge", "pr", env={"STRAWPOT_SESSION_REMOTE": "nowhere"})
    assert proc.returncode == 1 and "cannot push strawpot/" in proc.stderr and "to 'nowhere'" in proc.stderr
    isolation = the_run(repo)["isolation"]
    assert isolation["state"] == "kept" and Path(isolation["path"], "x.txt").is_file()
    assert "Traceback" not in proc.stderr


def test_an_interrupted_run_keeps_its_worktree(repo) -> None:  # type: ignore[no-untyped-def]
    root = repo.root
    proc = subprocess.Popen([*STRAWPOT, "start", "--headless", "--isolation", "worktree", "--task",
                             "write:wip.txt=half then sleep:60"], cwd=root, env={**os.environ, **IDENTITY},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sessions = root / ".strawpot" / "sessions"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        runs = list(sessions.glob("run_*/session.json")) if sessions.is_dir() else []
        record = json.loads(runs[0].read_text()) if runs else {}
        if record.get("agents") and record["agents"][0].get("state") == "running":
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "worktree is kept at" in err
    isolation = the_run(repo)["isolation"]
    assert isolation["state"] == "kept" and Path(isolation["path"]).is_dir()
    assert not (root / "wip.txt").exists()


def test_a_git_call_that_hangs_in_the_merge_fails_the_run_and_prune_removes_its_worktree(repo, tmp_path) -> None:  # type: ignore[no-untyped-def]
    bin_dir = tmp_path / "hanging-git"
    bin_dir.mkdir()
    real = subprocess.check_output(["which", "git"], text=True).strip()
    (bin_dir / "git").write_text(f'#!/bin/sh\nfor a in "$@"; do [ "$a" = diff-tree ] && exec sleep 60; done\n'
                                 f'exec {real} "$@"\n')
    (bin_dir / "git").chmod(0o755)
    started = time.monotonic()
    proc = start(repo.root, "write:x.txt=x", env={"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
                                                  # every git call of the run has 10 s: a loaded machine is slow
                                                  "STRAWPOT_SESSION_GIT_TIMEOUT": "10"})
    assert time.monotonic() - started < 45  # a run that waited for the hanging git would take 60 s or more
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "cannot merge the session's work back: git diff-tree -r: did not finish within 10 s" in proc.stderr
    assert "failed (exit code 1)" in proc.stderr
    assert "strawpot sessions --prune" in proc.stderr
    record = the_run(repo)
    assert record["state"] == "failed" and record["isolation"]["state"] == "kept"
    assert not (repo.root / "x.txt").exists()
    assert run(repo.root, "sessions", "--prune", "--force").returncode == 0
    assert branches(repo.root) == ["main"] and worktrees(repo.root) == [str(repo.root)]


@pytest.mark.parametrize("ignore", [".strawpot", "/.strawpot"])
def test_start_merges_back_in_a_project_that_ignores_strawpot(repo, ignore) -> None:  # type: ignore[no-untyped-def]
    root = repo.root
    (root / ".gitignore").write_text(ignore + "\n")
    git(root, "commit", "-qam", "ignore the installed tree")
    (root / "notes.txt").write_text("uncommitted\n")
    proc = start(root, "write:feature.txt=done", "--merge", "patch")
    assert proc.returncode == 0, proc.stderr
    assert "addIgnoredFile" not in proc.stderr and (root / "feature.txt").read_text() == "done"
    assert (root / "notes.txt").read_text() == "uncommitted\n" and not (root / ".strawpot").is_symlink()
