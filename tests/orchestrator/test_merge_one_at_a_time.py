"""Two runs that end together merge into the user's tree one after the other (the fan-out of a scheduler)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from orchestrator import tree_apply
from orchestrator.isolation import Merged
from orchestrator.worktree import WorktreeIsolator
from tests.orchestrator._merge_scenario import IDENTITY, a_git_project

RUNS = ("run_20260101_000000_aaaaaa", "run_20260101_000000_bbbbbb")


def test_a_merge_back_waits_for_the_one_going_on_and_both_land(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in IDENTITY.items():
        monkeypatch.setenv(key, value)
    (tmp_path / "repo").mkdir()
    root = a_git_project(tmp_path / "repo")
    isolator = WorktreeIsolator()
    envs = [isolator.create(run, root) for run in RUNS]
    for env, name in zip(envs, ("a", "b"), strict=True):
        (Path(env.info["path"]) / f"{name}.txt").write_text(f"from run {name}\n")
    paused, go = threading.Event(), threading.Event()
    steps: dict[str, list[str]] = {"a": [], "b": []}

    def checkpoint(step: str) -> None:
        me = threading.current_thread().name
        steps[me].append(step)
        if me == "a" and step.startswith("stage"):  # run a is half-way through writing the user's tree
            paused.set()
            go.wait(20)

    monkeypatch.setattr(tree_apply, "checkpoint", checkpoint)
    merged: dict[str, Merged] = {}
    threads = [threading.Thread(target=lambda e=env, n=name: merged.__setitem__(n, isolator.merge(e, root)),
                                name=name) for env, name in zip(envs, ("a", "b"), strict=True)]
    threads[0].start()
    assert paused.wait(20)
    threads[1].start()
    threads[1].join(2)
    assert steps["b"] == [] and threads[1].is_alive()  # b waits for a's merge to end before it looks at the tree
    go.set()
    for thread in threads:
        thread.join(20)
    assert [(merged[n].keep, merged[n].error) for n in ("a", "b")] == [(False, None), (False, None)]
    assert (root / "a.txt").read_text() == "from run a\n" and (root / "b.txt").read_text() == "from run b\n"
    assert not list(root.glob(".strawpot-new-*"))
