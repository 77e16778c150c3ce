"""askUser questions kept in the run folder (`asks/<n>.json`), answered by `<n>.answer.json`: first answer wins.

The orchestrator writes a question when a run without a terminal has `[session] ask = "run"`; `strawpot ui`
(or anyone holding the run folder) writes the answer; the orchestrator polls for it and, when its wait ends
first, writes the answer it fell back to itself (`by: "timeout"`, or `"ended"` when the asking agent or the
run stopped). Every write is atomic and made under the folder's lock, so one question gets one answer.
The folder can hold files nobody asked (an agent or a clone can write there): a new question never takes a
number a file uses already, nor one past the largest valid number.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.run_record import PRIVATE_FILE, RunRecordBroken, State, find_run
from orchestrator.session import private_folder
from strawpot.model.fs import atomic_write, file_lock, read_regular_file

ASKS_DIR = "asks"
LOCK_FILE = ".lock"
ANSWER_SUFFIX = ".answer.json"
MAX_ANSWER_BYTES = 64 * 1024
POLL_SECONDS = 0.1
_ID = re.compile(r"[1-9][0-9]{0,8}")


class AnswerRefused(Exception):
    """An answer that cannot be taken; one line. `reason`: "unknown", "answered", "ended" or "invalid"."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class Question:
    ask_id: str
    agent_id: str
    question: str
    choices: tuple[str, ...]
    default: str
    why: str
    asked_at: float
    answer: str | None = None  # None while open, and for an `ended` question closed without an answer
    answered_by: str = ""  # "" while open; "ui", "cli", "timeout" or "ended"
    answered_at: float = 0.0

    @property
    def is_open(self) -> bool:
        return not self.answered_by


def valid_id(ask_id: str) -> bool:
    """Whether `ask_id` is a question number (nothing that could name another file)."""
    return _ID.fullmatch(ask_id) is not None


def _folder(run_dir: Path) -> Path:
    return run_dir / ASKS_DIR


def post(run_dir: Path, agent_id: str, question: str, choices: Sequence[str], default: str, why: str) -> str:
    """Write a new open question; its id (1, 2, ... in the order asked)."""
    folder = _folder(run_dir)
    private_folder(folder)
    with file_lock(folder / LOCK_FILE):
        ask_id = _free_id(folder)
        record = {"id": ask_id, "agent_id": agent_id, "question": question, "choices": list(choices),
                  "default": default, "why": why, "asked_at": time.time()}
        atomic_write(folder / f"{ask_id}.json", json.dumps(record, indent=2) + "\n", mode=PRIVATE_FILE)
    return ask_id


def _free_id(folder: Path) -> str:
    """The next question number: one past the highest in use, or, when a planted file took the highest number
    there is, the lowest one no file (question or answer) uses; never a number an answer waits under already."""
    used = {int(number) for name in os.listdir(folder) if valid_id(number := name.partition(".")[0])}
    after = max(used, default=0) + 1
    if valid_id(str(after)):
        return str(after)
    return str(next(n for n in range(1, len(used) + 2) if n not in used))


def answer(run_dir: Path, ask_id: str, text: str, by: str) -> Question:
    """A person's answer (`by`: "ui" or "cli") to open question `ask_id` of a running run; raises AnswerRefused."""
    if not text.strip():
        raise AnswerRefused("the answer is empty: pick a choice or type one", "invalid")
    if len(text.encode("utf-8", "replace")) > MAX_ANSWER_BYTES:
        raise AnswerRefused(f"the answer is over {MAX_ANSWER_BYTES // 1024} KiB", "invalid")
    return _close(run_dir, ask_id, text, by, need_running=True)


def settle(run_dir: Path, ask_id: str, text: str | None, by: str) -> Question:
    """The orchestrator's own answer once its wait ended (`by`: "timeout" or "ended"); None: it had none."""
    return _close(run_dir, ask_id, text, by, need_running=False)


def _close(run_dir: Path, ask_id: str, text: str | None, by: str, *, need_running: bool) -> Question:
    unknown = AnswerRefused(f"no question {ask_id!r} in this run", "unknown")
    folder = _folder(run_dir)
    if not valid_id(ask_id) or not folder.is_dir():
        raise unknown
    with file_lock(folder / LOCK_FILE):
        found = read(run_dir, ask_id)
        if found is None:
            raise unknown
        if not found.is_open:
            said = f" ({found.answer!r})" if found.answer is not None else ""
            raise AnswerRefused(f"question {ask_id} was answered already, by {found.answered_by}{said}", "answered")
        state = _run_state(run_dir)
        if need_running and state != State.RUNNING:
            raise AnswerRefused(f"run {run_dir.name} is {state or 'unreadable'}: no agent waits for this answer "
                                "any more", "ended")
        record = {"answer": text, "by": by, "answered_at": time.time()}
        atomic_write(folder / f"{ask_id}{ANSWER_SUFFIX}", json.dumps(record) + "\n", mode=PRIVATE_FILE)
    done = read(run_dir, ask_id)
    assert done is not None
    return done


def wait(run_dir: Path, ask_id: str, timeout: float, *, poll: float = POLL_SECONDS,
         stop: Callable[[], bool] = lambda: False) -> Question | None:
    """The question once answered, or once `timeout` seconds passed or `stop()` is true (then still open);
    None when its file is gone."""
    deadline = time.monotonic() + timeout
    while True:
        found = read(run_dir, ask_id)
        if found is None or not found.is_open or time.monotonic() >= deadline or stop():
            return found
        time.sleep(poll)


def read(run_dir: Path, ask_id: str) -> Question | None:
    """Question `ask_id` with its answer, or None when there is no such (readable) question."""
    if not valid_id(ask_id):
        return None
    folder = _folder(run_dir)
    data = _load(folder / f"{ask_id}.json")
    if data is None:
        return None
    given = _load(folder / f"{ask_id}{ANSWER_SUFFIX}") or {}
    choices = data.get("choices") if isinstance(data.get("choices"), list) else []
    answered = given.get("answer")
    return Question(ask_id, str(data.get("agent_id", "")), str(data.get("question", "")),
                    tuple(str(c) for c in choices or []), str(data.get("default", "")), str(data.get("why", "")),
                    _number(data.get("asked_at")), str(answered) if answered is not None else None,
                    str(given.get("by", "")), _number(given.get("answered_at")))


def questions(run_dir: Path) -> list[Question]:
    """Every readable question of the run, in the order asked."""
    folder = _folder(run_dir)
    if not folder.is_dir():
        return []
    ids = sorted(int(p.stem) for p in folder.glob("*.json") if valid_id(p.stem))
    return [q for i in ids if (q := read(run_dir, str(i))) is not None]


def open_count(run_dir: Path) -> int:
    """How many of the run's questions wait for an answer, told by the file names alone (nothing is read): one
    listing of `asks/`, so a list of many runs can ask it of each running one."""
    try:
        names = os.listdir(_folder(run_dir))
    except OSError:
        return 0
    asked = {name[:-5] for name in names if name.endswith(".json") and valid_id(name[:-5])}
    answered = {name[:-len(ANSWER_SUFFIX)] for name in names if name.endswith(ANSWER_SUFFIX)}
    return len(asked - answered)


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) else 0.0


def _load(path: Path) -> dict[str, Any] | None:
    """A question or answer file, read as the run folder's files are (an agent can write there): no link, no FIFO,
    at most `_FILE_MOST` bytes; None when it cannot be read."""
    raw, _, unreadable = read_regular_file(path, _FILE_MOST)
    if unreadable is not None:
        return None
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


_FILE_MOST = 16 * 1024 * 1024  # bytes: far more than a question and its choices


def _run_state(run_dir: Path) -> str:
    """The state the run's record says ("" when it has none, or none that can be read)."""
    try:
        record = find_run(run_dir.parent, run_dir.name)
    except RunRecordBroken:
        return ""
    return record.state if record is not None else ""
