"""The memory provider: SQLite + FTS5, scopes, the jsonl migration, two writers at once, failures, the CLI, and
the memory prompt a later session's agent is given. Real SQLite, real subprocesses, real gRPC."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from orchestrator.memory import MemoryFailure
from orchestrator.memory_providers import GuardedMemory, load_provider
from orchestrator.memory_sqlite import SqliteMemory
from tests._cli import strawpot, strawpot_here


@pytest.fixture(autouse=True)
def _own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STRAWPOT_HOME", str(tmp_path / "home"))  # global-scope entries stay in the test


def test_scopes_and_the_prompt_of_a_role(tmp_path: Path) -> None:
    store = SqliteMemory(tmp_path / "memory", tmp_path / "global")
    store.remember("the API lives in src/api", ["api"], "project")
    store.remember("reviewers want small diffs", [], "role", role="reviewer")
    store.remember("the user prefers British spelling", [], "global")
    prompt = store.get("run", "reviewer-1", "reviewer", "review the API change")
    assert "- [project] the API lives in src/api (keywords: api)" in prompt
    assert "- [role] reviewers want small diffs" in prompt and "- [global] the user prefers British spelling" in prompt
    assert "small diffs" not in store.get("run", "impl-1", "implementer", "write code")
    assert store.get("run", "x", "implementer", "anything").startswith("What was remembered")
    assert (tmp_path / "global" / "memory.db").is_file()
    assert SqliteMemory(tmp_path / "empty").get("run", "a", "r", "t") == ""


def test_files_are_private(tmp_path: Path) -> None:
    store = SqliteMemory(tmp_path / "memory")
    store.remember("x", [], "project")
    assert stat.S_IMODE((tmp_path / "memory").stat().st_mode) == 0o700
    for name in ("memory.db", "memory.db-wal", "memory.db-shm"):
        path = tmp_path / "memory" / name
        assert not path.exists() or stat.S_IMODE(path.stat().st_mode) == 0o600, name


def test_the_jsonl_of_an_older_version_is_migrated_once_losslessly(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    folder.mkdir()
    old = [{"id": "a1", "content": "deploys go through staging", "keywords": ["deploy"], "scope": "project",
            "created_at": 100.0},
           {"id": "b2", "content": "fridays are frozen", "keywords": ["deploy", "policy"], "scope": "team",
            "created_at": 200.0}]
    (folder / "memory.jsonl").write_text("".join(json.dumps(o) + "\n" for o in old) + '{"id": "torn", "cont')
    store = SqliteMemory(folder)
    entries = store.entries()
    assert [(e.entry_id, e.content, list(e.keywords), e.scope, e.created_at) for e in entries] == \
        [(o["id"], o["content"], o["keywords"], o["scope"], o["created_at"]) for o in reversed(old)]
    assert not (folder / "memory.jsonl").exists() and (folder / "memory.jsonl.migrated").is_file()
    (folder / "memory.jsonl").write_text(json.dumps(old[0]) + "\n")  # a stray file later is not imported again
    assert len(SqliteMemory(folder).entries()) == 2


def test_two_writers_at_once_both_land(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    code = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from orchestrator.memory_sqlite import SqliteMemory
        store = SqliteMemory(Path({str(folder)!r}))
        for i in range(40):
            store.remember(f"{{sys.argv[1]}} note {{i}}", [], "project")
    """)
    procs = [subprocess.Popen([sys.executable, "-c", code, name]) for name in ("alpha", "beta")]
    assert [p.wait(timeout=60) for p in procs] == [0, 0]
    store = SqliteMemory(folder)
    assert len(store.entries()) == 80
    assert len(store.recall("alpha", [], "", 100)) == 40


def test_sessions_creating_the_same_database_at_the_same_instant_all_succeed(tmp_path: Path) -> None:
    # each CREATE on its own failed at once (SQLITE_BUSY, no waiting) when another session wrote the schema
    # between its read and its write: about one writer in five failed this way before the fix
    code = textwrap.dedent("""
        import sys, time
        from pathlib import Path
        from orchestrator.memory_sqlite import SqliteMemory
        start = float(sys.argv[2])
        while time.time() < start:
            pass
        SqliteMemory(Path(sys.argv[1])).remember(f"note of {sys.argv[3]}", [], "project")
    """)
    for round_ in range(4):
        folder = tmp_path / f"memory-{round_}"
        start = time.time() + 0.5  # every process is up by then, and all open the database at once
        procs = [subprocess.Popen([sys.executable, "-c", code, str(folder), str(start), str(n)],
                                  stderr=subprocess.PIPE, text=True) for n in range(5)]
        errors = [p.communicate(timeout=60)[1] for p in procs]
        assert [p.returncode for p in procs] == [0] * 5, [err for err in errors if err]
        assert len(SqliteMemory(folder).entries()) == 5


def test_a_corrupt_database_is_a_clear_error(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    folder.mkdir(mode=0o700)
    (folder / "memory.db").write_bytes(b"this is not a database" * 100)
    with pytest.raises(MemoryFailure, match=r"memory database .*memory.db is unreadable .*move it away"):
        SqliteMemory(folder).recall("x", [], "", 5)
    root = tmp_path
    (root / "strawpot.toml").write_text("")
    (root / ".strawpot").mkdir()
    (folder).rename(root / ".strawpot" / "memory")
    proc = strawpot_here("memory", "list", cwd=root)
    assert proc.returncode == 1 and "is unreadable" in proc.stderr and "Traceback" not in proc.stderr


def _broken_entry_point(tmp_path: Path) -> Path:
    """A distribution on a path of its own whose `strawpot.memory` entry point raises on import."""
    site = tmp_path / "site"
    dist = site / "brokenmem-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: brokenmem\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[strawpot.memory]\nbroken = brokenmem:Provider\n")
    (site / "brokenmem.py").write_text("raise RuntimeError('no backend configured')\n")
    return site


def test_a_provider_that_raises_on_import_is_reported_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(_broken_entry_point(tmp_path)))
    with pytest.raises(MemoryFailure, match="memory provider 'broken' failed to load: RuntimeError: no backend"):
        load_provider("broken", tmp_path / "m")
    reports: list[str] = []
    guarded = GuardedMemory(lambda: load_provider("broken", tmp_path / "m"), reports.append)
    assert guarded.get("r", "a", "role", "t") == "" and guarded.recall("x", [], "", 3) == []
    assert guarded.remember("x", [], "project") == ""
    assert len(reports) == 1 and reports[0].endswith("this run goes on without memory")


def test_a_provider_that_raises_later_is_reported_once_and_the_run_goes_on(tmp_path: Path) -> None:
    class Flaky(SqliteMemory):
        def recall(self, *args, **kw):  # type: ignore[no-untyped-def]
            raise OSError("disk on fire")

    reports: list[str] = []
    guarded = GuardedMemory(lambda: Flaky(tmp_path / "m"), reports.append)
    assert guarded.remember("kept before the failure", [], "project")
    assert guarded.recall("x", [], "", 3) == [] and guarded.get("r", "a", "x", "t") == ""
    assert reports == ["memory provider failed in recall: OSError: disk on fire; this run goes on without memory"]


def test_the_memory_cli(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "strawpot.toml").write_text("")
    first = strawpot_here("memory", "remember", "tests run with pytest -q", "--keyword", "testing", cwd=root)
    assert first.returncode == 0, first.stderr
    entry_id = first.stdout.strip()
    assert strawpot_here("memory", "remember", "only for reviewers", "--scope", "role", "--role", "reviewer", cwd=root).returncode == 0
    found = json.loads(strawpot_here("memory", "recall", "pytest", "--json", cwd=root).stdout)["entries"]
    assert [e["id"] for e in found] == [entry_id] and found[0]["keywords"] == ["testing"]
    listed = strawpot_here("memory", "list", cwd=root).stdout.splitlines()
    assert len(listed) == 2 and "role:reviewer  only for reviewers" in listed[0]
    assert strawpot_here("memory", "forget", entry_id, cwd=root).returncode == 0
    again = strawpot_here("memory", "forget", entry_id, cwd=root)
    assert again.returncode == 2 and f"no memory entry {entry_id!r}" in again.stderr
    assert strawpot_here("memory", "remember", "x", "--scope", "role", cwd=root).returncode == 2


@pytest.mark.e2e
def test_what_one_session_remembers_is_in_the_next_sessions_memory_prompt(project) -> None:  # type: ignore[no-untyped-def]
    project.build()
    first = strawpot("start", "--headless", "--task", "remember:the build needs libfoo then remember@role:orchestrators plan first", cwd=project.root)
    assert first.returncode == 0, first.stderr
    second = strawpot("start", "--headless", "--task", "memory then delegate:implementer:memory", cwd=project.root)
    assert second.returncode == 0, second.stderr
    own, _, child = second.stdout.partition("What was remembered")[2].partition("What was remembered")
    assert "- [project] the build needs libfoo" in own and "- [role] orchestrators plan first" in own
    assert "- [project] the build needs libfoo" in child and "orchestrators plan first" not in child


@pytest.mark.e2e
def test_a_broken_provider_leaves_the_run_going_without_memory(project, tmp_path) -> None:  # type: ignore[no-untyped-def]
    project.build()
    env = {"STRAWPOT_MEMORY_PROVIDER": "broken",
           "PYTHONPATH": os.pathsep.join([str(_broken_entry_point(tmp_path)), os.environ.get("PYTHONPATH", "")])}
    proc = strawpot("start", "--headless", "--task", "remember:x then recall:x then echo:done", cwd=project.root, extra_env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "done"
    assert proc.stderr.count("memory provider 'broken' failed to load") == 1


def test_a_database_locked_too_long_by_another_session_is_a_clear_error(tmp_path: Path) -> None:
    import sqlite3

    store = SqliteMemory(tmp_path / "memory", busy_timeout=0.2)
    store.remember("before", [], "project")
    other = sqlite3.connect(tmp_path / "memory" / "memory.db", isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(MemoryFailure, match=r"stayed locked by another session for 0.2s"):
            store.remember("while locked", [], "project")
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert [e.content for e in store.entries()] == ["before"]
    store.remember("after", [], "project")
    assert len(store.entries()) == 2


@pytest.mark.e2e
def test_a_third_party_provider_from_an_entry_point_fills_the_memory_prompt(project, tmp_path) -> None:  # type: ignore[no-untyped-def]
    site = tmp_path / "site3"
    dist = site / "notesmem-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: notesmem\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[strawpot.memory]\nnotes = notesmem:Notes\n")
    (site / "notesmem.py").write_text(textwrap.dedent("""
        class Notes:
            def __init__(self, directory):
                self.directory = directory
            def get(self, session_id, agent_id, role, task):
                return f"notes for {role} about {task.split()[0]} from {self.directory.name}"
            def dump(self, session_id, agent_id, role, task, result):
                (self.directory.parent / "dumped.txt").write_text(result)
            def remember(self, content, keywords, scope, role=""):
                return "n1"
            def recall(self, query, keywords, scope, max_results, role=""):
                return []
            def forget(self, entry_id):
                return False
            def entries(self):
                return []
    """))
    project.build()
    env = {"STRAWPOT_MEMORY_PROVIDER": "notes",
           "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    proc = strawpot("start", "--headless", "--task", "memory then remember:x", cwd=project.root, extra_env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["notes for orchestrator about memory from memory", "remembered n1"]
    assert (project.state_dir / "dumped.txt").read_text() == proc.stdout.rstrip("\n")


# -- bounded prompts ------------------------------------------------------------------------------------------


def test_an_entry_over_the_limit_is_refused_at_remember_time(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "strawpot.toml").write_text("")
    proc = strawpot("memory", "remember", "x" * 120_000, cwd=root)  # 200 KB is over what one argument may hold
    assert proc.returncode == 2 and "a memory entry holds at most 8 KiB and this one is 117 KiB" in proc.stderr
    with pytest.raises(MemoryFailure, match="holds at most 8 KiB"):  # what `mcp serve` turns into the tool's error
        SqliteMemory(tmp_path / "memory").remember("y" * 9000, [], "global")
    assert strawpot_here("memory", "list", cwd=root).stdout == ""


@pytest.mark.e2e
def test_start_runs_with_a_megabyte_of_remembered_text_and_says_what_was_left_out(project) -> None:  # type: ignore[no-untyped-def]
    project.build()
    store = SqliteMemory(project.state_dir / "memory")
    for number in range(250):
        store.remember(f"fact {number}: " + "lorem ipsum " * 340, ["bulk"], "project")  # 4 KB each, 1 MB in all
    with store._db(store.path) as conn:  # two entries a database of an older version may hold: 100 KB each
        conn.execute("BEGIN IMMEDIATE")
        for name in ("a", "b"):
            store._insert(conn, f"big-{name}", "z" * 100_000, [], "project", "", 0.0)
        conn.execute("COMMIT")
    proc = strawpot("start", "--headless", "--task", "memory", cwd=project.root)
    assert proc.returncode == 0, proc.stderr[-2000:]
    prompt = proc.stdout.partition("What was remembered")[2]
    assert 8_000 < len(prompt.encode()) <= 16 * 1024
    assert "more remembered entries left out: the memory prompt is bounded by [memory] max_prompt_bytes" in prompt
    smaller = strawpot("start", "--headless", "--task", "memory", cwd=project.root, extra_env={"STRAWPOT_MEMORY_MAX_PROMPT_BYTES": "4096"})
    assert smaller.returncode == 0 and len(smaller.stdout.partition("What was remembered")[2].encode()) <= 4096


@pytest.mark.e2e
def test_a_role_prompt_too_large_for_one_argument_names_the_role(project) -> None:  # type: ignore[no-untyped-def]
    from tests.orchestrator.conftest import role_md, standard_roles

    project.roles = {**standard_roles(), "orchestrator": role_md("orchestrator", body="w" * 200_000)}
    project.build()
    proc = strawpot("start", "--headless", "--task", "echo:x", cwd=project.root)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "the prompt of role orchestrator" in proc.stderr and "is 195 KiB" in proc.stderr
    assert "Argument list too long" not in proc.stderr


# -- hostile stores and texts ---------------------------------------------------------------------------------


@pytest.mark.parametrize("linked", ["memory.db", "memory folder"])
def test_a_memory_store_that_is_a_symlink_is_refused_and_its_target_untouched(tmp_path: Path, linked: str) -> None:
    root = tmp_path / "proj"
    (root / ".strawpot").mkdir(parents=True)
    (root / "strawpot.toml").write_text("")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = elsewhere / "memory.db"
    target.write_bytes(b"")
    target.chmod(0o644)
    folder_mode = stat.S_IMODE(elsewhere.stat().st_mode)
    if linked == "memory.db":
        (root / ".strawpot" / "memory").mkdir()
        (root / ".strawpot" / "memory" / "memory.db").symlink_to(target)
    else:
        (root / ".strawpot" / "memory").symlink_to(elsewhere)
    for args in (("list",), ("remember", "x")):
        proc = strawpot_here("memory", *args, cwd=root)
        assert proc.returncode == 1 and "is a symlink; the memory store is only kept in a real folder" in proc.stderr
        assert "Traceback" not in proc.stderr
    assert target.read_bytes() == b"" and stat.S_IMODE(target.stat().st_mode) == 0o644
    assert sorted(os.listdir(elsewhere)) == ["memory.db"] and stat.S_IMODE(elsewhere.stat().st_mode) == folder_mode


def test_memory_list_and_recall_print_no_escape_sequence(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "strawpot.toml").write_text("")
    SqliteMemory(root / ".strawpot" / "memory").remember("title \x1b]0;pwned\x07 and \x1b[2J clear\r", ["k"],
                                                         "project")
    for args in (("list",), ("recall", "title")):
        out = strawpot_here("memory", *args, cwd=root).stdout
        assert "title  and  clear?" in out and "\x1b" not in out and "\x07" not in out
    assert "\x1b]0;pwned\x07" in json.loads(strawpot_here("memory", "list", "--json", cwd=root).stdout)["entries"][0]["content"]
