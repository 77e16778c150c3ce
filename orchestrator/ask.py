"""ask_user: answer an agent's question from the terminal, or headless from its default.

Headless fallback, in order: the question's `default_value`; else its first choice; else an
`ERR_NO_USER` error telling the agent to decide for itself. A JSON `response_format` turns the
answer into an object: the answer parsed as a JSON object, or `{"answer": <text>}` when it is not one.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from typing import Any

from orchestrator.outcome import ERR_NO_USER, Outcome

Prompt = Callable[[str], str]


class Asker:
    """Asks one question at a time; `prompt` is None when no human is attached (headless)."""

    def __init__(self, prompt: Prompt | None, *, write: Callable[[str], None] | None = None) -> None:
        self.prompt = prompt
        self.write = write or (lambda text: None)
        self._lock = threading.Lock()

    def ask(
        self, agent_id: str, question: str, choices: Sequence[str], default: str, why: str, want_json: bool
    ) -> Outcome:
        if self.prompt is None:
            answer = default or (choices[0] if choices else None)
            if answer is None:
                return Outcome.error(
                    ERR_NO_USER,
                    "no user is attached to this run (headless) and the question has no default_value "
                    "or choices; decide yourself and say what you assumed",
                )
        else:
            with self._lock:
                answer = self._ask_terminal(agent_id, question, choices, default, why)
        return Outcome.ok(_as_json(answer) if want_json else answer)

    def _ask_terminal(self, agent_id: str, question: str, choices: Sequence[str], default: str, why: str) -> str:
        assert self.prompt is not None
        self.write(f"\n[{agent_id}] asks: {question}\n")
        if why:
            self.write(f"  (why: {why})\n")
        for i, choice in enumerate(choices, 1):
            self.write(f"  {i}. {choice}\n")
        suffix = f" [{default}]" if default else ""
        try:
            raw = self.prompt(f"answer{suffix}: ").strip()
        except EOFError:
            raw = ""
        if not raw:
            return default or (choices[0] if choices else "")
        if choices and raw.isdigit() and 1 <= int(raw) <= len(choices):
            return choices[int(raw) - 1]
        return raw


def _as_json(answer: str) -> dict[str, Any]:
    try:
        value = json.loads(answer)
    except json.JSONDecodeError:
        return {"answer": answer}
    return value if isinstance(value, dict) else {"answer": value}
