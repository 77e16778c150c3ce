"""`registry gc`: remove blobs no live version references (left by interrupted publishes, or by deleted packages).

A publish writes its blobs before the row that names them commits, so a blob younger than the grace period
may belong to a publish in flight and is kept; writing a blob that exists renews its age.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from registry_server.storage.base import Storage
from strawpot.model.durations import parse_duration

__all__ = ["Report", "collect", "parse_duration"]


@dataclass
class Report:
    removed: list[str] = field(default_factory=list)
    kept: int = 0
    young: int = 0


def collect(storage: Storage, *, grace: float, dry_run: bool = False, now: float | None = None) -> Report:
    """Remove (or with `dry_run` only list) the unreferenced blobs older than `grace` seconds."""
    cutoff = (time.time() if now is None else now) - grace
    listed = list(storage.list_blobs())  # listed before the live set is read: a blob published meanwhile is young
    live = storage.live_blobs()
    report = Report()
    for sha, modified in sorted(listed):
        if sha in live:
            report.kept += 1
        elif modified > cutoff:
            report.kept += 1
            report.young += 1
        else:
            if not dry_run:
                storage.delete_blob(sha)
            report.removed.append(sha)
    return report
