"""The run page's summary, trace timeline and produced files, over hand-made run folders (hostile ones included)."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from dashboard.app import create_app, home_path
from dashboard.security import COOKIE
from dashboard.timeline import MAX_MARKS, MAX_ROWS, TRACE_BYTES

SECRET = "run-page-secret"
SVG = "{http://www.w3.org/2000/svg}"
HOSTILE = "<script>alert(1)</script><img src=x onerror=alert(2)>"


def _agent(agent_id: str, parent: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"agent_id": agent_id, "role": "lead", "agent": "stub", "parent": parent, "state": "succeeded",
            "started_at": 100.0, "ended_at": 110.0, **extra}


def _run(project: Path, run_id: str = "run1", trace: list[Any] | bytes | None = None, **extra: Any) -> Path:
    folder = project / ".strawpot" / "sessions" / run_id
    folder.mkdir(parents=True)
    record = {"run_id": run_id, "role": "lead", "task": "t", "state": "succeeded", "started_at": 100.0,
              "ended_at": 120.0, "agents": [_agent("lead-1")], **extra}
    (folder / "session.json").write_text(json.dumps(record))
    if isinstance(trace, bytes):
        (folder / "trace.jsonl").write_bytes(trace)
    elif trace is not None:
        (folder / "trace.jsonl").write_text("".join(json.dumps(e) + "\n" for e in trace))
    return folder


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "strawpot.toml").write_text("")
    return root


def _page(project: Path, run_id: str = "run1", suffix: str = "") -> str:
    client = TestClient(create_app(project, SECRET, data_dir=project.parent / "data"), base_url="http://testserver")
    client.cookies.set(COOKIE, SECRET)
    response = client.get(f"{home_path(project)}runs/{run_id}{suffix}")
    assert response.status_code == 200, response.text
    return response.text


def _timeline(page: str) -> ET.Element:
    """The timeline's SVG, parsed as XML (so it is well-formed, whatever the text in it)."""
    found = re.search(r'<svg id="timeline".*?</svg>', page, re.S)
    assert found is not None, "no timeline drawn"
    return ET.fromstring(found.group(0))


def test_the_summary_shows_prominently_as_text(project: Path) -> None:
    _run(project, summary=f"All done.\n{HOSTILE}", task=f"do {HOSTILE}")
    page = _page(project)
    assert "<script>alert" not in page and "<img src=x" not in page
    assert ('<div id="summary" class="summary">All done.\n&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x '
            'onerror=alert(2)&gt;</div>') in page
    assert page.index('id="summary"') < page.index('id="agents"')  # above the agent tree
    assert '<p id="summary-none" class="dim" hidden>' in page


def test_a_run_without_a_summary_says_why(project: Path) -> None:
    _run(project, "ended")
    _run(project, "running", state="running", ended_at=None)
    assert "The run recorded no summary" in _page(project, "ended")
    live = _page(project, "running")
    assert "appears here when the run ends" in live and '<div id="summary" class="summary" hidden>' in live


def test_the_timeline_draws_a_bar_per_started_agent_and_a_mark_per_event(project: Path) -> None:
    agents = [_agent("lead-1"), _agent("impl-2", "lead-1", started_at=104.0, ended_at=108.0, state="failed"),
              _agent("never-3", "lead-1", started_at=None, ended_at=None, state="staged")]
    trace = [{"ts": 100.0, "event": "run_started", "role": "lead", "task": "t"},
             {"ts": 103.0, "event": "delegate", "caller": "lead-1", "role": "impl", "task": HOSTILE},
             {"ts": 107.0, "event": "ask_user", "caller": "impl-2", "question": "which one?"},
             {"event": "no_time"},
             {"ts": 120.0, "event": "run_finished", "state": "succeeded"}]
    _run(project, agents=agents, trace=trace)
    page = _page(project)
    svg = _timeline(page)
    bars = svg.findall(f"{SVG}rect")
    assert [b.get("data-agent") for b in bars] == ["lead-1", "impl-2"]  # the one never started has no bar
    assert [b.get("class") for b in bars] == ["bar state-succeeded", "bar state-failed"]
    lead, impl = (float(b.get("x") or 0) for b in bars)
    assert impl > lead and float(bars[1].get("width") or 0) < float(bars[0].get("width") or 0)
    marks = svg.findall(f"{SVG}circle")
    assert [m.get("class") for m in marks] == ["mark mark-run", "mark mark-delegate", "mark mark-ask", "mark mark-run"]
    assert marks[2].get("cy") != marks[1].get("cy")  # each on its agent's row
    titles = [m.findtext(f"{SVG}title") for m in marks]
    assert titles[1] == f"+3.0s delegate: caller=lead-1, role=impl, task={HOSTILE}"  # as text, inert
    assert [t.text for t in svg.findall(f"{SVG}text")][5:] == ["run", "lead-1", "impl-2", "never-3"]
    assert "<script>alert" not in page


def test_thousands_of_agents_and_events_stay_bounded_and_say_so(project: Path) -> None:
    agents = [_agent("lead-0")] + [_agent(f"a-{i}", "lead-0") for i in range(1, 3000)]
    trace = [{"ts": 100.0 + i / 1000, "event": "agent_started", "agent_id": f"a-{i}"} for i in range(5000)]
    _run(project, agents=agents, trace=trace)
    page = _page(project, suffix="/after")
    svg = _timeline(page)
    assert len(svg.findall(f"{SVG}rect")) == MAX_ROWS and len(svg.findall(f"{SVG}circle")) == MAX_MARKS
    assert f"{3000 - MAX_ROWS} more agents not drawn: the timeline shows the first {MAX_ROWS} in tree order" in page
    assert f"{5000 - MAX_MARKS} more events not drawn: the timeline shows the first {MAX_MARKS}." in page
    assert len(page) < 300_000


@pytest.mark.parametrize(("trace", "said"), [
    (b'{"ts": 1, "event": "run_started"}\nnot json\n\xff\xfe\n[1, 2]\n{"ts": 2}\n' + b"[" * 100_000 + b"\n",
     '<p class="error" id="trace-bad">5 lines of trace.jsonl are not a trace event and left out.</p>'),
    (b'{"ts": 101, "event": "run_started"}\n' + b'{"ts": 102, "event": "warning", "message": "x"}\n' * 60_000,
     f'trace.jsonl is over {TRACE_BYTES // 2**20} MiB: only its first {TRACE_BYTES // 2**20} MiB are drawn.'),
])
def test_a_corrupt_or_huge_trace_does_not_break_the_page(project: Path, trace: bytes, said: str) -> None:
    _run(project, trace=trace)
    page = _page(project)
    assert said in page
    assert _timeline(page).findall(f"{SVG}circle")  # what could be read is still drawn


def test_a_trace_that_is_a_link_or_a_folder_is_not_read(project: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.jsonl"
    secret.write_text(json.dumps({"ts": 101, "event": "warning", "message": "the secret"}) + "\n")
    (_run(project, "linked") / "trace.jsonl").symlink_to(secret)
    (_run(project, "folder") / "trace.jsonl").mkdir()
    for run_id in ("linked", "folder"):
        page = _page(project, run_id)
        assert "trace.jsonl of this run cannot be read: " in page and "the secret" not in page
        assert '<svg id="timeline"' in page  # the agents' bars still are


def _files_section(page: str) -> str:
    return page[page.index("<h2>Files</h2>"):]


def test_the_files_a_worktree_merge_recorded_are_listed_and_malformed_entries_left_out(project: Path) -> None:
    files = [{"path": "README.md", "change": "modified", "back": True},
             {"path": f"src/{HOSTILE}.txt", "change": "added", "back": False},
             {"path": "gone.txt", "change": "deleted", "back": True},
             {"path": 7, "change": "added", "back": True}, {"path": "x", "change": "exploded", "back": True}, "nope"]
    isolation = {"kind": "worktree", "working_dir": "/w", "path": "/w", "branch": "strawpot/run1", "state": "merged",
                 "files": files, "files_total": 250}
    _run(project, isolation=isolation)
    section = _files_section(_page(project))
    rows = re.findall(r"<tr><td><code>(.*?)</code></td><td>(\w+)</td><td>(.*?)</td></tr>", section)
    assert rows == [("README.md", "modified", "brought back to your working tree"),
                    ("src/&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;.txt", "added",
                     "on branch <code>strawpot/run1</code>"),
                    ("gone.txt", "deleted", "brought back to your working tree")]
    assert "250 files changed; the first 3 are listed" in section


@pytest.mark.parametrize(("extra", "said"), [
    ({}, "Files the run produced: not known: the agents worked in the project folder itself"),
    ({"isolation": {"kind": "worktree", "path": "/w/k", "branch": "strawpot/run1", "state": "kept"}},
     "not recorded: the run&#39;s work was not merged back; it is in the kept worktree /w/k (`git -C /w/k status` shows it) on branch strawpot/run1."),
    ({"isolation": {"kind": "worktree", "path": "/w/k", "branch": "b", "state": "active"}, "state": "running"},
     "not known yet: the run is still working in its worktree"),
    ({"isolation": {"kind": "worktree", "path": "/w", "branch": "b", "state": "merged", "files": [],
                    "files_total": 0}}, '<p id="files">The run changed no file.</p>'),
])
def test_files_that_are_not_known_say_why(project: Path, extra: dict[str, Any], said: str) -> None:
    _run(project, **extra)
    assert said in _files_section(_page(project))


def test_the_after_fragment_is_the_page_s_timeline_and_files_and_404_for_no_run(project: Path) -> None:
    _run(project, trace=[{"ts": 101.0, "event": "run_started"}])
    fragment = _page(project, suffix="/after")
    assert fragment.startswith('<h2 id="timeline-title">Timeline</h2>') and "<h2>Files</h2>" in fragment
    assert "<html" not in fragment and fragment.strip() in _page(project)
    client = TestClient(create_app(project, SECRET, data_dir=project.parent / "data"), base_url="http://testserver")
    client.cookies.set(COOKIE, SECRET)
    assert client.get(f"{home_path(project)}runs/nope/after").status_code == 404


def test_thousands_of_agents_list_and_stream_a_bounded_page(project: Path) -> None:
    from dashboard.runs import MAX_LISTED, MAX_LOGS

    agents = [_agent("lead-0", state="running", ended_at=None)]
    agents += [_agent(f"a-{i}", "lead-0", workspace=str(project / "ws" / f"a-{i}")) for i in range(1, 2000)]
    agents[1999].update(state="running", ended_at=None)  # the last one listed in the record still runs
    for a in agents[1:]:
        Path(a["workspace"]).mkdir(parents=True)
        (Path(a["workspace"]) / "agent.log").write_text(f"log of {a['agent_id']}\n" + "x" * 4000)
    _run(project, agents=agents)
    page = _page(project)
    assert page.count('<tr data-agent="') == MAX_LISTED and page.count('<section data-agent="') == MAX_LOGS
    assert f"<span>{2000 - MAX_LISTED}</span> more agents not listed" in page
    assert f"The logs of <span>{2000 - MAX_LOGS}</span> more agents are not shown here" in page
    assert page.index('<section data-agent="lead-0">') < page.index('<section data-agent="a-1999">') \
        < page.index('<section data-agent="a-1">')  # those still running first
    assert len(page) < 2_000_000

    client = TestClient(create_app(project, SECRET, data_dir=project.parent / "data"), base_url="http://testserver")
    client.cookies.set(COOKIE, SECRET)
    folder = project / ".strawpot" / "sessions" / "run1"
    record = json.loads((folder / "session.json").read_text())
    record["state"] = "succeeded"  # so the stream ends after its first snapshot
    (folder / "session.json").write_text(json.dumps(record))
    with client.stream("GET", f"{home_path(project)}runs/run1/events") as response:
        event = json.loads(next(response.iter_lines()).removeprefix("data: "))
    assert (len(event["agents"]), len(event["logs"])) == (MAX_LISTED, MAX_LOGS)
    assert (event["agents_left_out"], event["logs_left_out"]) == (2000 - MAX_LISTED, 2000 - MAX_LOGS)


def test_times_out_of_any_range_do_not_break_the_page(project: Path) -> None:
    # JSON as Python writes it may hold NaN and Infinity; a number may be past any date
    agents = [_agent("lead-1", started_at=1e300, ended_at=float("inf")), _agent("impl-2", "lead-1", ended_at=float("nan"))]
    trace = b'{"ts": NaN, "event": "run_started"}\n{"ts": Infinity, "event": "delegate", "caller": "lead-1"}\n' \
            b'{"ts": -1e308, "event": "ask_user", "caller": "impl-2"}\n{"ts": 105, "event": "run_finished"}\n'
    folder = _run(project, agents=agents, trace=trace)
    record = json.loads((folder / "session.json").read_text())
    record["started_at"] = 1e300
    (folder / "session.json").write_text(json.dumps(record))
    page = _page(project)
    svg = _timeline(page)
    numbers = [v for e in svg.iter() for k, v in e.attrib.items() if k in ("x", "y", "width", "cx", "cy")]
    assert numbers and all(float(v) == float(v) and abs(float(v)) < 10_000 for v in numbers)  # finite, on the canvas
