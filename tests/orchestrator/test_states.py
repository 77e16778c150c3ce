"""Run and agent states are `State` members: no raw state string is compared or recorded outside the enum."""

from __future__ import annotations

import ast
import inspect
import json
import re
from pathlib import Path

import pytest

from orchestrator.session import AgentRecord, Session, State, exit_code_for

ROOT = Path(__file__).resolve().parents[2]
STATES = "|".join(s.value for s in State)
LITERAL = re.compile(rf"""["'](?:{STATES})["'](?!\s*:)""")  # a quoted state, not a JSON key such as "cancelled":


def test_no_state_literal_outside_the_enum() -> None:
    found = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
             for folder in ("orchestrator", "strawpot/commands") for path in sorted((ROOT / folder).rglob("*.py"))
             if "_proto" not in path.parts and path.name != "run_record.py"
             for n, line in enumerate(path.read_text().splitlines(), 1) if LITERAL.search(line)]
    assert found == []


def test_state_text_in_session_json_is_unchanged() -> None:
    record = AgentRecord.from_dict({"agent_id": "a-1", "role": "r", "agent": "x", "parent": None, "depth": 0,
                                    "task": "t", "workspace": "/w", "state": "timed_out"})
    assert record.state is State.TIMED_OUT
    assert json.dumps({"state": State.INTERRUPTED}) == '{"state": "interrupted"}'


# What `Session` records of a run or an agent; only its typed methods (agent_started, agent_ended, finish,
# isolation_started, isolation_ended) set them.
RECORDED = {"state", "exit_code", "pid", "started_at", "ended_at", "error", "merge_result", "isolation"}


def state_assignments(source: str) -> list[str]:
    """Each assignment to a recorded field of a session or an agent record (`record.state = …`, `x.session.exit_code
    = …`, `self.agents[i].pid = …`)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AugAssign | ast.AnnAssign) else []
        for target in targets:
            for part in target.elts if isinstance(target, ast.Tuple) else [target]:
                if isinstance(part, ast.Attribute) and part.attr in RECORDED:
                    owner = ast.unparse(part.value)
                    if re.search(r"record|session|agents\[", owner):
                        found.append(f"{owner}.{part.attr}")
    return found


def test_states_change_only_through_the_sessions_typed_methods() -> None:
    found = [f"{path.relative_to(ROOT)}: {hit}"
             for folder in ("orchestrator", "strawpot/commands", "dashboard") for path in sorted((ROOT / folder).rglob("*.py"))
             if "_proto" not in path.parts and path.name != "session.py"
             for hit in state_assignments(path.read_text())]
    assert found == []
    assert state_assignments("live.record.ended_at = 1\nrecord.task, record.state = t, s") == [
        "live.record.ended_at", "record.state"]


def test_an_unknown_change_is_refused() -> None:
    methods = [m for name, m in vars(Session).items() if callable(m) and not name.startswith("_") and name != "event"]
    assert all(p.kind is not inspect.Parameter.VAR_KEYWORD
               for m in methods for p in inspect.signature(m).parameters.values()), "an untyped **changes updater"
    session = Session(run_id="run_x", directory=Path("/nonexistent"), role="r", task="t")
    with pytest.raises(TypeError):
        session.agent_ended("a-1", State.FAILED, 1, colour="red")  # type: ignore[call-arg]
    with pytest.raises(ValueError):
        AgentRecord.from_dict({"agent_id": "a-1", "role": "r", "agent": "x", "parent": None, "depth": 0,
                               "task": "t", "workspace": "/w", "state": "finished"})


def test_mypy_refuses_an_unknown_change_or_a_raw_state() -> None:
    import subprocess
    import sys

    program = ("from pathlib import Path\nfrom orchestrator.session import Session, State\n"
               "s = Session(run_id='r', directory=Path('/x'), role='r', task='t')\n"
               "s.agent_ended('a', State.FAILED, 1, colour='red')\ns.agent_ended('a', 'failed', 1)\n"
               "s.finish(State.SUCCEEDED, 0)\n")
    checked = subprocess.run([sys.executable, "-m", "mypy", "--config-file", "/dev/null", "--strict", "--no-incremental",
                              "--follow-imports=silent", "-c", program], cwd=ROOT, capture_output=True, text=True,
                             timeout=120, check=False)
    errors = [line for line in checked.stdout.splitlines() if ": error:" in line]
    assert [e.split(":")[1] for e in errors] == ["4", "5"], checked.stdout
    assert '"colour"' in errors[0] and 'expected "State"' in errors[1]


@pytest.mark.parametrize(("state", "code", "recorded"), [
    ("cancelled", -15, 130), ("cancelled", -9, 130), ("cancelled", None, 130), ("interrupted", 130, 130),
    ("failed", -9, 137), ("failed", 3, 3), ("succeeded", 0, 0), ("timed_out", None, None),
])
def test_one_exit_code_convention_for_ended_runs(state: str, code: int | None, recorded: int | None) -> None:
    assert exit_code_for(state, code) == recorded
