"""The Denden server of a run on a remote runner, on this machine: `strawpot cancel RUN_ID` reaches the run here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from orchestrator.outcome import ERR_NO_USER, ERR_UNKNOWN_AGENT, Caller, Outcome

WHOLE = "the remote session"  # what a cancel stopped, as `strawpot cancel` lists it


class RemoteControl:
    """A Backend that only cancels: the whole remote session (its agents and their Denden server live on the worker,
    so no agent here delegates, asks, remembers or recalls)."""

    def __init__(self, run_id: str, stop: Callable[[], object]) -> None:
        self._run_id = run_id
        self._stop = stop
        self.cancelled = False

    @property
    def run_id(self) -> str:
        return self._run_id

    def cancel(self, caller: Caller, agent_id: str, force: bool) -> Outcome:
        if agent_id != self._run_id:
            return Outcome.error(ERR_UNKNOWN_AGENT, f"run {self._run_id} runs on a remote worker: only the whole run "
                                                    "can be cancelled (`strawpot cancel RUN_ID`, without --agent)")
        self.cancelled = True
        self._stop()
        return Outcome.ok([WHOLE])

    def delegate(self, caller: Caller, role: str, task: str, extra: dict[str, Any], want_json: bool) -> Outcome:
        return self._elsewhere()

    def ask_user(self, caller: Caller, question: str, choices: list[str], default: str, why: str,
                 want_json: bool) -> Outcome:
        return self._elsewhere()

    def remember(self, caller: Caller, content: str, keywords: list[str], scope: str) -> Outcome:
        return self._elsewhere()

    def recall(self, caller: Caller, query: str, keywords: list[str], scope: str, max_results: int) -> Outcome:
        return self._elsewhere()

    def active_agents(self) -> int:
        return 0

    def _elsewhere(self) -> Outcome:
        return Outcome.error(ERR_NO_USER, f"run {self._run_id} runs on a remote worker; its agents talk to the "
                                          "Denden server there")
