"""What an install command (`metadata.strawpot.install.<os>`) does, read from its text, and how it is shown."""

from __future__ import annotations

import re
from collections.abc import Mapping

# A downloader invoked as a command (`curl … | sh`, `wget -qO- … | bash`, `sh -c "$(curl …)"`, PowerShell's
# `irm … | iex`): whatever it fetches is not in the package, so the lock's file hashes cannot pin it.
_DOWNLOADER = re.compile(
    r"(?:^|[\s;&|(`]|\$\()(?:sudo\s+)?(?:curl|wget|iwr|irm|invoke-webrequest|invoke-restmethod)(?=\s|$)",
    re.IGNORECASE,
)

REMOTE_CODE_NOTE = "downloads what it runs: the lock pins this command, not the code it fetches"


def downloads_code(command: str) -> bool:
    """Whether the command fetches something from the network (so the lock cannot pin what runs)."""
    return _DOWNLOADER.search(command) is not None


def remote_note(commands: Mapping[str, str]) -> str | None:
    """One sentence naming the OSes whose install command fetches code to run, or None when none does."""
    remote = sorted(os_name for os_name, command in commands.items() if downloads_code(command))
    if not remote:
        return None
    if len(remote) == 1:
        return f"the {remote[0]} install script {REMOTE_CODE_NOTE}"
    return (f"the install scripts ({', '.join(remote)}) download what they run: the lock pins these commands, "
            "not the code they fetch")


def install_lines(commands: Mapping[str, str]) -> list[str]:
    """`install script (os): command` per OS, then one note when any of them fetches code to run."""
    lines = [f"install script ({os_name}): {command}" for os_name, command in sorted(commands.items())]
    note = remote_note(commands)
    return lines + ([f"note: {note}"] if note else [])
