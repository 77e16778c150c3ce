"""A project's stats page (`/p/KEY/stats`): runs per day over the last 30 days, success rate and median duration,
drawn as server-rendered SVG (geometry attributes and classes only) with the same numbers as a table.

Computed from the run records, read through orchestrator/run_record.py: a run id names its (UTC) start, so only
the folders of the window are read; a record that cannot be read is skipped, counted and said.
"""

from __future__ import annotations

import math
import os
import statistics
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from dashboard.site import Site
from orchestrator.run_record import RUN_ID_RE, RunRecord, RunRecordBroken, State, find_run

DAYS = 30
MAX_RECORDS = 5000  # records read for one page at most; more are left out and the page says how many
ENDED = frozenset({State.SUCCEEDED, State.FAILED, State.TIMED_OUT, State.CANCELLED, State.INTERRUPTED})
SLOT, CHART_LEFT, CHART_TOP, CHART_HEIGHT = 24, 40, 12, 120  # the charts' geometry


def took(seconds: float | None) -> str:
    """A duration as a person reads it: 42.0s, 3m 12s, 1h 05m; "-" for none."""
    if seconds is None:
        return "-"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m {secs:02d}s" if minutes < 60 else f"{minutes // 60}h {minutes % 60:02d}m"


@dataclass
class Day:
    day: date
    runs: int = 0
    succeeded: int = 0
    not_succeeded: int = 0  # ended otherwise: failed, timed out, cancelled, interrupted
    durations: list[float] = field(default_factory=list)  # of the ended runs

    @property
    def median(self) -> float | None:
        return statistics.median(self.durations) if self.durations else None


@dataclass
class Stats:
    days: list[Day]
    unreadable: int = 0  # records skipped: session.json is no run record
    left_out: int = 0  # records not read: over MAX_RECORDS

    @property
    def runs(self) -> int:
        return sum(d.runs for d in self.days)

    @property
    def succeeded(self) -> int:
        return sum(d.succeeded for d in self.days)

    @property
    def ended(self) -> int:
        return sum(d.succeeded + d.not_succeeded for d in self.days)

    @property
    def success_rate(self) -> float | None:
        return self.succeeded / self.ended if self.ended else None

    @property
    def median(self) -> float | None:
        durations = [t for d in self.days for t in d.durations]
        return statistics.median(durations) if durations else None


def _candidates(sessions_root: Path, first: date) -> list[str]:
    """The run folders that may hold a run started on `first` or later: a run id's start (UTC) is a day or more
    before `first` only for an older run; a folder named otherwise is read to learn."""
    try:
        names = [e.name for e in os.scandir(sessions_root) if not e.name.startswith(".")]
    except OSError:
        return []
    oldest = (first - timedelta(days=1)).strftime("%Y%m%d")
    return sorted((n for n in names if not RUN_ID_RE.fullmatch(n) or n[4:12] >= oldest), reverse=True)


def project_stats(sessions_root: Path, today: date) -> Stats:
    """The last DAYS days up to `today` (local dates) of the runs under `sessions_root`."""
    first = today - timedelta(days=DAYS - 1)
    days = {first + timedelta(days=i): Day(first + timedelta(days=i)) for i in range(DAYS)}
    stats = Stats(list(days.values()))
    names = _candidates(sessions_root, first)
    stats.left_out = max(len(names) - MAX_RECORDS, 0)
    for name in names[:MAX_RECORDS]:
        try:
            record = find_run(sessions_root, name)
        except RunRecordBroken:
            stats.unreadable += 1
            continue
        local = _local_day(record.started_at) if record is not None else None
        if record is not None and local is not None and local in days:
            _count(days[local], record)
    return stats


def _local_day(ts: float) -> date | None:
    """The local date of `ts`; None for a time a record holds that is no date (NaN, infinite, out of range)."""
    try:
        return datetime.fromtimestamp(ts).date() if ts > 0 else None
    except (OverflowError, ValueError, OSError):
        return None


def _count(day: Day, record: RunRecord) -> None:
    day.runs += 1
    if record.state not in ENDED:
        return  # still running, or paused: neither a success nor a failure yet
    if record.state == State.SUCCEEDED:
        day.succeeded += 1
    else:
        day.not_succeeded += 1
    if record.ended_at is not None and math.isfinite(record.ended_at) and record.ended_at >= record.started_at:
        day.durations.append(record.ended_at - record.started_at)


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    height: float
    ok_y: float
    ok_height: float
    label: str  # its tooltip


def runs_chart(stats: Stats) -> dict[str, object]:
    """The runs-per-day chart: one bar per day with runs (its succeeded part drawn over it), x labels, y scale."""
    top = max((d.runs for d in stats.days), default=0) or 1
    scale = CHART_HEIGHT / top
    bottom = CHART_TOP + CHART_HEIGHT
    bars = []
    for i, d in enumerate(stats.days):
        if not d.runs:
            continue
        h, ok = d.runs * scale, d.succeeded * scale
        bars.append(Bar(CHART_LEFT + i * SLOT + 3, round(bottom - h, 1), round(h, 1), round(bottom - ok, 1),
                        round(ok, 1), f"{d.day.isoformat()}: {d.runs} runs, {d.succeeded} succeeded, "
                                      f"{d.not_succeeded} did not"))
    return {"bars": bars, "top": top, "width": CHART_LEFT + DAYS * SLOT + 10, "height": bottom + 20,
            "bottom": bottom, "slot": SLOT - 6, "labels": _labels(stats, bottom + 14)}


def median_chart(stats: Stats) -> dict[str, object]:
    """The median duration of each day's ended runs, as dots joined by a line."""
    medians = [(i, m) for i, d in enumerate(stats.days) if (m := d.median) is not None]
    top = max((m for _, m in medians), default=0.0) or 1.0
    bottom = CHART_TOP + CHART_HEIGHT
    dots = [(CHART_LEFT + i * SLOT + SLOT / 2, round(bottom - m / top * CHART_HEIGHT, 1),
             f"{stats.days[i].day.isoformat()}: median {took(m)}") for i, m in medians]
    return {"dots": dots, "line": " ".join(f"{x},{y}" for x, y, _ in dots), "top": took(top),
            "width": CHART_LEFT + DAYS * SLOT + 10, "height": bottom + 20, "bottom": bottom,
            "labels": _labels(stats, bottom + 14)}


def _labels(stats: Stats, y: float) -> list[tuple[float, float, str]]:
    return [(CHART_LEFT + i * SLOT, y, d.day.strftime("%m-%d")) for i, d in enumerate(stats.days) if i % 5 == 0]


def routes(site: Site) -> list[Route]:
    """The stats page, under a project's `/p/{project}` prefix."""

    async def stats_page(request: Request) -> Response:
        project = site.project(request)
        stats = project_stats(project.sessions_root, site.now().astimezone().date())
        rate = stats.success_rate
        return site.render("stats.html", project=project, stats=stats, runs=runs_chart(stats),
                           medians=median_chart(stats), took=took, days=DAYS, max_records=MAX_RECORDS,
                           rate=rate, rate_width=round(300 * (rate or 0.0), 1))

    return [Route("/stats", stats_page)]
