"""`strawpot verify`: check every installed file against the hashes in strawpot.lock, and its signers offline."""

from __future__ import annotations

from pathlib import Path

import rich_click as click

from strawpot.commands._options import project_options

SECTION = "packages"


@click.command()
@project_options
def command(is_global: bool, project: Path | None, as_json: bool) -> None:
    """Hash every installed file and compare it with strawpot.lock, the lock's agent tools with each agent's own
    AGENT.md, and each locked signer and log index with what installs kept in the cache folder (no network);
    exit 5 listing what differs."""
    from strawpot.commands._read_only import verify

    verify(is_global, project, as_json)
