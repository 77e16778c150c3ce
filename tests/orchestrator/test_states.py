"""Run and agent states are `State` members: no raw state string is compared or recorded outside the enum."""

from __future__ import annotations

import json
import re
from pathlib import Path

from orchestrator.session import AgentRecord, State

ROOT = Path(__file__).resolve().parents[2]
STATES = "|".join(s.value for s in State)
LITERAL = re.compile(rf"""["'](?:{STATES})["'](?!\s*:)""")  # a quoted state, not a JSON key such as "cancelled":


def test_no_state_literal_outside_the_enum() -> None:
    found = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
             for folder in ("orchestrator", "strawpot/commands") for path in sorted((ROOT / folder).rglob("*.py"))
             if "_proto" not in path.parts and path.name != "session.py"
             for n, line in enumerate(path.read_text().splitlines(), 1) if LITERAL.search(line)]
    assert found == []


def test_state_text_in_session_json_is_unchanged() -> None:
    record = AgentRecord.from_dict({"agent_id": "a-1", "role": "r", "agent": "x", "parent": None, "depth": 0,
                                    "task": "t", "workspace": "/w", "state": "timed_out"})
    assert record.state is State.TIMED_OUT
    assert json.dumps({"state": State.INTERRUPTED}) == '{"state": "interrupted"}'
