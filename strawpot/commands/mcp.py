"""`strawpot mcp serve|config`: the project's memory as an MCP server for agent CLIs that speak MCP."""

from __future__ import annotations

from pathlib import Path

import rich_click as click

from strawpot.commands._options import project_option

SECTION = "sessions"


@click.group()
def command() -> None:
    """Project memory over the Model Context Protocol (tools: remember, recall, forget)."""


@command.command()
@project_option
def serve(project: Path | None) -> None:
    """Serve the project's memory over stdio (the memory provider of [memory] provider) until stdin closes."""
    from strawpot.commands.memory import project_memory
    from strawpot.mcp_memory import serve as serve_memory

    serve_memory(project_memory(project))


@command.command()
@project_option
def config(project: Path | None) -> None:
    """Print the `mcpServers` JSON that registers `strawpot mcp serve` for this project (e.g. in .mcp.json)."""
    from strawpot.mcp_memory import config_snippet
    from strawpot.model.layout import Project

    click.echo(config_snippet(Project.at(project).dir))
