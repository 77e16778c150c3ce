"""Agents left behind by a run whose `strawpot` process died (killed, crashed): find them and stop them.

Only used when the run's Denden server does not answer. A recorded pid is signalled only while
/proc/<pid>/environ still names this run and this agent, so a recycled pid is never hit (Linux; elsewhere
nothing is signalled and the user is told).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import replace
from pathlib import Path

from orchestrator.run_record import FINAL_STATES, STOPPED_EXIT_CODE, RunRecord, State, write_run


def owner_alive(record: RunRecord) -> bool:
    """Whether the strawpot process that owns the run is still there."""
    return pid_alive(record.owner_pid)


def pid_alive(pid: int | None) -> bool:
    if pid is None or pid <= 0:
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


def stop_orphans(run_dir: Path, record: RunRecord) -> list[str]:
    """Kill the process group of every agent still running for this dead run; record the run as cancelled."""
    stopped = []
    for agent in record.agents:
        if agent.state in FINAL_STATES or agent.pid is None or agent.pid <= 0:
            continue
        if _is_agent(agent.pid, record.run_id, agent.agent_id):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(agent.pid, signal.SIGKILL)  # each agent leads its own group (the attached root excepted)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(agent.pid, signal.SIGKILL)
            stopped.append(agent.agent_id)
    agents = tuple(a if a.state in FINAL_STATES or a.pid is None
                   else replace(a, state=State.CANCELLED, exit_code=STOPPED_EXIT_CODE) for a in record.agents)
    write_run(run_dir, replace(record, state=State.CANCELLED, exit_code=STOPPED_EXIT_CODE, ended_at=time.time(),
                               agents=agents))
    return stopped
