"""Agents left behind by a run whose `strawpot` process died (killed, crashed): find them and stop them.

Only used when the run's Denden server does not answer. A recorded pid is signalled only while
/proc/<pid>/environ still names this run and this agent, so a recycled pid is never hit (Linux; elsewhere
nothing is signalled and the user is told).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

from orchestrator.session import CANCELLED, FINAL_STATES, SESSION_FILE, STOPPED_EXIT_CODE
from strawpot.model.fs import atomic_write


def owner_alive(data: dict[str, Any]) -> bool:
    pid = data.get("owner_pid")
    if not isinstance(pid, int):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _is_agent(pid: int, run_id: str, agent_id: str) -> bool:
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False
    return f"DENDEN_RUN_ID={run_id}".encode() in environ and f"DENDEN_AGENT_ID={agent_id}".encode() in environ


def stop_orphans(run_dir: Path, data: dict[str, Any]) -> list[str]:
    """Kill the process group of every agent still running for this dead run; record the run as cancelled."""
    run_id = str(data.get("run_id"))
    stopped = []
    for agent in data.get("agents", []):
        pid = agent.get("pid")
        if agent.get("state") in FINAL_STATES or not isinstance(pid, int):
            continue
        if _is_agent(pid, run_id, agent["agent_id"]):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)  # each agent leads its own group (the attached root excepted)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
            stopped.append(agent["agent_id"])
        agent.update(state=CANCELLED, exit_code=STOPPED_EXIT_CODE)
    data.update(state=CANCELLED, exit_code=STOPPED_EXIT_CODE, ended_at=time.time())
    atomic_write(run_dir / SESSION_FILE, json.dumps(data, indent=2) + "\n")
    return stopped
