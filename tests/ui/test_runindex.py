"""The runs list's fast path (order from run ids, rows cached by mtime) answers what reading every run would."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

from dashboard.runindex import PAGE_SIZE, RunIndex
from orchestrator import questions
from orchestrator.run_record import list_runs


def _write(root: Path, run_id: str, started: float, state: str) -> None:
    (root / run_id).mkdir(parents=True, exist_ok=True)
    (root / run_id / "session.json").write_text(json.dumps(
        {"run_id": run_id, "role": "lead", "state": state, "started_at": started, "agents": [{"agent_id": "a"}, {"agent_id": "b"}]}))


def _slow(root: Path) -> list[tuple[str, str]]:
    return [(r.run_id, str(r.state)) for r in list_runs(root)]


def _fast(index: RunIndex, root: Path) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    page = 0
    while True:
        shown, total = index.page(root, page)
        rows += [(r.run_id, r.state) for r in shown]
        if (page + 1) * PAGE_SIZE >= total:
            return rows
        page += 1


def test_the_paged_cached_list_matches_reading_every_session(tmp_path: Path) -> None:
    rng = random.Random(7)
    root = tmp_path / "sessions"
    starts = rng.sample(range(1_700_000_000, 1_700_900_000), 130)
    for i, started in enumerate(starts):
        if i % 10 == 0:  # a folder named otherwise (made by hand, or an older version)
            run_id = f"legacy-{i}"
        else:
            run_id = time.strftime("run_%Y%m%d_%H%M%S_", time.gmtime(started)) + f"{i:06x}"
        _write(root, run_id, started + 0.5, rng.choice(["running", "succeeded", "failed"]))
    index = RunIndex()
    assert _fast(index, root) == _slow(root)

    # Runs change state, new ones start, one is removed: the cache follows the folders.
    changed = _slow(root)[3][0]
    _write(root, changed, json.loads((root / changed / "session.json").read_text())["started_at"], "cancelled")
    newest = 1_800_000_000
    _write(root, time.strftime("run_%Y%m%d_%H%M%S_ffffff", time.gmtime(newest)), newest + 0.5, "running")
    gone = _slow(root)[60][0]
    (root / gone / "session.json").unlink()
    (root / gone).rmdir()
    assert _fast(index, root) == _slow(root)


def test_a_running_runs_open_questions_are_counted_afresh_and_an_ended_runs_not_at_all(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    for i, state in enumerate(["running", "succeeded"]):
        _write(root, f"run_20260105_09000{i}_00000{i}", 1.7e9 + i, state)
    running, ended = root / "run_20260105_090000_000000", root / "run_20260105_090001_000001"
    index = RunIndex()

    def counted() -> dict[str, int]:
        return {r.run_id: r.open_questions for r in index.page(root, 0)[0]}

    assert counted() == {running.name: 0, ended.name: 0}
    for run_dir in (running, ended):  # an ended run's open question (its run was killed) waits for nobody
        questions.post(run_dir, "lead-1", "Which colour?", [], "blue", "")
        questions.post(run_dir, "lead-1", "Which size?", [], "", "")
    assert counted() == {running.name: 2, ended.name: 0}  # session.json did not change: counted anyway
    questions.answer(running, "1", "green", "ui")
    assert counted()[running.name] == 1
    questions.settle(running, "2", None, "ended")
    assert counted()[running.name] == 0
