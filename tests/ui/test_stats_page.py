"""A project's stats page: runs per day, success rate and median duration, as SVG and as a table, from its records."""

from __future__ import annotations

import json
import re
import time
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from dashboard.app import create_app, home_path
from dashboard.security import COOKIE

SECRET = "stats-secret"
SVG = "{http://www.w3.org/2000/svg}"
NOW = datetime(2026, 6, 30, 18, 0, tzinfo=UTC)


def _noon(days_ago: int) -> float:
    """Local noon `days_ago` days before NOW's local date (the page counts days in local time, as it shows them)."""
    day = NOW.astimezone().date() - timedelta(days=days_ago)
    return datetime(day.year, day.month, day.day, 12).timestamp()


def _run(project: Path, started: float, state: str, took: float | None = None, name: str = "",
         raw: str | None = None) -> None:
    run_id = name or time.strftime("run_%Y%m%d_%H%M%S_", time.gmtime(started)) + f"{int(started * 7) % 0xFFFFFF:06x}"
    folder = project / ".strawpot" / "sessions" / run_id
    folder.mkdir(parents=True)
    record: dict[str, Any] = {"run_id": run_id, "role": "<b>lead</b>", "task": "t", "state": state,
                              "started_at": started, "ended_at": None if took is None else started + took,
                              "agents": []}
    (folder / "session.json").write_text(raw if raw is not None else json.dumps(record))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "strawpot.toml").write_text("")
    return root


def _stats(project: Path) -> str:
    app = create_app(project, SECRET, data_dir=project.parent / "data", now=lambda: NOW)
    client = TestClient(app, base_url="http://testserver")
    client.cookies.set(COOKIE, SECRET)
    response = client.get(f"{home_path(project)}stats")
    assert response.status_code == 200, response.text
    return response.text


def _svg(page: str, svg_id: str) -> ET.Element:
    found = re.search(rf'<svg id="{svg_id}".*?</svg>', page, re.S)
    assert found is not None, f"no {svg_id}"
    return ET.fromstring(found.group(0))


def test_runs_per_day_success_rate_and_median_duration(project: Path) -> None:
    for offset, (state, took) in enumerate([("succeeded", 10.0), ("succeeded", 30.0), ("failed", 20.0)]):
        _run(project, _noon(2) + offset, state, took)
    _run(project, _noon(5), "succeeded", 60.0)
    _run(project, _noon(5) + 1, "timed_out", 40.0, name="a-folder-named-otherwise")  # read to learn its day
    _run(project, _noon(0), "running")
    _run(project, _noon(40), "succeeded", 5.0)  # before the window: not counted
    _run(project, _noon(1), "failed", raw='{"run_id": "x", "agents": [')  # unreadable: skipped, said
    _run(project, _noon(45), "failed", raw="not read at all: its id names a day before the window")
    page = _stats(project)

    bars = _svg(page, "runs-chart").findall(f".//{SVG}rect[@class='day-bar']")
    assert len(bars) == 3  # one per day with runs
    assert sorted(float(b.get("height") or 0) for b in bars) == [40.0, 80.0, 120.0]  # 1, 2 and 3 runs
    assert [t.text for t in _svg(page, "runs-chart").findall(f".//{SVG}rect[@class='day-ok']/{SVG}title")] == [
        f"{(NOW.astimezone().date() - timedelta(days=d)).isoformat()}: {runs} runs, {ok} succeeded, {no} did not"
        for d, runs, ok, no in ((5, 2, 1, 1), (2, 3, 2, 1))]
    dots = _svg(page, "median-chart").findall(f"{SVG}circle")
    assert [d.findtext(f"{SVG}title", "").split(": ")[1] for d in dots] == ["median 50.0s", "median 20.0s"]
    assert _svg(page, "rate-chart").find(f"{SVG}rect[@class='rate-ok']").get("width") == "180.0"  # type: ignore[union-attr]

    assert '<p id="totals">6 runs, 5 ended, 3 succeeded.' in page
    assert '<b id="success-rate">60%</b>' in page and '<b id="median">30.0s</b>' in page
    assert "1 run record could not be read and is not counted" in page
    rows = re.findall(r"<tr><td>([\d-]+)</td><td>(\d+)</td><td>(\d+)</td><td>(\d+)</td><td>(.*?)</td></tr>", page)
    assert [r[1:] for r in rows] == [("1", "0", "0", "-"), ("3", "2", "1", "20.0s"), ("2", "1", "1", "50.0s")]
    assert "<b>lead</b>" not in page


def test_a_project_without_runs_says_so(project: Path) -> None:
    page = _stats(project)
    assert "No run in the last 30 days." in page and '<b id="success-rate">-</b>' in page
    assert not _svg(page, "runs-chart").findall(f".//{SVG}rect") and "no ended run" in page
    assert "could not be read" not in page


def test_the_project_pages_link_to_it(project: Path) -> None:
    app = create_app(project, SECRET, data_dir=project.parent / "data", now=lambda: NOW)
    client = TestClient(app, base_url="http://testserver")
    client.cookies.set(COOKIE, SECRET)
    assert f'<a href="{home_path(project)}stats">Stats</a>' in client.get(home_path(project)).text


def test_times_out_of_any_range_are_not_counted_and_do_not_break_the_page(project: Path) -> None:
    _run(project, _noon(1), "succeeded", 10.0)
    for i, (started, ended) in enumerate([(1e300, None), (float("inf"), None), (_noon(2), float("nan")),
                                          (_noon(3), float("inf")), (-1e300, None)]):
        folder = project / ".strawpot" / "sessions" / f"odd-{i}"
        folder.mkdir()
        (folder / "session.json").write_text(json.dumps({"run_id": f"odd-{i}", "role": "r", "state": "failed",
                                                         "started_at": started, "ended_at": ended, "agents": []}))
    page = _stats(project)
    assert '<p id="totals">3 runs, 3 ended, 1 succeeded.' in page and '<b id="median">10.0s</b>' in page
