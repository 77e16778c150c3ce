"""The project's memory as an MCP server over stdio (tools remember, recall, forget), on the official `mcp` SDK.

An agent CLI that speaks MCP (Claude Code does) then uses project memory directly, through the same provider
as Denden and `strawpot memory`.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from orchestrator.memory import MemoryEntry, MemoryProvider

SERVER_NAME = "strawpot-memory"
T = TypeVar("T")


def _entry(e: MemoryEntry) -> dict[str, Any]:
    return {"id": e.entry_id, "content": e.content, "keywords": list(e.keywords), "scope": e.scope, "role": e.role}


def serve(provider: MemoryProvider) -> None:
    """Serve `provider` on stdin/stdout until the client closes the stream."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    from orchestrator.memory import MemoryFailure

    def guarded(action: Callable[[], T]) -> T:
        """A memory failure (a corrupt or locked database) reaches the client as the tool's error text."""
        try:
            return action()
        except MemoryFailure as exc:
            raise ToolError(str(exc)) from None

    server: MCPServer[Any] = MCPServer(SERVER_NAME, instructions="Project memory of this StrawPot project: "
                                       "remember facts worth keeping, recall them by words or keywords.")

    @server.tool(description="Remember a piece of text for later sessions. scope: project (default), role "
                             "(with role), or global (every project).")
    def remember(content: str, keywords: list[str] | None = None, scope: str = "project",
                 role: str = "") -> dict[str, str]:
        if scope == "role" and not role:
            raise ToolError("scope 'role' needs a role")
        return {"id": guarded(lambda: provider.remember(content, list(keywords or []), scope, role))}

    @server.tool(description="Recall remembered entries matching any word of the query, best first.")
    def recall(query: str, max_results: int = 10, scope: str = "") -> list[dict[str, Any]]:
        return [_entry(e) for e in guarded(lambda: provider.recall(query, [], scope, max_results))]

    @server.tool(description="Forget the entry with this id.")
    def forget(id: str) -> dict[str, bool]:
        return {"forgotten": guarded(lambda: provider.forget(id))}

    server.run("stdio")


def config_snippet(project_dir: Path) -> str:
    """The `mcpServers` JSON that registers the server for this project (Claude Code's `.mcp.json` format)."""
    command = shutil.which("strawpot") or sys.executable
    args = ["mcp", "serve", "--project", str(project_dir)]
    if command == sys.executable:
        args = ["-m", "strawpot.cli", *args]
    return json.dumps({"mcpServers": {SERVER_NAME: {"command": command, "args": args}}}, indent=2)
