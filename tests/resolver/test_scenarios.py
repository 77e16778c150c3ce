"""Declarative solver scenarios (``scenarios/*.json``): the pub solver.md examples and our rules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from resolver import Dependency, NoSolution, OfflineProvider, Version, VersionSolver, explain

SCENARIOS = sorted((Path(__file__).parent / "scenarios").glob("*.json"))


def run(scenario: dict[str, Any]) -> tuple[dict[str, str] | None, str | None, int]:
    provider = OfflineProvider.from_scenario(scenario)
    root = {name: Dependency.parse(name, spec) for name, spec in scenario["root"].items()}
    locked = {name: Version.parse(v) for name, v in scenario.get("locked", {}).items()}
    solver = VersionSolver(provider, root, locked=locked)
    try:
        solution = solver.solve()
    except NoSolution as exc:
        return None, explain(exc), solver.attempted_solutions
    return {name: str(v) for name, v in solution.items()}, None, solver.attempted_solutions


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_scenario(path: Path) -> None:
    scenario = json.loads(path.read_text())
    solution, error, attempts = run(scenario)
    expect = scenario["expect"]
    if "error" in expect:
        assert solution is None, f"expected a failure, got {solution}"
        assert error == "\n".join(expect["error"])
    else:
        assert error is None, error
        assert solution == expect["solution"]
    if "attempts" in expect:
        assert attempts == expect["attempts"]


def test_there_are_scenarios() -> None:
    assert len(SCENARIOS) >= 15
