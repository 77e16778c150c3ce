"""One run of `strawpot start`: spawn agents, serve their Denden requests, delegate under policy, cancel.

Delegation = policy check → stage → spawn → wait (policy.agent_timeout) → result. The result of an agent
is the text it wrote to the file `result` in its workspace (`--agent-workspace-dir`); an agent that wrote
none answers with the last non-empty line of its log. With a JSON return format that text must be a JSON
object. Each delegation blocks only its own gRPC worker thread, so nested and repeated delegations of the
same task run side by side and never wait on each other.
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from orchestrator.ask import Asker
from orchestrator.binding import Binder
from orchestrator.confine import Confined, denials
from orchestrator.memory import EntryTooLarge, MemoryProvider
from orchestrator.outcome import (
    DENY_MISSING_ENV,
    ERR_INVALID_RESULT,
    ERR_SPAWN_FAILED,
    ERR_SUBAGENT_CANCELLED,
    ERR_SUBAGENT_FAILURE,
    ERR_SUBAGENT_TIMEOUT,
    ERR_TOO_LARGE,
    ERR_UNKNOWN_AGENT,
    Caller,
    Outcome,
)
from orchestrator.policy import Delegator, Denial, Policy, check_delegation
from orchestrator.runtime import AgentProcess, BuildRequest, RuntimeFailure, WrapperRuntime
from orchestrator.session import (
    CANCELLED,
    FAILED,
    PAUSED,
    SUCCEEDED,
    TIMED_OUT,
    AgentRecord,
    Session,
    State,
    exit_code_for,
    new_agent_id,
)
from orchestrator.staging import StagedAgent, Stager, StagingError
from sandbox.paths import bwrap_failure, exposed, git_folders, project_files
from sandbox.walls import SandboxSettings, Walls
from strawpot.model.agent_files import open_regular, remove_entry
from strawpot.model.child_env import EnvPolicy, child_env

RESULT_FILE = "result"
STATUS_FILE = "status"  # an agent that writes `paused` (or `status: paused`) here ends as paused
POLL_INTERVAL = 0.25


@dataclass
class LiveAgent:
    record: AgentRecord
    staged: StagedAgent
    process: AgentProcess | None = None
    cancelled: threading.Event = field(default_factory=threading.Event)
    ended: bool = False  # set once, under the run's lock, by the first `_end`


@dataclass(frozen=True)
class Finished:
    """How an agent ended: its state, exit code and result text (its final output, not its log)."""

    agent_id: str
    state: State
    exit_code: int | None
    output: str


def agent_text(path: Path) -> str:
    """The text of a file the agent wrote, read without following a link (strawpot runs unconfined; the agent may
    not): a note in place of what a link, FIFO or folder there leads to. FileNotFoundError when there is none."""
    try:
        with open_regular(path) as fh:
            return fh.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        raise
    except OSError:
        return (f"(the agent's {path.name} is not a regular file: a link, a FIFO or a folder it planted; "
                "strawpot did not read it)")


def paused(workspace: Path) -> bool:
    try:
        text = agent_text(workspace / STATUS_FILE).strip()
    except FileNotFoundError:
        return False
    return text.removeprefix("status:").strip() == PAUSED


def read_result(workspace: Path, log_tail: str) -> str:
    try:
        return agent_text(workspace / RESULT_FILE).rstrip("\n")
    except FileNotFoundError:
        lines = [line for line in log_tail.splitlines() if line.strip()]
        return bwrap_failure(log_tail) or (lines[-1] if lines else "")


def run_walls(sandbox: SandboxSettings, home: Path | None, working_dir: Path, project_dir: Path, state_dir: Path,
              socket: Path | None = None) -> Walls:
    """The walls of every agent of a run: writable the working tree and the Denden socket; read-only in it the
    installed packages, the repository's git folders (hooks, config: what the user's next git command runs) and
    the project files (what confines the next run), in every isolation mode."""
    protected = (state_dir, *git_folders(working_dir), *git_folders(project_dir),
                 *project_files(project_dir, working_dir))
    return sandbox.walls(home, writable=(working_dir, *([socket] if socket else [])), readable=(project_dir,),
                         protected=protected)


def programs_of(runtime: WrapperRuntime, tools: Sequence[str]) -> list[str | Path]:
    """What an agent may run besides its wrapper's command: its wrapper, the params whose value is an absolute path
    (`python = "/tmp/x/.venv/bin/python"`) and the tools it declares."""
    params = [value for value in runtime.config.values() if isinstance(value, str) and os.path.isabs(value)]
    return [runtime.wrapper, *params, *tools]


class Run:
    """The Backend of the Denden server for one session, and the owner of every process it starts."""

    def __init__(
        self,
        *,
        session: Session,
        stager: Stager,
        policy: Policy,
        bind: Binder,
        project_dir: Path,
        asker: Asker,
        memory: MemoryProvider,
        base_env: Mapping[str, str] | None = None,
        env_for: Callable[[str, str], Mapping[str, str]] | None = None,
        env_missing: Callable[[str], str] | None = None,
        files_dirs: Sequence[Path] = (),
        env_policy: EnvPolicy | None = None,
    ) -> None:
        self.session = session
        self.stager = stager
        self.policy = policy
        self.bind = bind
        self.project_dir = project_dir
        self.asker = asker
        self.memory = memory
        self.base_env = dict(os.environ if base_env is None else base_env)
        self.env_for = env_for  # (agent, role) → the declared variables to export to it
        self.env_missing = env_missing  # role → why its agent cannot get its required variables ("" when it can)
        self.files_dirs = list(files_dirs)  # the project's attached files (`--files-dir`)
        self.env_policy = env_policy  # [session] pass_env / hide_env, and the secret values kept home
        self.denden_addr = ""
        self.denden_token: str | None = None  # the TCP server's secret; None on a Unix socket
        self._agents: dict[str, LiveAgent] = {}
        self._delegations = 0
        self._lock = threading.Lock()
        self._closing = False
        self.sandbox = SandboxSettings()  # `confine` sets it: every agent of the run gets the same walls
        self.walls = Walls()

    def confine(self, sandbox: SandboxSettings, project_dir: Path, state_dir: Path, socket: Path | None) -> None:
        """Spawn every agent (and wrapper call) inside `sandbox`: writable only the working tree, the agent's
        workspace and the Denden socket (`project_dir/.strawpot` stays read-only), secrets under HOME hidden."""
        home = self.base_env.get("HOME")
        self.sandbox = sandbox
        self.walls = run_walls(sandbox, Path(home) if home else None, self.project_dir, project_dir, state_dir, socket)
        self.session.sandbox = sandbox.record(self.walls)

    @property
    def run_id(self) -> str:
        return self.session.run_id

    def hide(self, paths: Sequence[Path]) -> None:
        """Hide `paths` too from every agent of the run, sandboxed (other runs' sockets and folders)."""
        self.walls = replace(self.walls, hidden=(*self.walls.hidden, *paths))

    # -- agents ---------------------------------------------------------------------------------------

    def spawn(self, role: str, task: str, parent: AgentRecord | None = None, *, attach: bool = False,
              again: AgentRecord | None = None) -> LiveAgent:
        """Stage a workspace for `role` and start its agent; raises StagingError or RuntimeFailure.

        `again` is a recorded agent to resume: same id, workspace and conversation, a new process.
        """
        # resumed, it is the agent package it was, whatever binds its role today (a `--runtime` of its start)
        runtime = self.bind.runtime(again.agent) if again else self.bind(role)
        agent_id = again.agent_id if again else new_agent_id(role)
        workspace = self.session.agent_dir(agent_id)
        staged = self.stager.stage(role, workspace)
        record = again.restaged(task) if again else AgentRecord(
            agent_id=agent_id, role=role, agent=runtime.name, parent=parent.agent_id if parent else None,
            depth=parent.depth + 1 if parent else 0, task=task, workspace=str(workspace),
            session_id=str(uuid.uuid4()) if runtime.resume else "", packages=self.stager.staged_packages(role, runtime.name),
            via_wildcard=self.stager.by_wildcard(role), always_staged=self.stager.by_always_stage(role),
        )
        if again:
            remove_entry(workspace / STATUS_FILE)
        live = LiveAgent(record, staged)
        with self._lock:
            if self._closing:
                raise RuntimeFailure("the run is shutting down")
            if parent is not None and (caller := self._agents.get(parent.agent_id)) and caller.cancelled.is_set():
                raise RuntimeFailure(f"agent {parent.agent_id} was cancelled")
            self._agents[agent_id] = live
        self.session.add_agent(record)  # saved (with the session id) before anything is spawned
        protocol = {"DENDEN_ADDR": self.denden_addr, "DENDEN_AGENT_ID": agent_id, "DENDEN_RUN_ID": self.run_id,
                    "STRAWPOT_ROLE": role, **({"DENDEN_PARENT_AGENT_ID": parent.agent_id} if parent else {}),
                    **({"DENDEN_TOKEN": self.denden_token} if self.denden_token else {})}
        env = child_env(self.base_env, self.env_policy, protocol=protocol,  # never a token nor another run's secret
                        declared=self.env_for(runtime.name, role) if self.env_for else None)
        env["PATH"] = os.pathsep.join([*map(str, self.stager.bin_dirs(role, runtime.name)), *(
            [env["PATH"]] if env.get("PATH") else [])])
        request = BuildRequest(
            agent_id=agent_id, working_dir=self.project_dir, workspace=workspace, role_prompt=staged.role_prompt,
            memory_prompt=self.memory.get(self.run_id, agent_id, role, task), task=task, config=runtime.config,
            skills_dirs=[staged.skills_dir], roles_dirs=[staged.roles_dir], files_dirs=self.files_dirs,
            session_id="" if again else record.session_id, resume=record.session_id if again else "",
            role=role,
        )
        # What it runs must show inside the walls wherever it lives (a venv or a tool under /tmp)
        seen = exposed(programs_of(runtime, self.stager.tools_of(runtime.name)), env.get("PATH")) \
            if self.sandbox.confined else []
        try:
            process = runtime.spawn(request, env, attach=attach, confined=Confined(
                self.sandbox.sandbox, self.walls.plus(writable=[workspace], readable=seen)))
        except RuntimeFailure as exc:
            self._end(live, FAILED, None, error=str(exc))
            raise
        with self._lock:  # a cancel that came while it was being staged found no process: stop it now
            live.process, cancelled = process, live.cancelled.is_set()
        if cancelled:
            process.stop(0)
        self.session.agent_started(agent_id, live.process.pid)
        self.session.event("agent_started", agent_id=agent_id, pid=live.process.pid)
        return live

    def wait(self, live: LiveAgent, timeout: float | None = None) -> Finished:
        """Wait for `live` to end; past `timeout` seconds its whole process group is stopped."""
        assert live.process is not None
        deadline = None if timeout is None else time.monotonic() + timeout
        code: int | None = None
        while code is None:
            step = POLL_INTERVAL if deadline is None else min(POLL_INTERVAL, deadline - time.monotonic())
            if step <= 0:
                break
            code = live.process.wait(step)
        if code is None:
            live.process.stop(self.policy.kill_grace)
            state = TIMED_OUT
        elif live.cancelled.is_set():
            state = CANCELLED
        elif code == 0 and paused(live.staged.workspace):
            state = PAUSED
        else:
            state = SUCCEEDED if code == 0 else FAILED
        output = read_result(live.staged.workspace, live.process.log_tail(5))
        if self.sandbox.confined and (denied := denials(live.process.log_tail(200), self.walls)):
            self.session.agent_denied(live.record.agent_id, code, denied)
        self._end(live, state, code)
        if state == SUCCEEDED:
            self.memory.dump(self.run_id, live.record.agent_id, live.record.role, live.record.task, output)
        return Finished(live.record.agent_id, state, code, output)

    def _end(self, live: LiveAgent, state: State, code: int | None, error: str = "") -> None:
        with self._lock:
            if live.ended:
                return
            live.ended = True
        code = exit_code_for(state, code)
        self.session.agent_ended(live.record.agent_id, state, code, error)
        self.session.event("agent_finished", agent_id=live.record.agent_id, state=state, exit_code=code)

    def active_agents(self) -> int:
        with self._lock:
            return sum(1 for a in self._agents.values() if a.process and not a.ended
                       and a.process.poll() is None)

    def descendants(self, agent_id: str) -> list[str]:
        """`agent_id` and every agent below it, parents before children."""
        with self._lock:
            children: dict[str, list[str]] = {}
            for a in self._agents.values():
                if a.record.parent:
                    children.setdefault(a.record.parent, []).append(a.record.agent_id)
        order, queue = [], [agent_id]
        while queue:
            current = queue.pop(0)
            order.append(current)
            queue += children.get(current, [])
        return order

    def stop_agents(self, agent_ids: list[str], *, grace: float) -> list[str]:
        """Mark then stop every listed agent still running (deepest first); the ids that were stopped."""
        with self._lock:
            targets = [self._agents[i] for i in agent_ids if i in self._agents]
            for staged in (a for a in targets if a.process is None and not a.ended):
                staged.cancelled.set()  # spawn() stops it as soon as its process exists
        running = [a for a in targets if a.process is not None and not a.ended]
        for live in running:
            live.cancelled.set()
        threads = [threading.Thread(target=a.process.stop, args=(grace,)) for a in reversed(running) if a.process]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for live in running:
            self._end(live, CANCELLED, live.process.poll() if live.process else None)
        return [a.record.agent_id for a in running]

    def shutdown(self, grace: float | None = None) -> list[str]:
        """Stop every agent this run started (Ctrl-C, the end of `start`)."""
        with self._lock:
            self._closing = True
            ids = list(self._agents)
        return self.stop_agents(ids, grace=self.policy.kill_grace if grace is None else grace)

    # -- Denden backend ---------------------------------------------------------------------------------

    def _caller(self, caller: Caller) -> LiveAgent | None:
        with self._lock:
            live = self._agents.get(caller.agent_id)
        return live if live is not None and not live.ended else None

    def delegate(self, caller: Caller, role: str, task: str, extra: dict[str, Any], want_json: bool) -> Outcome:
        parent = self._caller(caller)
        if parent is None:
            return Outcome.error(ERR_UNKNOWN_AGENT, f"agent {caller.agent_id!r} is not a running agent of this run")
        who = Delegator(parent.record.agent_id, parent.record.role, parent.record.depth,
                           parent.staged.allowed_roles, parent.staged.wildcard)
        with self._lock:
            denial = check_delegation(self.policy, who, role, installed_roles=self.stager.installed_roles,
                                      delegations_so_far=self._delegations)
            if denial is None and self.env_missing is not None and (missing := self.env_missing(role)):
                denial = Denial(DENY_MISSING_ENV, missing)
            if denial is None:
                self._delegations += 1
        self.session.event("delegate", caller=caller.agent_id, role=role, task=task,
                           denied=denial.code if denial else None, reason=denial.message if denial else None)
        if denial is not None:
            return Outcome.denied(denial.code, denial.message)
        try:
            live = self.spawn(role, _task_text(task, extra, want_json), parent.record)
        except (StagingError, RuntimeFailure) as exc:
            return Outcome.error(ERR_SPAWN_FAILED, f"could not start an agent for role {role!r}: {exc}")
        done = self.wait(live, self.policy.agent_timeout)
        return self._delegation_outcome(live, done, want_json)

    def _delegation_outcome(self, live: LiveAgent, done: Finished, want_json: bool) -> Outcome:
        who = f"agent {done.agent_id} (role {live.record.role})"
        if done.state == TIMED_OUT:
            return Outcome.error(ERR_SUBAGENT_TIMEOUT, f"{who} did not finish within {self.policy.agent_timeout:g}s "
                                 "(policy.agent_timeout) and was stopped", retryable=True)
        if done.state == CANCELLED:
            return Outcome.error(ERR_SUBAGENT_CANCELLED, f"{who} was cancelled")
        if done.state not in (SUCCEEDED, PAUSED):
            tail = live.process.log_tail(10) if live.process else ""
            return Outcome.error(ERR_SUBAGENT_FAILURE, f"{who} exited with code {done.exit_code}; "
                                 f"last lines of its log:\n{tail}")
        if not want_json:
            return Outcome.ok(done.output)
        try:
            value = json.loads(done.output)
        except json.JSONDecodeError as exc:
            return Outcome.error(ERR_INVALID_RESULT, f"{who} was asked for JSON but returned invalid JSON ({exc.msg})")
        if not isinstance(value, dict):
            return Outcome.error(ERR_INVALID_RESULT, f"{who} was asked for a JSON object but returned {type(value).__name__}")
        return Outcome.ok(value)

    def cancel(self, caller: Caller, agent_id: str, force: bool) -> Outcome:
        with self._lock:
            known = agent_id in self._agents
        if not known:
            return Outcome.error(ERR_UNKNOWN_AGENT, f"no agent {agent_id!r} in this run")
        stopped = self.stop_agents(self.descendants(agent_id), grace=0 if force else self.policy.kill_grace)
        self.session.event("cancel", caller=caller.agent_id, agent_id=agent_id, cancelled=stopped)
        return Outcome.ok(stopped)

    def ask_user(self, caller: Caller, question: str, choices: list[str], default: str, why: str,
                 want_json: bool) -> Outcome:
        self.session.event("ask_user", caller=caller.agent_id, question=question)
        # a question waiting in the run folder stops waiting once its agent or the run has ended
        return self.asker.ask(caller.agent_id, question, choices, default, why, want_json,
                              run_dir=self.session.directory,
                              stop=lambda: self._closing or self._caller(caller) is None)

    def _role_of(self, caller: Caller) -> str:
        with self._lock:
            live = self._agents.get(caller.agent_id)
        return live.record.role if live is not None else ""

    def remember(self, caller: Caller, content: str, keywords: list[str], scope: str) -> Outcome:
        try:
            return Outcome.ok(self.memory.remember(content, keywords, scope, self._role_of(caller)))
        except EntryTooLarge as exc:
            return Outcome.error(ERR_TOO_LARGE, str(exc))

    def recall(self, caller: Caller, query: str, keywords: list[str], scope: str, max_results: int) -> Outcome:
        return Outcome.ok(self.memory.recall(query, keywords, scope, max_results, self._role_of(caller)))


def _task_text(task: str, extra: dict[str, Any], want_json: bool) -> str:
    """The task as the agent sees it: the text, then any extra fields and the requested format."""
    parts = [task]
    if extra:
        parts.append("Extra (JSON): " + json.dumps(extra, sort_keys=True))
    if want_json:
        parts.append(f"Write your result as one JSON object to the file `{RESULT_FILE}` in your workspace.")
    return "\n\n".join(parts)
