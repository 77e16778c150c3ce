"""A small MCP server over stdio (JSON-RPC 2.0, one message a line): the initialize handshake, ping, tools/list
and tools/call, on the standard library alone.

The official `mcp` SDK takes seconds to import (pydantic models of every protocol revision, its HTTP transports),
which an agent CLI waits for at every start; a server of three tools needs none of it
(benchmarks/bench_mcp_start.py). The SDK's own client still drives it in tests/orchestrator/test_mcp_memory.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import IO, Any

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")  # oldest first; same tools wire
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
_TYPES: dict[str, tuple[type, ...]] = {"string": (str,), "integer": (int,), "boolean": (bool,)}


class ToolError(Exception):
    """A tool's own failure: the client gets its message as the tool's error text (`isError`), not a protocol error."""


@dataclass(frozen=True)
class Param:
    name: str
    type: str  # "string", "integer", "boolean", or "strings" (an array of strings, or null)
    default: Any = None
    required: bool = False

    def schema(self) -> dict[str, Any]:
        found: dict[str, Any] = ({"anyOf": [{"items": {"type": "string"}, "type": "array"}, {"type": "null"}]}
                                 if self.type == "strings" else {"type": self.type})
        return found if self.required else {**found, "default": self.default}

    def fits(self, value: Any) -> bool:
        if self.type == "strings":
            return value is None or (isinstance(value, list) and all(isinstance(v, str) for v in value))
        return isinstance(value, _TYPES[self.type]) and not (self.type == "integer" and isinstance(value, bool))


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    params: tuple[Param, ...]
    run: Callable[..., Any]  # called with every param by name; returns a JSON object or a list
    output: Mapping[str, Any] = field(default_factory=dict)  # the outputSchema

    def listing(self) -> dict[str, Any]:
        schema = {"type": "object", "properties": {p.name: p.schema() for p in self.params},
                  "required": [p.name for p in self.params if p.required]}
        return {"name": self.name, "description": self.description, "inputSchema": schema,
                **({"outputSchema": dict(self.output)} if self.output else {})}

    def call(self, arguments: Mapping[str, Any]) -> Any:
        known = {p.name for p in self.params}
        problems = [f"unknown argument {name!r}" for name in arguments if name not in known]
        values = {}
        for param in self.params:
            if param.name not in arguments:
                if param.required:
                    problems.append(f"missing argument {param.name!r}")
                values[param.name] = param.default
            elif not param.fits(arguments[param.name]):
                problems.append(f"argument {param.name!r} is not of type {param.type}")
            else:
                values[param.name] = arguments[param.name]
        if problems:
            raise ToolError("; ".join(problems))
        return self.run(**values)


def _result(value: Any) -> dict[str, Any]:
    """A tool's value as the SDK sends it: text content (one item per list element) and structured content."""
    items = value if isinstance(value, list) else [value]
    return {"content": [{"type": "text", "text": json.dumps(item, indent=2)} for item in items],
            "structuredContent": value if isinstance(value, dict) else {"result": value}, "isError": False}


class Server:
    """Answers one JSON-RPC message at a time; `serve` reads them from a stream until it ends."""

    def __init__(self, name: str, version: str, instructions: str, tools: list[Tool]) -> None:
        self.info = {"name": name, "version": version}
        self.instructions = instructions
        self.tools = {tool.name: tool for tool in tools}

    def serve(self, reader: IO[bytes], writer: IO[bytes]) -> None:
        for line in reader:
            if line.strip():
                answer = self.answer(line)
                if answer is not None:
                    try:
                        writer.write(json.dumps(answer, separators=(",", ":")).encode("utf-8") + b"\n")
                        writer.flush()
                    except BrokenPipeError:
                        return  # the client went away: nothing left to serve

    def answer(self, line: bytes) -> dict[str, Any] | None:
        """The response to one line, None for a notification."""
        try:
            message = json.loads(line)
        except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON, or nested past the parser's depth
            return _error(None, PARSE_ERROR, f"Parse error: {type(exc).__name__}: {str(exc)[:200]}")
        if not isinstance(message, dict):
            return _error(None, INVALID_REQUEST, "Invalid request: not a JSON object")
        if "method" not in message:
            return None  # a response: this server sends no requests, so there is nothing to answer
        if message.get("jsonrpc") != "2.0" or not isinstance(message["method"], str):
            return _error(message.get("id"), INVALID_REQUEST, "Invalid request")
        if "id" not in message:
            return None  # notifications (initialized, cancelled, …) need no answer
        params = message.get("params") or {}
        if not isinstance(params, dict):
            return _error(message["id"], INVALID_PARAMS, "params must be an object")
        handler = self._handlers().get(message["method"])
        if handler is None:
            return _error(message["id"], METHOD_NOT_FOUND, "Method not found", message["method"])
        return {"jsonrpc": "2.0", "id": message["id"], "result": handler(params)}

    def _handlers(self) -> dict[str, Callable[[dict[str, Any]], dict[str, Any]]]:
        return {"initialize": self._initialize, "ping": lambda _: {}, "tools/list": self._list,
                "tools/call": self._call, "resources/list": lambda _: {"resources": []},
                "resources/templates/list": lambda _: {"resourceTemplates": []},
                "prompts/list": lambda _: {"prompts": []}}

    def _initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        asked = params.get("protocolVersion")
        version = asked if asked in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1]
        return {"protocolVersion": version, "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": self.info, "instructions": self.instructions}

    def _list(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"tools": [tool.listing() for tool in self.tools.values()]}

    def _call(self, params: dict[str, Any]) -> dict[str, Any]:
        name, arguments = params.get("name"), params.get("arguments") or {}
        tool = self.tools.get(name) if isinstance(name, str) else None
        try:
            if tool is None:
                raise ToolError(f"Unknown tool: {name}")
            if not isinstance(arguments, dict):
                raise ToolError("arguments must be an object")
            return _result(tool.call(arguments))
        except ToolError as exc:
            text = str(exc) if tool is None else f"Error executing tool {tool.name}: {exc}"
        except Exception as exc:  # a provider's bug is that call's error (as the SDK reports it), not the end of the server
            text = f"Error executing tool {name}: {type(exc).__name__}: {exc}"
        return {"content": [{"type": "text", "text": text}], "isError": True}


def _error(ident: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message, **({"data": data} if data is not None else {})}
    return {"jsonrpc": "2.0", "id": ident, "error": error}
