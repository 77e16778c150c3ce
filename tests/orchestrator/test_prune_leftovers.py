"""`strawpot sessions --prune` against a hostile repository and with unmerged work: real git, real subprocesses."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import pty
import struct
import subprocess
import termios
from pathlib import Path

import pytest

from tests._cli import STRAWPOT, strawpot, strawpot_here
from tests._pty import talk
from tests.orchestrator._merge_scenario import IDENTITY, a_git_project, git

pytestmark = pytest.mark.e2e
HOOK = "#!/bin/sh\ntouch \"$HOME/PWNED\"\n"



def run(root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`strawpot ARGS` in `root`: `start` as a real process (it runs agents), the rest through main() here."""
    if args[0] == "start":
        return strawpot(*args, cwd=root, extra_env={**IDENTITY, **(env or {})}, timeout=120)
    return strawpot_here(*args, cwd=root, extra_env={**IDENTITY, **(env or {})})


def branches(root: Path) -> list[str]:
    return git(root, "branch", "--format=%(refname:short)").split()


def worktrees(root: Path) -> list[str]:
    return [line.split()[1] for line in git(root, "worktree", "list", "--porcelain").splitlines()
            if line.startswith("worktree ")]


def tree_of(folder: Path) -> dict[str, str]:
    """Every path under `folder` (links not followed) with its mode and content hash or link target."""
    found = {}
    for here, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = Path(here, name)
            info = path.lstat()
            what = os.readlink(path) if path.is_symlink() else \
                hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
            found[str(path.relative_to(folder))] = f"{oct(info.st_mode)} {what}"
    return found


def _write(path: Path, text: str, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)


def hostile_repository(where: Path) -> Path:
    """A repository that tracks forged run records: a worktree path, branch, git folder and state folder of its
    choosing, a merge journal that writes a hook, and guard copies that are a hook and a config."""
    evil = where / "upstream"
    evil.mkdir()
    git(evil, "init", "-q", "-b", "main")
    _write(evil / "strawpot.toml", "")
    sessions = evil / ".strawpot" / "sessions"
    kept = {"run_id": "run_20260101_000000_aaaaaa", "state": "failed", "started_at": 1.0,
            "isolation": {"kind": "worktree", "state": "kept", "working_dir": "../victim", "path": "../victim",
                          "branch": "feature", "repo": ".", "common": "evil-common", "state_dir": "evil-state"}}
    killed = {"run_id": "run_20260101_000000_bbbbbb", "state": "running", "started_at": 2.0,
              "isolation": {"kind": "worktree", "state": "active", "working_dir": "../victim2", "path": "../victim2",
                            "branch": "feature", "repo": ".", "common": ".git", "state_dir": "evil-state"}}
    absolute = {"run_id": "run_20260101_000000_cccccc", "state": "failed", "started_at": 3.0,
                "isolation": {"kind": "worktree", "state": "kept", "path": str(where / "victim"),
                              "branch": "feature", "repo": str(where / "work"), "common": str(where / "work" / ".git"),
                              "state_dir": str(where / "work" / "evil-state")}}
    for record in (kept, killed, absolute):
        _write(sessions / str(record["run_id"]) / "session.json", json.dumps(record))
    # a record under a folder name that is no run id, naming a real-looking run
    _write(sessions / "x" / "session.json", json.dumps({**kept, "run_id": "x"}))
    merge = evil / "evil-common" / "strawpot-worktrees" / "x.state" / "merge"
    _write(merge / "backup" / "0", HOOK, 0o755)
    for top in (".", str(where / "work")):
        _write(merge.parent.parent / f"{len(top)}.state" / "merge" / "journal.json", json.dumps(
            {"version": 1, "top": top, "state": "applying",
             "entries": [{"path": ".git/hooks/post-checkout", "kind": "file", "backup": "0", "mode": 0o755}]}))
        _write(merge.parent.parent / f"{len(top)}.state" / "merge" / "backup" / "0", HOOK, 0o755)
    guard = evil / "evil-state" / "guard"
    _write(guard / "hooks" / "pre-commit", HOOK, 0o755)
    _write(guard / "files" / "config", "[core]\n\tfsmonitor = touch PWNED\n")
    for name in ("config.worktree", "info/attributes", "info/exclude"):
        _write(guard / "files" / f"{name}.absent", "")
    git(evil, "add", "-f", "-A")
    git(evil, "commit", "-q", "-m", "a project")
    return evil


def test_forged_run_records_in_a_cloned_repository_make_prune_touch_nothing(tmp_path: Path) -> None:
    evil = hostile_repository(tmp_path)
    work = tmp_path / "work"
    git(tmp_path, "clone", "-q", str(evil), str(work))
    git(work, "branch", "feature")
    for sibling in ("victim", "victim2"):
        _write(tmp_path / sibling / "precious.txt", "my own files\n")
    home = tmp_path / "home"
    home.mkdir()
    git_dir = tree_of(work / ".git")
    outside = {name: tree_of(tmp_path / name) for name in ("victim", "victim2", "upstream")}
    for flags in ((), ("--force",), ("--dry-run",)):
        proc = run(work, "sessions", "--prune", *flags, env={"HOME": str(home)})
        assert proc.returncode == 0, proc.stderr
        assert "Traceback" not in proc.stderr and "no leftover worktrees" in proc.stderr
    assert {name: tree_of(tmp_path / name) for name in ("victim", "victim2", "upstream")} == outside
    assert tree_of(work / ".git") == git_dir  # no hook, no config, no ref written or deleted
    assert sorted(branches(work)) == ["feature", "main"]
    git(work, "commit", "-q", "--allow-empty", "-m", "after the prune")  # the hooks that run are the user's
    git(work, "checkout", "-q", "feature")
    assert not (home / "PWNED").exists() and not (work / "PWNED").exists()


def test_a_journal_in_the_real_git_folder_that_names_another_tree_or_a_git_path_is_left_alone(tmp_path: Path) -> None:
    from orchestrator.leftovers import recover

    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    _write(root / "a.txt", "a\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "first")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / "out").symlink_to(elsewhere, target_is_directory=True)  # a link in the tree, out of it
    state = root / ".git" / "strawpot-worktrees"
    for name, top, path in (("other.state", str(elsewhere), "planted.sh"), ("git.state", str(root), ".git/hooks/pre-push"),
                            ("up.state", str(root), "../planted.sh"), ("link.state", str(root), "out/planted.sh")):
        _write(state / name / "merge" / "journal.json", json.dumps(
            {"version": 1, "top": top, "state": "applying",
             "entries": [{"path": path, "kind": "file", "backup": "0", "mode": 0o755}]}))
        _write(state / name / "merge" / "backup" / "0", HOOK, 0o755)
    before = tree_of(tmp_path)
    assert recover(root) == []
    after = {name: what for name, what in tree_of(tmp_path).items() if not name.endswith("/merge.lock")}
    assert after == before  # nothing restored, and the journals are still there


# -- real runs ---------------------------------------------------------------------------------------------------


@pytest.fixture
def repo(project):  # type: ignore[no-untyped-def]
    """The project as a git repository: README.md committed, .strawpot/ ignored."""
    project.build()
    return a_git_project(project.root)


def failed_run(root: Path, task: str) -> dict:  # type: ignore[type-arg]
    proc = run(root, "start", "--headless", "--isolation", "worktree", "--task", task)
    assert proc.returncode != 0 and "worktree is kept at" in proc.stderr, proc.stderr
    listed = json.loads(run(root, "sessions", "--json").stdout)["sessions"]
    return listed[0]  # type: ignore[no-any-return]


def on_a_terminal(root: Path, answer: bytes) -> tuple[int, str]:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 250, 0, 0))
    proc = subprocess.Popen([*STRAWPOT, "sessions", "--prune"], cwd=root, stdin=slave, stdout=slave, stderr=slave,
                            env={**os.environ, **IDENTITY, "TERM": "dumb", "NO_COLOR": "1"})
    os.close(slave)
    try:
        transcript = talk(master, proc, {b"Delete them? [y/N]": answer})
        return proc.wait(timeout=60), transcript
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()


def test_unmerged_work_is_listed_asked_about_on_a_terminal_and_refused_elsewhere_without_force(repo: Path) -> None:
    record = failed_run(repo, "write:half.txt=half done then fail:4")
    run_id, path = record["run_id"], Path(record["isolation"]["path"])
    branch = f"strawpot/{run_id}"

    dry = run(repo, "sessions", "--prune", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert f"would remove {run_id}: worktree {path} and branch {branch} (unmerged work: 1 changed file)" in dry.stderr
    assert path.is_dir() and branch in branches(repo)

    refused = run(repo, "sessions", "--prune")
    assert refused.returncode == 2, refused.stderr
    assert f"kept 1 leftover holding unmerged work: {run_id}" in refused.stderr and "--force" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert path.is_dir() and branch in branches(repo)

    code, transcript = on_a_terminal(repo, b"n\n")
    assert code == 0, transcript
    assert f"{run_id}: worktree {path} and branch {branch} (unmerged work: 1 changed file)" in transcript
    assert path.is_dir() and branch in branches(repo)

    code, transcript = on_a_terminal(repo, b"y\n")
    assert code == 0, transcript
    assert not path.exists() and branches(repo) == ["main"] and worktrees(repo) == [str(repo)]
    assert json.loads(run(repo, "sessions", "--json").stdout)["sessions"][0]["isolation"]["state"] == "removed"


def test_force_prunes_unmerged_work_and_a_leftover_without_work_goes_unasked(repo: Path) -> None:
    empty = failed_run(repo, "fail:1")
    worked = failed_run(repo, "write:x.txt=x then fail:1")
    pruned = run(repo, "sessions", "--prune")  # no terminal: the one without work goes, the other stays
    assert pruned.returncode == 2, pruned.stderr
    assert f"removed {empty['run_id']}" in pruned.stderr and f"kept 1 leftover holding unmerged work: " \
        f"{worked['run_id']}" in pruned.stderr
    assert branches(repo) == ["main", f"strawpot/{worked['run_id']}"]
    forced = run(repo, "sessions", "--prune", "--force", "--json")
    assert forced.returncode == 0, forced.stderr
    assert [r["run_id"] for r in json.loads(forced.stdout)["pruned"]] == [worked["run_id"]]
    assert branches(repo) == ["main"] and worktrees(repo) == [str(repo)]


def test_a_worktree_replaced_by_a_link_is_left_alone(repo: Path, tmp_path: Path) -> None:
    record = failed_run(repo, "write:x.txt=x then fail:1")
    path = Path(record["isolation"]["path"])
    victim = tmp_path / "victim"
    _write(victim / "precious.txt", "mine\n")
    os.rename(path, tmp_path / "moved-away")
    path.symlink_to(victim, target_is_directory=True)
    proc = run(repo, "sessions", "--prune", "--force")
    assert proc.returncode == 0, proc.stderr
    assert f"left alone: {record['run_id']}: {path} is not a folder of yours" in proc.stderr
    assert (victim / "precious.txt").read_text() == "mine\n" and path.is_symlink()


def test_a_forged_records_text_reaches_the_terminal_inert(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    run_id = "run_20260101_000000_dddddd"
    _write(root / "strawpot.toml", "")
    _write(root / ".strawpot" / "sessions" / run_id / "session.json", json.dumps({
        "run_id": run_id, "state": "failed", "role": "[bold red]lead[/]\x1b]0;title\x07\x1b[2J", "started_at": 1.0,
        "isolation": {"kind": "worktree", "state": "kept", "branch": "strawpot/x\x1b[31m"},
        "agents": [{"agent_id": "a\x1b[1m", "role": "r", "agent": "x", "state": "failed"}]}))
    listed = run(root, "sessions")
    shown = run(root, "sessions", "show", run_id)
    for proc in (listed, shown):
        assert proc.returncode == 0, proc.stderr
        assert "\x1b" not in proc.stdout and "\x07" not in proc.stdout
    assert "[bold red]lead[/]" in listed.stdout  # shown as written, not taken as markup
    # a forged state is no state: the record is refused in one line, its text inert there too
    record_file = root / ".strawpot" / "sessions" / run_id / "session.json"
    record_file.write_text(record_file.read_text().replace('"state": "failed"', '"state": "failed\\u001b]0;x\\u0007"', 1))
    refused = run(root, "sessions", "show", run_id)
    assert refused.returncode == 2 and "is unreadable: the run: state 'failed\\x1b]0;x\\x07'" in refused.stderr
    assert "\x1b" not in refused.stderr and "\x07" not in refused.stderr
