"""`strawpot mcp serve` starts without the heavy imports (the MCP SDK, pydantic, HTTP stacks) and answers the raw
protocol, hostile lines included; the SDK's own client drives it in tests/orchestrator/test_mcp_memory.py."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests._cli import strawpot

HEAVY = ("mcp", "mcp_types", "pydantic", "starlette", "uvicorn", "anyio", "httpx", "grpc", "importlib.metadata")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "strawpot.toml").write_text("", encoding="utf-8")
    return tmp_path / "proj"


def test_serving_imports_none_of_the_heavy_modules(root: Path) -> None:
    done = strawpot("mcp", "serve", "--project", root, cwd=root, extra_env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert done.returncode == 0, done.stderr[-2000:]  # stdin is closed at once: the server ends cleanly
    loaded = set(re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)$", done.stderr, re.MULTILINE))
    assert "strawpot.mcp_memory" in loaded and "orchestrator.memory_sqlite" in loaded, "the profile was not read"
    assert sorted(m for m in loaded if m.split(".")[0] in HEAVY or m in HEAVY) == []


def exchange(root: Path, lines: list[str]) -> list[dict[str, Any]]:
    done = strawpot("mcp", "serve", "--project", root, cwd=root, input="".join(line + "\n" for line in lines),
                    timeout=60)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def request(ident: int, method: str, **params: Any) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})


def test_hostile_and_odd_lines_get_one_answer_each_and_the_server_goes_on(root: Path) -> None:
    answers = exchange(root, [
        request(1, "initialize", protocolVersion="1999-01-01", capabilities={}, clientInfo={"name": "t", "version": "0"}),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        "not json at all",
        "[" * 100_000,
        json.dumps([1, 2]),
        request(2, "no/such/method"),
        request(3, "tools/call", name="recall", arguments={"query": 5, "extra": True}),
        request(4, "tools/call", name="drop_tables", arguments={}),
        request(5, "tools/call", name="remember", arguments={"content": "kept", "keywords": ["k"]}),
        request(6, "ping"),
    ])
    assert [a.get("id") for a in answers] == [1, None, None, None, 2, 3, 4, 5, 6]
    assert answers[0]["result"]["protocolVersion"] == "2025-11-25"  # an unknown version gets our newest
    assert answers[0]["result"]["serverInfo"]["name"] == "strawpot-memory"
    assert [a["error"]["code"] for a in answers[1:5]] == [-32700, -32700, -32600, -32601]
    bad_args = answers[5]["result"]
    assert bad_args["isError"] and bad_args["content"][0]["text"] == (
        "Error executing tool recall: unknown argument 'extra'; argument 'query' is not of type string")
    assert answers[6]["result"] == {"content": [{"type": "text", "text": "Unknown tool: drop_tables"}], "isError": True}
    assert set(answers[7]["result"]["structuredContent"]) == {"id"} and answers[8]["result"] == {}
