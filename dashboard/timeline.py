"""A run's trace laid out in time for its page: agents' lifetimes as bars, trace events as marks, in SVG geometry.

trace.jsonl sits in a run folder an agent may write: it is read without following a link, only its first
TRACE_BYTES, and a line that is not a JSON object is skipped and counted, never an error. What is drawn is
capped (MAX_ROWS agents, MAX_MARKS events) and the page says what was left out.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.run_record import RunRecord
from orchestrator.session import TRACE_FILE
from strawpot.model.agent_files import open_regular

TRACE_BYTES = 2 * 1024 * 1024
MAX_ROWS = 100  # agents drawn as bars
MAX_MARKS = 400  # events drawn as marks (and listed)
TEXT_SHOWN = 300  # characters of an event's text kept for its tooltip and list line
# An event's kind -> its mark's CSS class (ui.css colours them); any other kind is "other".
KINDS = {"run_started": "run", "run_resumed": "run", "run_finished": "run", "agent_staged": "agent",
         "agent_started": "agent", "agent_finished": "agent", "delegate": "delegate", "ask_user": "ask",
         "cancel": "problem", "sandbox_denied": "problem", "memory_failed": "problem", "staging_warning": "problem",
         "files_dir_skipped": "problem"}
WIDTH, LABEL, ROW, TOP = 900, 180, 18, 22  # the SVG's geometry: width, label column, row height, time axis


@dataclass
class Trace:
    """What could be read of a run's trace.jsonl: its events, lines skipped, whether it was cut or unreadable."""

    events: list[dict[str, Any]] = field(default_factory=list)
    bad_lines: int = 0
    cut: bool = False  # the file is over TRACE_BYTES: only its first TRACE_BYTES were read
    problem: str = ""  # why the file could not be read at all ("" when it was, or is absent)


def read_trace(run_dir: Path) -> Trace:
    """The events of `run_dir`'s trace.jsonl, read bounded and tolerantly (see the module's docstring)."""
    path = run_dir / TRACE_FILE
    try:
        with open_regular(path) as fh:
            raw = fh.read(TRACE_BYTES + 1)
    except FileNotFoundError:
        return Trace()
    except OSError as exc:
        return Trace(problem=exc.strerror or str(exc))
    trace = Trace(cut=len(raw) > TRACE_BYTES)
    lines = raw[:TRACE_BYTES].split(b"\n")
    if trace.cut:
        lines.pop()  # the last line was cut in two
    for line in lines:
        if not line.strip():
            continue
        try:
            event = json.loads(line.decode("utf-8"))
        except (ValueError, RecursionError):
            event = None
        if isinstance(event, dict) and isinstance(event.get("event"), str):
            trace.events.append(event)
        else:
            trace.bad_lines += 1
    return trace


def _number(value: Any) -> float | None:
    """A time the timeline can place: a finite number (a record or a trace line may hold NaN or Infinity)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        return None
    return float(value)


def _text(event: dict[str, Any]) -> str:
    """An event as one line of text: its kind, then its fields (the page escapes it)."""
    fields = ", ".join(f"{k}={v}" for k, v in event.items() if k not in ("ts", "event", "v", "run_id"))
    line = " ".join(f"{event['event']}: {fields}".split()) if fields else str(event["event"])
    return line if len(line) <= TEXT_SHOWN else line[:TEXT_SHOWN - 1] + "…"


def _short(label: str, limit: int = 24) -> str:
    return label if len(label) <= limit else label[:limit - 1] + "…"


@dataclass(frozen=True)
class Bar:
    agent_id: str
    y: float
    x: float
    width: float
    state: str
    label: str  # the tooltip: agent, role, state, times


@dataclass(frozen=True)
class Mark:
    x: float
    y: float
    kind: str  # its CSS class (KINDS)
    at: str  # seconds since the run started
    text: str


@dataclass
class Timeline:
    """The SVG's geometry and what was left out of it; `empty` when nothing has a time to place it by."""

    height: float = 0
    bars: list[Bar] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)
    rows: list[tuple[float, str]] = field(default_factory=list)  # each row's top and its label (an agent id)
    ticks: list[tuple[float, str]] = field(default_factory=list)  # the time axis: x and seconds since the start
    span: float = 0.0
    agents_left_out: int = 0
    events_left_out: int = 0
    events_untimed: int = 0

    @property
    def empty(self) -> bool:
        return not self.bars and not self.marks

    @property
    def geometry(self) -> dict[str, float]:
        return {"width": WIDTH, "label": LABEL, "row": ROW, "top": TOP}


def layout(record: RunRecord, events: list[dict[str, Any]], now: float | None = None) -> Timeline:
    """Place `record`'s agents (bars, in tree order) and `events` (marks, on their agent's row, else the run's
    row at the top) on a time axis from the run's start to its end (now, while it runs)."""
    now = time.time() if now is None else now
    timed = [(ts, e) for e in events if (ts := _number(e.get("ts"))) is not None]
    spans = [(a, started, _number(a.ended_at)) for _, a in record.tree()
             if (started := _number(a.started_at)) is not None]
    known = [*(ts for ts, _ in timed), *(t for _, started, ended in spans for t in (started, ended) if t is not None)]
    start = _number(record.started_at) or min(known, default=now)
    ended = _number(record.ended_at)
    end = max([*known, ended if ended is not None else now])
    span = min(max(end - start, 0.001), 1e9)  # past thirty years, the record's times are not real ones
    scale = (WIDTH - LABEL - 30) / span  # room for the last tick's label

    def x(ts: float) -> float:
        return round(LABEL + min(max(ts - start, 0.0), span) * scale, 1)

    tree = record.tree()
    shown = tree[:MAX_ROWS]
    rows = {a.agent_id: TOP + ROW * (i + 1) for i, (_, a) in enumerate(shown)}
    out = Timeline(height=TOP + ROW * (len(shown) + 2), span=span, agents_left_out=len(tree) - len(shown),
                   events_untimed=len(events) - len(timed),
                   rows=[(TOP, "run"), *((rows[a.agent_id], _short(a.agent_id)) for _, a in shown)])
    lifetimes = {a.agent_id: (started, ended) for a, started, ended in spans}
    for _, a in shown:
        if a.agent_id not in lifetimes:  # not started yet (or no time a record can hold)
            continue
        started, ended = lifetimes[a.agent_id]
        stop = ended if ended is not None else end
        left = x(started)
        took = f"{stop - started:.1f}s" if ended is not None else "still running"
        out.bars.append(Bar(a.agent_id, rows[a.agent_id], left, max(x(stop) - left, 2.0), str(a.state),
                            f"{a.agent_id} (role {a.role}): {a.state}, {took}"))
    for ts, e in timed[:MAX_MARKS]:
        who = e.get("caller") or e.get("agent_id")  # who did it: a delegation's caller, else the agent it is about
        y = rows.get(who if isinstance(who, str) else "", TOP)
        kind = str(e["event"])
        out.marks.append(Mark(x(ts), y + ROW / 2, KINDS.get(kind, "other"),
                              f"+{max(ts - start, 0.0):.1f}s", _text(e)))
    out.events_left_out = max(len(timed) - MAX_MARKS, 0)
    out.ticks = [(x(start + span * i / 4), f"{span * i / 4:.1f}s") for i in range(5)]
    return out
