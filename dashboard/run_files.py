"""The files a run produced, as its record says: those its worktree's merge recorded, else why they are not known.

A worktree run's merge-back records, in `isolation.files`, each file the run changed and whether it was brought
back to the working tree (else it stays on the run's branch), the first FILES_RECORDED of them and the count of
all (orchestrator/merge.py). The record sits in a folder an agent may write: each entry is checked, and a
malformed one left out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from orchestrator.run_record import RunRecord, State

CHANGES = ("added", "modified", "deleted")


@dataclass(frozen=True)
class ChangedFile:
    path: str
    change: str  # one of CHANGES
    back: bool  # brought back to the user's working tree; else on the run's branch only


@dataclass
class Produced:
    """The run's changed files, how many there were in all, or the one line saying why they are not known."""

    files: list[ChangedFile] = field(default_factory=list)
    total: int = 0
    unknown: str = ""  # why no list can be given ("" when `files` is the list)
    branch: str = ""


def _entries(raw: Any) -> list[ChangedFile]:
    if not isinstance(raw, list):
        return []
    return [ChangedFile(e["path"], e["change"], e["back"]) for e in raw
            if isinstance(e, dict) and isinstance(e.get("path"), str) and e.get("change") in CHANGES
            and isinstance(e.get("back"), bool)]


def produced(record: RunRecord) -> Produced:
    """What the run page's *Files* section shows for `record`."""
    iso = record.isolation
    if iso.get("kind", "none") == "none":
        return Produced(unknown="not known: the agents worked in the project folder itself, and strawpot records "
                                "nothing of what they wrote there (`git status` in the project shows what changed)")
    branch = str(iso.get("branch", ""))
    total = iso.get("files_total")
    if isinstance(total, int) and not isinstance(total, bool) and total >= 0:
        files = _entries(iso.get("files"))
        return Produced(files, max(total, len(files)), branch=branch)
    if iso.get("state") == "active" or record.state == State.RUNNING:
        return Produced(unknown="not known yet: the run is still working in its worktree; they are listed when "
                                "its work is merged back", branch=branch)
    where = iso.get("path") or iso.get("working_dir") or "-"
    if iso.get("state") == "kept":
        return Produced(unknown=f"not recorded: the run's work was not merged back; it is in the kept worktree "
                                f"{where} (`git -C {where} status` shows it) on branch {branch}", branch=branch)
    return Produced(unknown="not recorded for this run (a run before strawpot recorded them, or whose merge did not "
                            "get that far)", branch=branch)
