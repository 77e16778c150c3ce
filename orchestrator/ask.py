"""ask_user: answer an agent's question from the terminal, through the run folder, or headless from its default.

Without a terminal and with `[session] ask = "run"`, the question waits in the run folder
(`orchestrator/questions.py`) for an answer from `strawpot ui`, up to `[session] ask_timeout` seconds.
Headless fallback (at once, or when that wait ends), in order: the question's `default_value`; else its
first choice; else an `ERR_NO_USER` error telling the agent to decide for itself. A JSON `response_format`
turns the answer into an object: the answer parsed as a JSON object, or `{"answer": <text>}` when it is not one.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from orchestrator import questions
from orchestrator.outcome import ERR_NO_USER, Outcome

Prompt = Callable[[str], str]


def _never() -> bool:
    return False


class Asker:
    """Asks one question at a time on a terminal; `prompt` is None when no human is attached (headless).

    `run_wait` (seconds, `[session] ask_timeout`) makes a headless Asker put each question in the run folder
    and wait that long for its answer; None answers at once by the headless rule.
    """

    def __init__(self, prompt: Prompt | None, *, write: Callable[[str], None] | None = None,
                 run_wait: float | None = None, poll: float = questions.POLL_SECONDS) -> None:
        self.prompt = prompt
        self.write = write or (lambda text: None)
        self.run_wait = run_wait
        self.poll = poll
        self._lock = threading.Lock()

    def ask(
        self, agent_id: str, question: str, choices: Sequence[str], default: str, why: str, want_json: bool,
        *, run_dir: Path | None = None, stop: Callable[[], bool] = _never,
    ) -> Outcome:
        """The answer; `run_dir` is the run folder questions wait in, `stop()` ends that wait early."""
        if self.prompt is not None:
            with self._lock:
                answer: str | None = self._ask_terminal(agent_id, question, choices, default, why)
        elif self.run_wait is not None and run_dir is not None:
            answer = self._ask_run_folder(run_dir, agent_id, question, choices, default, why, stop)
        else:
            answer = _headless(choices, default)
        if answer is None:
            return Outcome.error(
                ERR_NO_USER,
                "no user answered (the run is headless, or nobody answered in time) and the question has no "
                "default_value or choices; decide yourself and say what you assumed",
            )
        return Outcome.ok(_as_json(answer) if want_json else answer)

    def _ask_run_folder(self, run_dir: Path, agent_id: str, question: str, choices: Sequence[str], default: str,
                        why: str, stop: Callable[[], bool]) -> str | None:
        """Post the question, wait for its answer; when none comes, record and return the headless one."""
        assert self.run_wait is not None
        ask_id = questions.post(run_dir, agent_id, question, choices, default, why)
        found = questions.wait(run_dir, ask_id, self.run_wait, poll=self.poll, stop=stop)
        if found is not None and not found.is_open:
            return found.answer
        fallback = _headless(choices, default)
        try:
            questions.settle(run_dir, ask_id, fallback, "ended" if stop() else "timeout")
        except questions.AnswerRefused:  # answered in the very last moment (or its file is gone)
            late = questions.read(run_dir, ask_id)
            return late.answer if late is not None and late.answer is not None else fallback
        return fallback

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


def _headless(choices: Sequence[str], default: str) -> str | None:
    return default or (choices[0] if choices else None)


def _as_json(answer: str) -> dict[str, Any]:
    try:
        value = json.loads(answer)
    except json.JSONDecodeError:
        return {"answer": answer}
    return value if isinstance(value, dict) else {"answer": value}
