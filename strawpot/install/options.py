"""What an install-family run is asked to do: the requirement edits, the lock and tree modes, and test faults.

A command names its mode as values (as uv's install does), rather than six booleans for the service to
decode: how the lock is treated (`LockMode`) and what happens to the installed tree (`TreeMode`).

| command | lock | tree |
|---|---|---|
| `install`, `update`, `uninstall` | RESOLVE (LOCKED with `--locked`, FROZEN with `--frozen`) | ADD |
| `sync` | as install | EXACT |
| `lock` | RESOLVE | NONE |
| `lock --check` | CHECK | NONE |
"""

from __future__ import annotations

import os
import signal
import time
from enum import Enum
from typing import Literal

from strawpot.model.errors import UsageError
from strawpot.model.kinds import Kind
from valueclass import Record, State, field


class LockMode(Enum):
    RESOLVE = "resolve"  # resolve when strawpot.toml changed, and write the new lock
    LOCKED = "locked"  # fail (exit 4) rather than change the lock
    FROZEN = "frozen"  # install the lock as it is, without reading strawpot.toml
    CHECK = "check"  # report whether the lock is stale; write nothing

    @classmethod
    def from_flags(cls, *, locked: bool, frozen: bool) -> LockMode:
        if locked and frozen:
            raise UsageError("--locked and --frozen cannot be used together",
                             hint="--locked checks the lock against strawpot.toml; --frozen does not read it")
        return cls.LOCKED if locked else cls.FROZEN if frozen else cls.RESOLVE


class TreeMode(Enum):
    NONE = "none"  # the lock only (`lock`)
    ADD = "add"  # make every locked package installed, leave other packages alone
    EXACT = "exact"  # as ADD, and remove every installed package the lock does not hold (`sync`)


class Requested(Record):
    """A package named on the command line; `spec` None means "the newest, saved as ^X.Y.Z"."""

    kind: Kind
    name: str
    spec: str | None = None


class Edit(Record):
    """What a command changes in the requirements before locking."""

    add: tuple[Requested, ...] = ()
    remove: tuple[tuple[Kind, str], ...] = ()
    upgrade: frozenset[str] = frozenset()  # package ids whose locked versions are not preferred
    upgrade_all: bool = False

    @property
    def any(self) -> bool:
        return bool(self.add or self.remove or self.upgrade or self.upgrade_all)


class Faults(State):
    """Test hooks, passed in by the tests that need them (never read from the environment): SIGKILL this
    process at the `kill_at`-th checkpoint, sleep `sleep` seconds at each one (to widen race windows), or
    swap packages with two renames as on platforms without an atomic exchange."""

    _fields = ("kill_at", "sleep", "no_exchange", "_seen")

    def __init__(self, kill_at: int | None = None, sleep: float = 0.0, no_exchange: bool = False,
                 _seen: int = 0) -> None:
        self.kill_at, self.sleep, self.no_exchange, self._seen = kill_at, sleep, no_exchange, _seen

    def checkpoint(self) -> None:
        """A moment at which a crash must leave a consistent project."""
        if self.sleep:
            time.sleep(self.sleep)
        if self.kill_at is None:
            return
        self._seen += 1
        if self._seen == self.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)


class Options(Record):
    registry: str | None = None
    offline: bool = False
    lock: LockMode = LockMode.RESOLVE
    tree: TreeMode = TreeMode.ADD
    dry_run: bool = False
    save: bool = True  # write strawpot.toml and strawpot.lock (False: `install --no-save`)
    tools: Literal["skip", "check", "run"] = "check"
    scripts: Literal["run", "ignore"] = "run"  # run trusted install scripts (asking on a terminal), or none
    trust_project: bool = False  # honour strawpot.toml's trust without this machine's confirmation (CI)
    trust_now: frozenset[str] = frozenset()  # `strawpot trust IDS`: the user trusts these packages' commands now
    rebuild: frozenset[tuple[Kind, str]] = frozenset()  # reinstall from the lock and run the script again (`sync --rebuild`)
    faults: Faults = field(default_factory=Faults)

    @classmethod
    def for_install(
        cls, *, registry: str | None = None, offline: bool = False, lock: LockMode = LockMode.RESOLVE,
        dry_run: bool = False, no_save: bool = False, ignore_scripts: bool = False, install_tools: bool = False,
        skip_tools: bool = False, trust_project: bool = False,
    ) -> Options:
        """What `strawpot install`'s flags ask for: the command and the entry point's early parse build it alike."""
        return cls(registry=registry, offline=offline, lock=lock, dry_run=dry_run, save=not no_save,
                   scripts="ignore" if ignore_scripts else "run",
                   tools="skip" if skip_tools else ("run" if install_tools else "check"), trust_project=trust_project)

    def only_current(self, edit: Edit | None = None) -> bool:
        """Whether a project already current is all this run asks for (so the pipeline's first step,
        `fastcheck.nothing_to_do`, may answer): no edit, nothing forced, dry or unsaved, and a run that
        installs the lock (not `sync`, which also removes packages the lock does not hold) or only locks."""
        return (
            (edit is None or not edit.any)
            and not (self.dry_run or self.rebuild or self.trust_now or self.trust_project)
            and self.save and self.scripts == "run" and self.tools != "run" and self.tree is not TreeMode.EXACT
        )

    def current_question(self) -> dict[str, bool]:
        """What this run asks `fastcheck.nothing_to_do` (the entry point asks the same for a bare install)."""
        return {"frozen": self.lock is LockMode.FROZEN, "lock_only": self.tree is TreeMode.NONE,
                "check_tools": self.tools == "check"}

    @property
    def writes(self) -> bool:
        """Whether the run may write anything (it takes the project's file lock then)."""
        return not self.dry_run and self.lock is not LockMode.CHECK

    @property
    def touches_tree(self) -> bool:
        return self.tree is not TreeMode.NONE and self.writes
