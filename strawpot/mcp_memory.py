"""The project's memory as an MCP server over stdio (tools remember, recall, forget), on strawpot/mcp_stdio.py.

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
    from strawpot.mcp_stdio import Tool

SERVER_NAME = "strawpot-memory"
INSTRUCTIONS = ("Project memory of this StrawPot project: remember facts worth keeping, recall them by words or "
                "keywords.")
T = TypeVar("T")


def _entry(e: MemoryEntry) -> dict[str, Any]:
    return {"id": e.entry_id, "content": e.content, "keywords": list(e.keywords), "scope": e.scope, "role": e.role}


def memory_tools(provider: MemoryProvider) -> list[Tool]:
    """remember, recall and forget over `provider`; a memory failure (a corrupt or locked database) is the
    tool's error text."""
    from orchestrator.memory import MemoryFailure
    from strawpot.mcp_stdio import Param, Tool, ToolError

    def guarded(action: Callable[[], T]) -> T:
        try:
            return action()
        except MemoryFailure as exc:
            raise ToolError(str(exc)) from None

    def remember(content: str, keywords: list[str] | None, scope: str, role: str) -> dict[str, str]:
        if scope == "role" and not role:
            raise ToolError("scope 'role' needs a role")
        return {"id": guarded(lambda: provider.remember(content, list(keywords or []), scope, role))}

    def recall(query: str, max_results: int, scope: str) -> list[dict[str, Any]]:
        return [_entry(e) for e in guarded(lambda: provider.recall(query, [], scope, max_results))]

    def forget(id: str) -> dict[str, bool]:  # noqa: A002 - the tool's argument name, as clients send it
        return {"forgotten": guarded(lambda: provider.forget(id))}

    entries = {"type": "array", "items": {"type": "object", "additionalProperties": True}}
    return [
        Tool("remember", "Remember a piece of text for later sessions. scope: project (default), role (with role), "
             "or global (every project).",
             (Param("content", "string", required=True), Param("keywords", "strings"),
              Param("scope", "string", "project"), Param("role", "string", "")), remember,
             {"type": "object", "additionalProperties": {"type": "string"}}),
        Tool("recall", "Recall remembered entries matching any word of the query, best first.",
             (Param("query", "string", required=True), Param("max_results", "integer", 10),
              Param("scope", "string", "")), recall,
             {"type": "object", "properties": {"result": entries}, "required": ["result"]}),
        Tool("forget", "Forget the entry with this id.", (Param("id", "string", required=True),), forget,
             {"type": "object", "additionalProperties": {"type": "boolean"}}),
    ]


def serve(provider: MemoryProvider) -> None:
    """Serve `provider` on stdin/stdout until the client closes the stream."""
    from strawpot import __version__
    from strawpot.mcp_stdio import Server

    Server(SERVER_NAME, __version__, INSTRUCTIONS, memory_tools(provider)).serve(sys.stdin.buffer, sys.stdout.buffer)


def config_snippet(project_dir: Path) -> str:
    """The `mcpServers` JSON that registers the server for this project (Claude Code's `.mcp.json` format)."""
    command = shutil.which("strawpot") or sys.executable
    args = ["mcp", "serve", "--project", str(project_dir)]
    if command == sys.executable:
        args = ["-P", "-m", "strawpot.cli", *args]  # -P: the project's own folders never shadow our modules
    return json.dumps({"mcpServers": {SERVER_NAME: {"command": command, "args": args}}}, indent=2)
