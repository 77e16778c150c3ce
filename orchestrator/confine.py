"""A session's sandbox: `[session] sandbox` as settings, the walls each process of a run is wrapped in (`Confined`),
and what a confined agent was denied, read from its log. The mechanism itself is the `sandbox` package's."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from sandbox.walls import NoSandbox, Sandbox, SandboxSettings, Walls, sandbox_of, setting_paths

if TYPE_CHECKING:
    from strawpot.model.settings import Settings


def session_sandbox(settings: Settings) -> SandboxSettings:
    """`[session] sandbox` with `[sandbox] network|writable|hidden`; bad paths are a UsageError (exit 2)."""
    kind = settings.get("session.sandbox")
    return SandboxSettings(
        kind, settings.get("sandbox.network") == "on", setting_paths(settings, "sandbox.writable", must_exist=True),
        setting_paths(settings, "sandbox.hidden", must_exist=False), "[session] sandbox",
        sandbox_of(kind, "[session] sandbox"))


# -- what a confined process was denied (best effort, from its log) -------------------------------------

_DENIED = re.compile(r"Read-only file system|Permission denied|Operation not permitted|Network is unreachable|"
                     r"EROFS|EACCES|EPERM|ENETUNREACH")


def denials(log_text: str, walls: Walls, limit: int = 5) -> list[str]:
    """Lines of a confined process's log that look like the sandbox refused something (at most `limit`)."""
    hidden = [str(p) for p in walls.hidden]
    found = []
    for line in log_text.splitlines():
        if _DENIED.search(line) or ("No such file" in line and any(h in line for h in hidden)):
            found.append(line.strip()[:300])
    return found[-limit:]


@dataclass(frozen=True)
class Confined:
    """A sandbox and the walls of one process: what the runtime asks to wrap each command it starts."""

    sandbox: Sandbox = field(default_factory=NoSandbox)
    walls: Walls = field(default_factory=Walls)

    def command(self, argv: Sequence[str], cwd: Path | str | None = None) -> list[str]:
        return self.sandbox.command(argv, self.walls, None if cwd is None else Path(cwd))

    def seeing(self, readable: Sequence[Path]) -> Confined:
        """The same walls with `readable` shown read-only too."""
        return replace(self, walls=self.walls.plus(readable=readable)) if readable else self


UNCONFINED = Confined()
