"""Merge-back of worktree sessions with real git: all or nothing, every kind of change, survives SIGKILL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from orchestrator.isolation import MERGED, IsolatedEnv, Merged
from orchestrator.leftovers import recover
from orchestrator.worktree import WorktreeIsolator
from strawpot.model.errors import ConflictError
from tests._cli import strawpot
from tests.orchestrator._merge_scenario import (
    IDENTITY,
    agent_edits,
    committed_files,
    expected_after,
    git,
    state,
    users_own_work,
)

ROOT = Path(__file__).resolve().parents[2]
RUN = "run_20261125_120000_abcdef"


@pytest.fixture(autouse=True)
def _identity(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in IDENTITY.items():
        monkeypatch.setenv(key, value)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    committed_files(root)
    return root


def session(root: Path, edits, **settings: float) -> tuple[WorktreeIsolator, IsolatedEnv, Merged]:  # type: ignore[no-untyped-def]
    isolator = WorktreeIsolator(**settings)  # type: ignore[arg-type]
    isolator.check(root)
    env = isolator.create(RUN, root)
    edits(Path(env.info["path"]))
    merged = isolator.merge(env, root)
    if not merged.keep:
        isolator.cleanup(env, root)
    return isolator, env, merged


def branches(root: Path) -> list[str]:
    return git(root, "branch", "--format=%(refname:short)").split()


def test_every_kind_of_change_comes_back_and_the_users_own_work_stays(repo: Path, tmp_path: Path) -> None:
    users_own_work(repo)
    expected = expected_after(repo, tmp_path)
    _, env, merged = session(repo, agent_edits)
    assert merged.error is None, merged.error
    assert state(repo) == expected
    assert env.state == MERGED and branches(repo) == ["main"]
    assert git(repo, "log", "--format=%s") == "first\n"


@pytest.mark.parametrize("ignore", [".strawpot\n", ".strawpot/\n", "/.strawpot\n"])
def test_a_project_that_ignores_strawpot_merges_back_and_never_carries_the_link(tmp_path: Path, ignore: str) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / ".strawpot").mkdir()
    (root / ".strawpot" / "installed.txt").write_text("the installed tree\n")
    committed_files(root, ignore)
    (root / "notes.txt").write_text("dirty, carried in\n")

    def edits(tree: Path) -> None:
        assert (tree / ".strawpot" / "installed.txt").read_text() == "the installed tree\n"
        (tree / "feature.txt").write_text("done\n")

    _, env, merged = session(root, edits)
    assert merged.error is None, merged.error
    assert (root / "feature.txt").read_text() == "done\n"
    assert (root / ".strawpot" / "installed.txt").read_text() == "the installed tree\n"
    assert not (root / ".strawpot").is_symlink()


def test_a_replaced_strawpot_link_is_neither_merged_nor_an_error(repo: Path) -> None:
    def edits(tree: Path) -> None:
        (tree / ".strawpot").unlink()
        (tree / ".strawpot").mkdir()
        (tree / ".strawpot" / "planted.txt").write_text("x\n")
        (tree / "feature.txt").write_text("done\n")

    _, _, merged = session(repo, edits)
    assert merged.error is None, merged.error
    assert (repo / "feature.txt").is_file() and not (repo / ".strawpot").exists()


def _refused_without_change(repo: Path, edits, needle: str) -> Merged:  # type: ignore[no-untyped-def]
    before = []

    def then_look(tree: Path) -> None:
        edits(tree)
        before.append(state(repo))  # the user's tree when the merge starts

    _, env, merged = session(repo, then_look)
    assert isinstance(merged.error, ConflictError), merged
    assert needle in str(merged.error) and "nothing in it was changed" in str(merged.error)
    assert state(repo) == before[0]  # byte for byte
    assert merged.keep and f"strawpot/{RUN}" in branches(repo)
    return merged


@pytest.mark.parametrize("replacement", ["file", "symlink"])
def test_a_folder_replaced_over_the_users_ignored_files_touches_nothing(repo: Path, replacement: str) -> None:
    (repo / "pkg" / "core.py").write_text("core\nmy uncommitted edit\n")  # carried in: the agent sees it
    (repo / "pkg" / "__pycache__").mkdir()
    (repo / "pkg" / "__pycache__" / "core.pyc").write_bytes(b"\0pyc")
    (repo / ".git" / "info" / "exclude").write_text("__pycache__/\n")

    def edits(tree: Path) -> None:
        for name in ("core.py", "util.py"):
            (tree / "pkg" / name).unlink()
        (tree / "pkg").rmdir()
        if replacement == "file":
            (tree / "pkg").write_text("a file\n")
        else:
            (tree / "pkg").symlink_to("README.md")

    _refused_without_change(repo, edits, "pkg/__pycache__/core.pyc is in your tree")


def test_a_rename_onto_an_ignored_path_touches_nothing(repo: Path) -> None:
    (repo / "secret.env").write_text("TOKEN=mine\n")

    def edits(tree: Path) -> None:
        (tree / "old.txt").rename(tree / "secret.env")
        git(tree, "add", "-f", "secret.env", "old.txt")
        git(tree, "commit", "-q", "-m", "agent's own commit")

    _refused_without_change(repo, edits, "secret.env exists in your tree (untracked or ignored)")
    assert git(repo, "show", f"strawpot/{RUN}:secret.env") == "old\n"  # the agent's commit stays on its branch


def test_an_edit_the_user_made_during_the_run_touches_nothing(repo: Path) -> None:
    def edits(tree: Path) -> None:
        (repo / "pkg" / "util.py").write_text("the user's edit during the run\n")
        agent_edits(tree)

    _refused_without_change(repo, edits, "pkg/util.py changed in your tree since the session started")


def test_a_failure_mid_apply_restores_every_path_exactly(repo: Path, tmp_path: Path) -> None:
    users_own_work(repo)
    before = state(repo)
    script = f"""
import sys
from pathlib import Path
from orchestrator import tree_apply
from orchestrator.worktree import WorktreeIsolator
from tests.orchestrator._merge_scenario import agent_edits
calls = []
def fail(step):
    calls.append(step)
    if len(calls) == 40:
        raise OSError(28, "No space left on device")
tree_apply.checkpoint = fail
isolator = WorktreeIsolator()
env = isolator.create({RUN!r}, Path({str(repo)!r}))
agent_edits(Path(env.info["path"]))
merged = isolator.merge(env, Path({str(repo)!r}))
print(merged.error)
"""
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, **IDENTITY, "PYTHONPATH": str(ROOT)})
    assert "applying the session's changes failed" in proc.stdout, proc.stderr
    assert "every file it had touched was restored as it was" in proc.stdout
    assert state(repo) == before


# One interpreter imports the merge once; each round is a forked child of it ("STEP RUN_ID" on its stdin), killed at
# its STEP-th checkpoint or merging to the end; "exit CODE" follows what the child printed (an interpreter start-up
# and the imports per round were a third of the test's time).
KILL_SERVER = """
import os, signal, sys
from pathlib import Path
from orchestrator import tree_apply
from orchestrator.worktree import WorktreeIsolator
from tests.orchestrator._merge_scenario import agent_edits
root = Path(sys.argv[1])
for line in sys.stdin:
    kill_at, run_id = int(line.split()[0]), line.split()[1]
    child = os.fork()
    if child == 0:
        code = 1
        try:
            calls = []
            def kill(step):
                calls.append(step)
                if len(calls) == kill_at:
                    print(step, flush=True)
                    os.kill(os.getpid(), signal.SIGKILL)
            tree_apply.checkpoint = kill
            isolator = WorktreeIsolator()
            env = isolator.create(run_id, root)
            agent_edits(Path(env.info["path"]))
            merged = isolator.merge(env, root)
            print(merged.error or "", flush=True)
            code = 0 if merged.error is None else 1
        except BaseException:
            import traceback
            traceback.print_exc()
        finally:
            sys.stderr.flush()
            os._exit(code)  # never back into the loop: only the parent reads the rounds
    print("exit", os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]), flush=True)
"""


def _kill_round(server: subprocess.Popen[str], step: int, run_id: str) -> tuple[int, str]:
    """The exit code of one merge killed at checkpoint `step` (0: it ran to the end), and what it printed."""
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write(f"{step} {run_id}\n")
    server.stdin.flush()
    printed = []
    watchdog = threading.Timer(60, server.kill)  # a round that hangs ends the server, and so the test, in 60 s
    watchdog.start()
    try:
        while not (line := server.stdout.readline()).startswith("exit "):
            assert line, f"the merge server ended (a round takes at most 60 s): {server.wait(timeout=10)}"
            printed.append(line)
    finally:
        watchdog.cancel()
    return int(line.split()[1]), "".join(printed)


@pytest.mark.timeout(900)  # 30-40 s on an idle machine; the suite's 300 s is too near on a loaded one
def test_sigkill_at_every_step_of_the_merge_leaves_the_tree_untouched_or_fully_merged(project, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    project.build()
    root = project.root
    committed_files(root)
    users_own_work(root)
    before, after = state(root), expected_after(root, tmp_path)
    outcomes = []
    errors = tmp_path / "server.err"
    with errors.open("w") as err, subprocess.Popen(
            [sys.executable, "-c", KILL_SERVER, str(root)], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=err, text=True, env={**os.environ, **IDENTITY, "PYTHONPATH": str(ROOT)}) as server:
        try:
            _merge_killed_at_every_step(server, root, before, after, outcomes, errors)
        finally:
            server.kill()
    assert state(root) == after  # the last round ran to the end
    assert len(outcomes) > 30 and outcomes[-1][1] == "merged" and outcomes[0][1] == "untouched"
    assert any(step.startswith("write ") for step, how in outcomes if how == "untouched")


def _merge_killed_at_every_step(server: subprocess.Popen[str], root: Path, before: object, after: object,
                                outcomes: list[tuple[str, str]], errors: Path) -> None:
    for step in range(1, 200):
        run_id = f"run_20261125_120000_{step:06x}"
        code, printed = _kill_round(server, step, run_id)
        if code == 0:
            break
        assert code == -9, printed + errors.read_text()
        if step % 10 == 1:  # the next strawpot command undoes a half-done merge; in between, the same call in-process
            recovered = strawpot("sessions", "--prune", cwd=root, extra_env=IDENTITY, timeout=60)
            assert recovered.returncode == 0, recovered.stderr
        else:
            recover(root)
        now = state(root)
        assert now in (before, after), f"killed at {printed.strip()}: the tree is half merged"
        outcomes.append((printed.strip(), "untouched" if now == before else "merged"))
        if now == after:  # the kill came after the journal said done: undo the merge for the next round
            for path in set(after) - set(before):
                target = root / path
                if target.is_symlink() or target.is_file():
                    target.unlink()
            subprocess.run(["rm", "-rf", str(root / "link"), str(root / "pkg"), str(root / "dir2")], check=True)
            git(root, "checkout", "-f", "HEAD", "--", ".")
            users_own_work(root)
            assert state(root) == before
        subprocess.run(["rm", "-rf", str(root / ".git" / "strawpot-worktrees")], check=True)
        git(root, "worktree", "prune")
        git(root, "branch", "-D", f"strawpot/{run_id}")
    else:
        pytest.fail("the merge never finished")


# -- what the agent plants in the shared repository -----------------------------------------------------------


def plant(tree: Path, markers: Path) -> None:
    """Everything an agent can do to get its code run by git on the user's side."""
    markers.mkdir(exist_ok=True)
    common = Path(git(tree, "rev-parse", "--git-common-dir").strip())
    common = common if common.is_absolute() else tree / common
    for hook in ("pre-commit", "post-commit", "reference-transaction", "post-checkout", "post-index-change",
                 "pre-auto-gc", "post-rewrite"):
        (common / "hooks" / hook).write_text(f"#!/bin/sh\ntouch {markers}/hook-{hook}\n")
        (common / "hooks" / hook).chmod(0o755)
    evil = tree / "evil"
    evil.mkdir()
    for name in ("post-commit", "reference-transaction"):
        (evil / name).write_text(f"#!/bin/sh\ntouch {markers}/hookspath-{name}\n")
        (evil / name).chmod(0o755)
    monitor = tree / "monitor.sh"
    monitor.write_text(f"#!/bin/sh\ntouch {markers}/fsmonitor\n")
    monitor.chmod(0o755)
    git(tree, "config", "filter.evil.clean", f"sh -c 'touch {markers}/filter-clean; cat'")
    git(tree, "config", "filter.evil.smudge", f"sh -c 'touch {markers}/filter-smudge; cat'")
    git(tree, "config", "filter.evil.required", "true")
    git(tree, "config", "core.fsmonitor", str(monitor))
    git(tree, "config", "core.hooksPath", str(evil))
    (tree / ".gitattributes").write_text("* filter=evil\n")
    (tree / "feature.txt").write_text("done\n")


def test_code_planted_by_the_agent_never_runs_on_the_users_side(repo: Path, tmp_path: Path) -> None:
    markers = tmp_path / "markers"
    config_before = (repo / ".git" / "config").read_bytes()
    hooks_before = sorted(p.name for p in (repo / ".git" / "hooks").iterdir())
    _, _, merged = session(repo, lambda tree: plant(tree, markers))
    assert (repo / "feature.txt").read_text() == "done\n"
    assert not (repo / ".gitattributes").exists()  # a .git* path: refused, kept on the branch
    assert ".gitattributes: a change under a .git* path" in merged.message
    for word in ("core.fsmonitor", "core.hooksPath", "filter.evil.clean", "post-commit", "reference-transaction"):
        assert word.lower() in merged.message.lower()
    assert (repo / ".git" / "config").read_bytes() == config_before
    assert sorted(p.name for p in (repo / ".git" / "hooks").iterdir()) == hooks_before
    # the user's own git, afterwards
    (repo / "mine.txt").write_text("mine\n")
    git(repo, "status")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the user's commit")
    git(repo, "checkout", "-q", "-b", "other")
    assert not markers.exists() or sorted(os.listdir(markers)) == []


def test_a_failed_run_keeps_its_worktree_but_not_what_it_planted(repo: Path, tmp_path: Path) -> None:
    markers = tmp_path / "markers"
    isolator = WorktreeIsolator()
    env = isolator.create(RUN, repo)
    plant(Path(env.info["path"]), markers)
    lines = isolator.keep(env)  # what `start` does when the run failed
    assert any("core.fsmonitor" in line for line in lines) and any("post-commit" in line for line in lines)
    git(repo, "status")
    git(repo, "commit", "-q", "--allow-empty", "-m", "x")
    assert Path(env.info["path"], "feature.txt").is_file()
    isolator.cleanup(env, repo)
    assert not markers.exists() or sorted(os.listdir(markers)) == []


# -- what the user must accept by hand ------------------------------------------------------------------------


def test_links_out_of_the_repository_big_files_and_git_paths_stay_on_the_branch(repo: Path) -> None:
    def edits(tree: Path) -> None:
        (tree / "passwd").symlink_to("/etc/passwd")
        (tree / "up").symlink_to("../../..")
        (tree / "pkg" / "sneaky").symlink_to("../../outside")
        (tree / "inside").symlink_to("pkg/core.py")  # stays in the repository: fine
        (tree / "big.bin").write_bytes(b"x" * 5000)
        (tree / "small.txt").write_text("small\n")
        (tree / ".github").mkdir()
        (tree / ".github" / "ci.yml").write_text("run: evil\n")
        (tree / ".gitignore").write_text("")

    _, env, merged = session(repo, edits, max_file_size=0.001)
    assert isinstance(merged.error, ConflictError) and "6 changes of the session were not brought back" in str(
        merged.error)
    refused = [line for line in merged.message.splitlines() if line.startswith("refused: ")]
    assert refused == ["refused: .github/ci.yml: a change under a .git* path",
                       "refused: .gitignore: a change under a .git* path",
                       "refused: big.bin: 0.005 MB, over [session] max_file_size (0.001 MB)",
                       "refused: passwd: a symlink to '/etc/passwd', outside the repository",
                       "refused: pkg/sneaky: a symlink to '../../outside', outside the repository",
                       "refused: up: a symlink to '../../..', outside the repository"]
    # session.json's one-line result: what was applied, then what stayed on the branch (no "listed above")
    assert merged.summary() == ("applied the session's changes to your working tree (2 files): inside, small.txt; "
                                "6 changes of the session were not brought back: .github/ci.yml: a change under a "
                                f".git* path (and 5 more); they are on branch strawpot/{RUN}")
    for name in ("passwd", "up", "pkg/sneaky", "big.bin", ".github"):
        assert not os.path.lexists(repo / name), name
    assert (repo / ".gitignore").read_text().startswith(".strawpot")
    assert os.readlink(repo / "inside") == "pkg/core.py" and (repo / "small.txt").read_text() == "small\n"
    assert f"strawpot/{RUN}" in branches(repo) and not Path(env.info["path"]).exists()  # the branch keeps them
    assert git(repo, "show", f"strawpot/{RUN}:.github/ci.yml") == "run: evil\n"


def test_a_merge_still_going_on_in_another_process_is_not_undone(tmp_path: Path) -> None:
    from orchestrator import tree_apply
    from strawpot.model.fs import file_lock

    top, work = tmp_path / "tree", tmp_path / "run.state" / "merge"
    top.mkdir()
    work.mkdir(parents=True)
    (top / "new.txt").write_text("being merged\n")
    (work / "journal.json").write_text(json.dumps({"version": 1, "top": str(top), "state": "applying",
                                                   "entries": [{"path": "new.txt", "kind": "absent", "backup": "0"}]}))
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom pathlib import Path\n"
                               "from strawpot.model.fs import file_lock\n"
                               f"with file_lock(Path({str(work.parent / tree_apply.LOCK)!r})):\n"
                               "    print('held', flush=True); time.sleep(30)"],
                              cwd=ROOT, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert tree_apply.recover(work, top) is None
        assert (top / "new.txt").is_file() and (work / "journal.json").is_file()
    finally:
        holder.kill()
        holder.wait()
    with file_lock(work.parent / "unrelated.lock"):
        assert "was undone" in str(tree_apply.recover(work, top))  # the process is gone: its half merge is undone
    assert not (top / "new.txt").exists() and not work.exists()


def test_prune_undoes_what_a_run_killed_before_its_end_planted(repo: Path, tmp_path: Path) -> None:
    from orchestrator.leftovers import find, remove

    markers = tmp_path / "markers"
    config_before = (repo / ".git" / "config").read_bytes()
    isolator = WorktreeIsolator()
    env = isolator.create(RUN, repo)
    plant(Path(env.info["path"]), markers)
    sessions = tmp_path / "sessions"
    (sessions / RUN).mkdir(parents=True)  # what a strawpot killed mid-run leaves: running, its owner gone
    (sessions / RUN / "session.json").write_text(json.dumps({"run_id": RUN, "state": "running",
                                                             "isolation": env.to_dict()}))
    [found] = find(sessions, repo)
    assert found.run_id == RUN and found.never_ended and not found.refused
    remove(found)
    assert (repo / ".git" / "config").read_bytes() == config_before
    git(repo, "status")
    git(repo, "commit", "-q", "--allow-empty", "-m", "x")
    assert not markers.exists() or sorted(os.listdir(markers)) == []
    assert branches(repo) == ["main"] and not Path(env.info["state_dir"]).exists()


def test_every_kind_of_uncommitted_change_is_carried_into_the_worktree(repo: Path, tmp_path: Path) -> None:
    agent_edits(repo)  # the user's own uncommitted work this time: every kind of change
    (repo / "untracked").mkdir()
    (repo / "untracked" / "new.txt").write_text("new\n")
    (repo / "build").mkdir()
    (repo / "build" / "ignored.o").write_bytes(b"\0")
    env = WorktreeIsolator().create(RUN, repo)
    mine = {k: v for k, v in state(repo).items() if not k.startswith("build")}
    assert state(Path(env.info["path"])) == mine
