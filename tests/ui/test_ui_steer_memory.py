"""`strawpot ui`'s memory page over a real SQLite memory store: browse by pages, search as `recall` does, forget."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from dashboard.app import create_app, home_path
from dashboard.memory_pages import PAGE_SIZE
from dashboard.security import COOKIE, csrf_token
from orchestrator.memory_providers import open_memory
from orchestrator.memory_sqlite import SqliteMemory
from orchestrator.projects import ProjectStore
from strawpot.commands.ui import project_settings
from strawpot.model.layout import Project
from tests._cli import strawpot_here

SECRET = "memory-secret"
BASE = "http://testserver"


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("STRAWPOT_HOME", str(tmp_path / "home"))  # global entries stay in the test
    monkeypatch.setenv("STRAWPOT_CONFIG_DIR", str(tmp_path / "config"))
    project = tmp_path / "proj"
    project.mkdir()
    (project / "strawpot.toml").write_text("")
    return project


def _store(root: Path) -> SqliteMemory:
    memory = open_memory("builtin", Project.at(root))
    assert isinstance(memory, SqliteMemory)
    return memory


def _client(root: Path) -> TestClient:
    """The UI as `strawpot ui` makes it in `root`: each project's settings read by the settings layer."""
    client = TestClient(create_app(root, SECRET, settings=project_settings), base_url=BASE, follow_redirects=False)
    client.cookies.set(COOKIE, SECRET)
    return client


def _m(root: Path) -> str:
    """The address of `root`'s memory page: `/p/KEY/memory`."""
    return home_path(root) + "memory"


def _forget(client: TestClient, root: Path, entry: str, back: str | None = None) -> object:
    return client.post(f"{_m(root)}/forget", data={"csrf": csrf_token(SECRET), "entry": entry,
                                                   "back": _m(root) if back is None else back},
                       headers={"origin": BASE})


def test_browse_pages_through_every_entry_newest_first(root: Path) -> None:
    store = _store(root)
    ids = [store.remember(f"note number {i}", [], "project") for i in range(PAGE_SIZE + 3)]
    store.remember("a note for every project", [], "global")
    client, memory = _client(root), _m(root)
    first = client.get(memory).text
    assert f"{PAGE_SIZE + 4} entries remembered." in first
    assert first.count(f'action="{memory}/forget"') == PAGE_SIZE
    assert "a note for every project" in first and f'href="{memory}?page=2"' in first
    second = client.get(f"{memory}?page=2").text
    assert second.count(f'action="{memory}/forget"') == 4 and f"entry-{ids[0]}" in second
    assert "next page" not in second and f'href="{memory}"' in second
    assert client.get(f"{memory}?page=zero").status_code == 200


def test_search_finds_what_strawpot_memory_recall_finds(root: Path) -> None:
    store = _store(root)
    store.remember("deploys go through the staging cluster", ["deploy"], "project")
    store.remember("tests run with pytest", ["testing"], "project")
    store.remember("kubernetes manifests live in deploy/", ["deploy", "k8s"], "project")
    recall = strawpot_here("memory", "recall", "deploy kubernetes", "--json", "--max", "50", cwd=root)
    assert recall.returncode == 0, recall.stderr
    expected = [e["id"] for e in json.loads(recall.stdout)["entries"]]
    page = _client(root).get(_m(root), params={"q": "deploy kubernetes"}).text
    shown = [line.split('"')[1].removeprefix("entry-") for line in page.split("<tr id=")[1:]]
    assert len(expected) == 2 and shown == expected
    assert "tests run with pytest" not in page and "2 entries match, best first." in page
    assert "0 entries match" in _client(root).get(_m(root), params={"q": '" OR *'}).text


def test_forget_removes_the_entry_and_returns_to_the_same_page(root: Path) -> None:
    store = _store(root)
    keep = store.remember("keep me", [], "project")
    drop = store.remember("forget me", [], "project")
    client = _client(root)
    response = _forget(client, root, drop, back=f"{_m(root)}?q=me")
    assert response.status_code == 303 and response.headers["location"] == f"{_m(root)}?q=me"  # type: ignore[attr-defined]
    assert [e.entry_id for e in store.entries()] == [keep]
    again = _forget(client, root, drop)
    assert (again.status_code, again.text) == (404, f"no memory entry {drop!r} (forgotten already?)")  # type: ignore[attr-defined]
    elsewhere = _forget(client, root, keep, back="//evil.test/memory")
    assert elsewhere.headers["location"] == _m(root)  # type: ignore[attr-defined]
    assert store.entries() == []


def test_entries_are_shown_inert(root: Path) -> None:
    _store(root).remember("<script>alert(1)</script> **bold** [x](javascript:alert(1))", ["<b>k</b>"], "project")
    page = _client(root).get(_m(root)).text
    assert "&lt;script&gt;alert(1)&lt;/script&gt; **bold**" in page and "<script>alert" not in page
    assert "&lt;b&gt;k&lt;/b&gt;" in page and 'href="javascript' not in page


def test_an_unreadable_memory_database_is_one_line_and_the_page_renders(root: Path) -> None:
    folder = root / ".strawpot" / "memory"
    folder.mkdir(parents=True)
    (folder / "memory.db").write_bytes(b"this is not a database" * 100)
    response = _client(root).get(_m(root))
    assert response.status_code == 200 and "is unreadable" in response.text and 'class="error"' in response.text
    assert _forget(_client(root), root, "x").status_code == 409  # type: ignore[attr-defined]


def test_each_project_s_page_uses_its_own_provider_read_when_served(root: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "strawpot.toml").write_text('[memory]\nprovider = "nosuch"\n')
    ProjectStore().record(other)
    _store(root).remember("only in the first project", [], "project")
    client = _client(root)
    first = client.get(_m(root)).text
    assert "only in the first project" in first and "1 entry remembered." in first
    broken = client.get(_m(other)).text
    assert "memory provider &#39;nosuch&#39;" in broken and 'class="error"' in broken
    assert "only in the first project" not in broken
    assert _forget(client, other, "x").status_code == 409  # type: ignore[attr-defined]
    # The same app, the file fixed: the next page load reads it (no launch-time copy of the setting).
    (other / "strawpot.toml").write_text('[memory]\nprovider = "builtin"\n')
    fixed = client.get(_m(other)).text
    assert "0 entries remembered." in fixed and 'class="error"' not in fixed
    (other / "strawpot.toml").write_text("[memory]\nprovider = 7\n")
    mistyped = client.get(_m(other))
    assert mistyped.status_code == 200 and "memory.provider" in mistyped.text and 'class="error"' in mistyped.text


def test_a_project_s_pages_link_its_runs_and_memory_in_the_header(root: Path) -> None:
    client, base = _client(root), home_path(root)
    for page in (base, _m(root)):
        text = client.get(page).text
        header = text.split("<header>")[1].split("</header>")[0]
        assert '<a href="/">Projects</a>' in header and '<a href="/schedules">Schedules</a>' in header
        assert f'<a href="{base}"' in header and f'<a href="{base}memory">Memory</a>' in header
    home = client.get("/").text.split("<header>")[1].split("</header>")[0]
    assert "Memory" not in home and "Schedules" in home
