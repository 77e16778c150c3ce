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


def remote_note(os_name: str) -> str:
    return f"the {os_name} install script {REMOTE_CODE_NOTE}"


def install_lines(commands: Mapping[str, str]) -> list[str]:
    """`install script (os): command` per OS, each followed by one note when it fetches code to run."""
    lines = []
    for os_name, command in sorted(commands.items()):
        lines.append(f"install script ({os_name}): {command}")
        if downloads_code(command):
            lines.append(f"  note: {remote_note(os_name)}")
    return lines
