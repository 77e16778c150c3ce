"""`strawpot mcp serve` driven by the official MCP SDK's own stdio client; `strawpot mcp config`."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from orchestrator.memory_sqlite import SqliteMemory
from tests._cli import STRAWPOT, strawpot


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "strawpot.toml").write_text("")
    return root


async def _session_calls(root: Path, calls: list[tuple[str, dict[str, Any]]]) -> tuple[list[str], list[Any]]:
    # the SDK takes over a second to import: the worker that runs these tests pays it, not every worker's collection
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=[*STRAWPOT[1:], "mcp", "serve", "--project", str(root)],
                                   env={**os.environ, "STRAWPOT_HOME": str(root / "home")}, cwd=str(root))
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as streams, ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            names = sorted(t.name for t in (await session.list_tools()).tools)
            results = [await session.call_tool(name, args) for name, args in calls]
    return names, results


def _payload(result: Any) -> Any:
    assert not result.is_error, result
    return json.loads(result.content[0].text) if len(result.content) == 1 else [json.loads(c.text) for c in result.content]


def test_the_sdk_client_remembers_recalls_and_forgets_through_the_project_memory(root: Path) -> None:
    SqliteMemory(root / ".strawpot" / "memory").remember("written before the server started", ["before"], "project")
    names, results = anyio.run(_session_calls, root, [
        ("remember", {"content": "the build needs libfoo", "keywords": ["build"]}),
        ("recall", {"query": "libfoo"}),
        ("recall", {"query": "before"}),
    ])
    assert names == ["forget", "recall", "remember"]
    entry_id = _payload(results[0])["id"]
    found = results[1].structured_content["result"]
    assert [e["id"] for e in found] == [entry_id] and found[0]["keywords"] == ["build"]
    assert results[2].structured_content["result"][0]["content"] == "written before the server started"
    assert [e.content for e in SqliteMemory(root / ".strawpot" / "memory").recall("libfoo", [], "", 5)] == \
        ["the build needs libfoo"]  # the same database Denden and `strawpot memory` use
    _, gone = anyio.run(_session_calls, root, [("forget", {"id": entry_id}), ("forget", {"id": entry_id}),
                                              ("remember", {"content": "x", "scope": "role"})])
    assert _payload(gone[0]) == {"forgotten": True} and _payload(gone[1]) == {"forgotten": False}
    assert gone[2].is_error and "scope 'role' needs a role" in gone[2].content[0].text


def test_mcp_config_prints_the_registration_snippet(root: Path) -> None:
    proc = strawpot("mcp", "config", "--project", root, cwd=root, timeout=60)
    assert proc.returncode == 0, proc.stderr
    server = json.loads(proc.stdout)["mcpServers"]["strawpot-memory"]
    assert server["args"][-4:] == ["mcp", "serve", "--project", str(root.resolve())]
    assert Path(server["command"]).name in ("strawpot", Path(sys.executable).name)


def test_a_corrupt_database_is_the_tools_error_text(root: Path) -> None:
    folder = root / ".strawpot" / "memory"
    folder.mkdir(parents=True, mode=0o700)
    (folder / "memory.db").write_bytes(b"not sqlite" * 200)
    _, results = anyio.run(_session_calls, root, [("recall", {"query": "x"})])
    assert results[0].is_error and "is unreadable" in results[0].content[0].text


def test_an_entry_of_200_kb_over_mcp_is_the_tools_error_and_nothing_is_stored(root: Path) -> None:
    _, results = anyio.run(_session_calls, root, [("remember", {"content": "x" * 200_000})])
    assert results[0].is_error and "a memory entry holds at most 8 KiB" in results[0].content[0].text
    assert SqliteMemory(root / ".strawpot" / "memory").entries() == []
