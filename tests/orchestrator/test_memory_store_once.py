"""The built-in memory stores each note once: the same text twice is one entry, and where the project's store is
the global one (a project in the folder whose .strawpot is $STRAWPOT_HOME) nothing is listed twice and no
project note leaks into the global memory every other project reads."""

from __future__ import annotations

from pathlib import Path

from orchestrator.memory_sqlite import SqliteMemory


def test_the_same_text_in_the_same_scope_and_role_is_stored_once(tmp_path: Path) -> None:
    store = SqliteMemory(tmp_path / "memory", tmp_path / "global")
    first = store.remember("tests run with pytest -q", ["testing"], "project")
    again = store.remember("tests run with pytest -q", ["pytest"], "project")
    assert again == first
    [entry] = store.entries()
    assert entry.entry_id == first and entry.keywords == ("testing", "pytest")  # the new keyword is kept too
    assert [e.entry_id for e in store.recall("pytest", [], "", 5)] == [first]
    # another scope or another role is another note
    role_a = store.remember("tests run with pytest -q", [], "role", role="reviewer")
    role_b = store.remember("tests run with pytest -q", [], "role", role="implementer")
    global_ = store.remember("tests run with pytest -q", [], "global")
    assert len({first, role_a, role_b, global_}) == 4 and len(store.entries()) == 4
    assert store.remember("tests run with pytest -q", [], "global") == global_
    assert store.remember("tests run with pytest -q", [], "role", role="reviewer") == role_a
    assert len(store.entries()) == 4


def test_one_folder_for_both_stores_lists_each_entry_once(tmp_path: Path) -> None:
    same = tmp_path / "home" / "memory"
    store = SqliteMemory(same, same)  # the home folder's project: its .strawpot is $STRAWPOT_HOME
    ids = {store.remember("a project note", [], "project"), store.remember("a global note", [], "global"),
           store.remember("a role note", [], "role", role="reviewer")}
    assert sorted(e.entry_id for e in store.entries()) == sorted(ids)
    assert [e.content for e in store.recall("note", [], "project", 10)] == ["a project note"]
    assert [e.content for e in store.recall("note", [], "global", 10)] == ["a global note"]
    prompt = store.get("run", "reviewer-1", "reviewer", "anything")
    assert prompt.count("a project note") == 1 and prompt.count("a global note") == 1
    gone = next(iter(ids))
    assert store.forget(gone) and not store.forget(gone)


def test_project_notes_of_the_global_store_do_not_reach_other_projects(tmp_path: Path) -> None:
    global_dir = tmp_path / "home" / "memory"
    home_project = SqliteMemory(global_dir, global_dir)
    home_project.remember("only for the home folder's project", [], "project")
    home_project.remember("reviewers of the home project want tests", [], "role", role="reviewer")
    home_project.remember("the user prefers British spelling", [], "global")
    other = SqliteMemory(tmp_path / "elsewhere" / ".strawpot" / "memory", global_dir)
    assert [e.content for e in other.entries()] == ["the user prefers British spelling"]
    assert other.recall("home project", [], "", 10) == []
    prompt = other.get("run", "reviewer-1", "reviewer", "home project")
    assert "British spelling" in prompt and "home" not in prompt
