"""`strawpot start --progress json`: one JSON object per line on stderr for each spawn, delegate, deny and end.

Every line carries `"v": 1`, `"ts"` (Unix time), `"run_id"` and `"event"`:
- `spawn`: `agent_id`, `role`, `agent` (the agent package), `parent` (null for the orchestrator), `pid`;
- `delegate`: `from` (the calling agent id), `role`, `task`;
- `deny`: `from`, `role`, `code` (a `DENY_*` code), `message`;
- `sandbox_denied`: `agent_id`, `exit_code`, `evidence` (log lines where a sandboxed agent was refused
  something: a read-only file system, a permission, the network; best effort);
- `end` of an agent: `scope: "agent"`, `agent_id`, `state`, `exit_code`;
- `end` of the run: `scope: "run"`, `state`, `exit_code`.
The lines are built from the run's trace events (trace.jsonl), so the two never disagree.
"""

from __future__ import annotations

import json
import threading
import time
from typing import IO, Any

PROGRESS_FORMAT = 1


WARNING_EVENTS = frozenset({"staging_warning", "files_dir_skipped", "memory_failed"})  # said once as a warning


class JsonProgress:
    """A Session observer that writes progress lines to `stream` (one write and flush per line)."""

    def __init__(self, stream: IO[str], run_id: str) -> None:
        self.stream = stream
        self.run_id = run_id
        self._staged: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def __call__(self, kind: str, data: dict[str, Any]) -> None:
        line = self._line(kind, data)
        if line is None:
            return
        text = json.dumps({"v": PROGRESS_FORMAT, "ts": round(time.time(), 3), "run_id": self.run_id, **line},
                          default=str)
        with self._lock:
            self.stream.write(text + "\n")
            self.stream.flush()

    def _line(self, kind: str, data: dict[str, Any]) -> dict[str, Any] | None:
        if kind == "agent_staged":
            self._staged[data["agent_id"]] = data
            return None
        if kind == "agent_started":
            staged = self._staged.get(data["agent_id"], {})
            return {"event": "spawn", "agent_id": data["agent_id"], "role": staged.get("role"),
                    "agent": staged.get("agent"), "parent": staged.get("parent"), "pid": data.get("pid")}
        if kind == "delegate":
            if data.get("denied"):
                return {"event": "deny", "from": data.get("caller"), "role": data.get("role"),
                        "code": data["denied"], "message": data.get("reason")}
            return {"event": "delegate", "from": data.get("caller"), "role": data.get("role"), "task": data.get("task")}
        if kind == "sandbox_denied":
            return {"event": "sandbox_denied", "agent_id": data["agent_id"], "exit_code": data.get("exit_code"),
                    "evidence": data.get("evidence", [])}
        if kind == "agent_finished":
            return {"event": "end", "scope": "agent", "agent_id": data["agent_id"], "state": data.get("state"),
                    "exit_code": data.get("exit_code")}
        if kind in WARNING_EVENTS:
            return {"event": "warning", "message": data.get("message")}
        if kind == "run_finished":
            return {"event": "end", "scope": "run", "state": data.get("state"), "exit_code": data.get("exit_code")}
        return None
