"""Check a project is fit to run, then assemble a run (staging, bindings, Denden server, session) and run it.

Used by `strawpot start` and `strawpot resume` (and the tests): nothing here spawns an agent until
`Launch.run_to_end` (or `Launch.start_root`).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.ask import Asker
from orchestrator.binding import Binder, BindingError
from orchestrator.confine import session_sandbox
from orchestrator.endpoint import UnixSocket, default_transport, listen_for, socket_bases
from orchestrator.envvars import EnvNeed, EnvValues, package_needs
from orchestrator.inputs import run_inputs
from orchestrator.interrupts import sigterm_as_interrupt
from orchestrator.isolation import ACTIVE, KEPT, IsolatedEnv, Isolator, Merged, NoIsolation
from orchestrator.isolators import end_isolation, isolator_for, isolator_of
from orchestrator.memory import DEFAULT_PROMPT_BYTES
from orchestrator.memory_providers import GuardedMemory, open_memory
from orchestrator.policy import Policy
from orchestrator.run import Finished, LiveAgent, Run
from orchestrator.run_token import drop_token, save_token
from orchestrator.runtime import RuntimeFailure
from orchestrator.server import DendenServer
from orchestrator.session import STOPPED_EXIT_CODE, Session, State, command_exit_code
from orchestrator.staging import Stager, StagingError
from orchestrator.tmux import forget_own_socket
from orchestrator.worktree import WorktreeIsolator, reopened
from sandbox.walls import SandboxSettings
from strawpot.model.child_env import EnvPolicy
from strawpot.model.errors import IntegrityFailure, MissingToolError, StrawpotError, UsageError
from strawpot.model.installed import InstalledTree
from strawpot.model.kinds import Kind
from strawpot.model.layout import LOCK_NAME, Project, leads_out
from strawpot.model.lockfile import Lockfile
from strawpot.model.manifest import Manifest
from strawpot.model.plural import count, noun
from strawpot.model.settings import Settings

MAX_LISTED = 20
DENDEN = "denden"  # the skill whose program agents delegate, remember and recall with


@dataclass
class Prepared:
    """A verified project: what `start` checked before spawning anything."""

    project: Project
    manifest: Manifest
    lock: Lockfile
    stager: Stager
    binder: Binder
    policy: Policy
    role: str
    env: EnvValues
    env_needs: list[EnvNeed]
    transport: str = field(default_factory=default_transport)  # how Denden listens ([denden] transport)
    isolator: Isolator = field(default_factory=NoIsolation)  # where the agents work ([session] isolation)
    memory_provider: str = "builtin"  # [memory] provider
    memory_prompt_bytes: int = DEFAULT_PROMPT_BYTES  # [memory] max_prompt_bytes
    inputs: dict[str, Any] = field(default_factory=dict)  # what the run ran from (orchestrator/inputs.py)
    sandbox: SandboxSettings = field(default_factory=SandboxSettings)  # what confines the agents ([session] sandbox)
    warnings: list[str] = field(default_factory=list)  # said once when the run starts (staging_warnings)

    def missing_env(self) -> list[EnvNeed]:
        return self.env.missing(self.env_needs)

    def env_for(self, agent: str, role: str) -> dict[str, str]:
        """What to add to the environment of `agent` playing `role`: its variables and its skills'."""
        return self.env.exported(agent_needs(self.stager, agent, role))

    def missing_for(self, role: str) -> str:
        """Why the agent bound to `role` cannot start for lack of required variables; "" when it can.

        `start` checked the roles its own role reaches by name; a role reached only through `*` is checked
        here, when it is first delegated to.
        """
        try:
            agent = self.binder.binding(role).agent
        except BindingError:
            return ""  # the spawn reports it
        missing = self.env.missing(agent_needs(self.stager, agent, role))
        if not missing:
            return ""
        tables = ", ".join(dict.fromkeys(f"[{n.kind.plural}.{n.package}.env]" for n in missing))
        return (f"role {role!r} cannot start: required {noun(len(missing), 'environment variable')} not set: "
                + "; ".join(n.describe() for n in missing)
                + f". The user can export {'it' if len(missing) == 1 else 'them'}, or set "
                  f"{'it' if len(missing) == 1 else 'them'} under {tables} in the global strawpot config")


def reachable_roles(stager: Stager, role: str) -> list[str]:
    """`role` and every role an agent of the run may be delegated to from it by name (not through `*`)."""
    seen: dict[str, None] = {}
    queue = [role]
    while queue:
        current = queue.pop(0)
        if current in seen or stager.lock.get(Kind.ROLE, current) is None:
            continue
        seen[current] = None
        queue += sorted(d.name for d in stager.locked(Kind.ROLE, current).dependencies if d.kind is Kind.ROLE)
    return list(seen)


def agent_needs(stager: Stager, agent: str, role: str) -> list[EnvNeed]:
    """The variables `agent` and the skills staged for `role` declare."""
    packages = [(Kind.AGENT, agent)] + [(Kind.SKILL, s) for s in stager.skill_closure(role)]
    return [need for kind, name in packages for need in package_needs(kind, name, stager.package(kind, name).env)]


def env_needs(stager: Stager, binder: Binder, roles: list[str]) -> list[EnvNeed]:
    """Every variable the agents bound to `roles` and the skills staged for them declare (each once)."""
    found: dict[tuple[Kind, str, str], EnvNeed] = {}
    for role in roles:
        for need in agent_needs(stager, binder.binding(role).agent, role):
            found.setdefault((need.kind, need.package, need.spec.name), need)
    return list(found.values())


def attached_files(project: Project) -> tuple[list[Path], str]:
    """The `--files-dir` folders of a run (the project's `.strawpot/files` when it exists) and a warning,
    if that folder is a link out of the project (then it is not passed)."""
    folder = project.files_dir
    if not folder.is_dir():
        return [], ""
    base = project.tree_root if project.is_global else project.dir
    if leads_out(folder, base.resolve()):
        return [], (f"{folder} is a link out of the project (to {os.path.realpath(folder)}); "
                    "it is not given to the agents as --files-dir")
    return [folder], ""


def prepare(project: Project, settings: Settings, *, role: str | None = None, cli_agent: str | None = None,
            environ: Mapping[str, str] | None = None, params: Mapping[str, str] | None = None,
            saved_env: Mapping[tuple[Kind, str], Mapping[str, str]] | None = None) -> Prepared:
    """Verify the installed tree against strawpot.lock, every bound agent's tools, and the params.

    `settings` is the effective settings (policy, role, runtime, agents' params, Denden transport).

    `params` are `start --param` values for the agent of the started role; `saved_env` the `[<kinds>.<name>.env]`
    tables of the global config. Missing environment variables are not an error here: `missing_env()` lists
    them, for the caller to ask for or to refuse with.
    """
    manifest = Manifest.read(project.manifest_path)  # read only (tomllib): tomlkit keeps a layout for edits
    lock = Lockfile.load(project.lock_path)
    tree = InstalledTree(project.tree_root)
    mismatches = tree.verify(lock)
    if mismatches:
        listed = "\n".join(f"  {m}" for m in mismatches[:MAX_LISTED])
        more = f"\n  … and {len(mismatches) - MAX_LISTED} more" if len(mismatches) > MAX_LISTED else ""
        raise IntegrityFailure(
            f"the installed packages do not match {LOCK_NAME}:\n{listed}{more}",
            hint="run `strawpot sync` to reinstall exactly what the lock records",
        )
    policy = Policy.from_settings(settings)
    transport = settings.get("denden.transport")
    role = role or settings.get("orchestrator.role")
    if not role:
        raise UsageError("no role to start", hint="pass --role, or set [orchestrator].role in strawpot.toml")
    if lock.get(Kind.ROLE, role) is None:
        from strawpot.model.suggest import did_you_mean

        installed = [p.name for p in lock.packages if p.kind is Kind.ROLE]
        hint = (did_you_mean(role, installed, show="`--role {}` (installed)")
                or f"run `strawpot install role {role}`")
        raise UsageError(f"role {role!r} is not installed", hint=hint)
    stager = Stager(tree, lock, settings.get("session.always_stage"))
    environ = dict(os.environ if environ is None else environ)
    binder = Binder(stager, manifest, settings, cli_agent=cli_agent, environ=environ, param_overrides=params)
    binder.check_runtime_flag()
    if params:
        with contextlib.suppress(BindingError):  # an unbound role is reported by problems() below
            binder.params_for = binder.binding(role).agent
    problems = binder.problems(sorted(stager.installed_roles))
    if problems:
        raise MissingToolError("cannot start agents:\n" + "\n".join(f"  {p}" for p in problems),
                               hint="install what is missing, then run `strawpot start` again")
    needs = env_needs(stager, binder, reachable_roles(stager, role))
    isolator = isolator_for(settings)
    isolator.check(project.dir)
    sandbox = checked_sandbox(settings, transport)
    return Prepared(project, manifest, lock, stager, binder, policy, role, EnvValues(environ, saved_env or {}), needs,
                    transport=transport, isolator=isolator, memory_provider=settings.get("memory.provider"),
                    memory_prompt_bytes=settings.get("memory.max_prompt_bytes"),
                    inputs=run_inputs(project.lock_path, lock, policy, settings), sandbox=sandbox,
                    warnings=staging_warnings(stager, settings, reachable_roles(stager, role)))


def staging_warnings(stager: Stager, settings: Settings, roles: list[str]) -> list[str]:
    """What the agents of a run will lack: `[session] always_stage` skills the user named that are not locked,
    and `denden` when a role of the run delegates (its `roles` list, or its text names `denden`) without it."""
    found: list[str] = []
    if stager.not_locked and settings.origin("session.always_stage").layer != "default":
        found.append(f"{settings.origin('session.always_stage')}: [session] always_stage names "
                     f"{', '.join(stager.not_locked)}, not locked in this project; agents run without "
                     f"{'it' if len(stager.not_locked) == 1 else 'them'} (`strawpot install skill "
                     f"{' '.join(stager.not_locked)}` adds {'it' if len(stager.not_locked) == 1 else 'them'})")
    if stager.lock.get(Kind.SKILL, DENDEN) is None:
        delegating = [r for r in roles if delegates(stager, r)]
        if delegating:
            found.append(f"role {delegating[0]} delegates, but the {DENDEN} skill is not locked: its agents have no "
                         f"`{DENDEN}` program to delegate, remember or recall with; run `strawpot install skill "
                         f"{DENDEN}`")
    return found


def delegates(stager: Stager, role: str) -> bool:
    """Whether `role` means to delegate: it lists roles (or `*`), or its text tells its agent to use `denden`."""
    package = stager.package(Kind.ROLE, role)
    return bool(stager.delegatable_roles(role)[0]) or package.roles_wildcard or DENDEN in package.body


def checked_sandbox(settings: Settings, transport: str) -> SandboxSettings:
    """`[session] sandbox` as set, once it is known to work here (else exit 7: never run unconfined)."""
    sandbox = session_sandbox(settings)
    if sandbox.confined and not sandbox.network and transport != "unix":
        raise UsageError('[sandbox] network = "off" leaves agents no way to reach Denden over TCP',
                         hint='set [denden] transport = "unix", or [sandbox] network = "on"')
    sandbox.sandbox.check()
    return sandbox


def missing_env_error(missing: list[EnvNeed]) -> MissingToolError:
    """Exit 7 naming every missing variable with its description."""
    listed = "\n".join(f"  {n.describe()}" for n in missing)
    return MissingToolError(
        f"{count(len(missing), 'required environment variable')} not set:\n{listed}",
        hint="export them, put them under [agents.<name>.env] / [skills.<name>.env] in the global config "
             "(`strawpot config` shows where it is), or run `strawpot start` on a terminal to be asked",
    )


def reopened_env(session: Session, base_dir: Path) -> IsolatedEnv:
    """The recorded environment of a run being resumed; exit 2 when its worktree is gone."""
    if not session.isolation or session.isolation.get("kind", "none") == NoIsolation.name:
        return NoIsolation().create(session.run_id, base_dir)
    env = IsolatedEnv.from_dict(session.isolation)
    if env.state not in (ACTIVE, KEPT) or env.kind != WorktreeIsolator.name:
        raise UsageError(f"the worktree of run {session.run_id} is gone ({env.state}); it cannot be resumed",
                         hint="start a new run")
    env = reopened(env, session.run_id, base_dir)  # where it is, from git: the record may be forged
    if not env.working_dir.is_dir():
        raise UsageError(f"the worktree of run {session.run_id} has no {env.info['rel']}; it cannot be resumed",
                         hint="start a new run")
    env.state = ACTIVE
    return env


def other_runs(project: Project, env: IsolatedEnv, home: str | None) -> list[Path]:
    """Where other runs keep their Denden sockets (any project's) and this project's other runs their record and
    worktrees: hidden from this run's sandboxed agents (a read-only socket still accepts connect()); this run's
    own workspace and socket are bound back in over them.

    /tmp is the sandbox's own already; a socket base holding the project or HOME stays (hiding it would hide them).
    """
    keep = [Path(os.path.realpath(str(p))) for p in (project.dir, env.working_dir, *([home] if home else []))]
    bases = [Path(os.path.realpath(b)) for b in socket_bases()]
    found = [b for b in bases if b != Path("/tmp") and not any(b == k or b in k.parents for k in keep)]
    found.append(project.sessions_dir)
    if env.kind != NoIsolation.name and env.info.get("path"):
        found.append(Path(str(env.info["path"])).parent)  # <git common dir>/strawpot-worktrees
    return found


@dataclass(frozen=True)
class Ended:
    """How a run of `start` or `resume` ended: what the command shows and exits with."""

    run_id: str
    role: str
    state: State  # the run's recorded state: `failed` when the merge-back itself broke
    exit_code: int  # what the command exits with (130 when interrupted)
    output: str  # the orchestrator agent's result text
    merged: Merged  # what became of the run's worktree
    paused: bool = False  # the orchestrator asked to be resumed (`strawpot resume RUN_ID`)
    stopped: tuple[str, ...] = ()  # the agents Ctrl-C or SIGTERM stopped


class Launch:
    """A started Denden server and its run; `close` stops every agent and the server.

    `Launch.start` opens a new run, `Launch.resume` an ended one again; `run_to_end` runs its orchestrator agent.
    """

    def __init__(self, prepared: Prepared, run: Run, server: DendenServer, env: IsolatedEnv,
                 isolator: Isolator) -> None:
        self.prepared = prepared
        self.run = run
        self.server = server
        self.env = env  # where the agents work
        self.isolator = isolator
        self.merged = Merged()

    @classmethod
    def start(cls, prepared: Prepared, *, task: str, asker: Asker, run_id: str | None = None, tmux: str = "",
              base_env: Mapping[str, str] | None = None, observer: Callable[[str, dict[str, Any]], None] | None = None,
              warn: Callable[[str], None] | None = None, env_policy: EnvPolicy | None = None) -> Launch:
        """A new run: its session folder, its isolated environment (a worktree) and its Denden server."""
        project = prepared.project
        session = Session.create(project.sessions_dir, prepared.role, task, run_id, tmux=tmux, observer=observer)
        session.inputs = prepared.inputs
        try:
            env = prepared.isolator.create(session.run_id, project.dir)
        except BaseException:
            session.finish(State.FAILED, None)
            raise
        return cls._serve(prepared, session, env, prepared.isolator, asker=asker, base_env=base_env, warn=warn,
                          env_policy=env_policy)

    @classmethod
    def resume(cls, prepared: Prepared, run_id: str, *, asker: Asker, base_env: Mapping[str, str] | None = None,
               observer: Callable[[str, dict[str, Any]], None] | None = None,
               warn: Callable[[str], None] | None = None, env_policy: EnvPolicy | None = None) -> Launch:
        """The ended run `run_id` again, in its own worktree (`strawpot resume`); exit 2 when that is gone."""
        session = Session.reopen(prepared.project.sessions_dir, run_id, observer=observer)
        env = reopened_env(session, prepared.project.dir)
        return cls._serve(prepared, session, env, isolator_of(env), asker=asker, base_env=base_env, warn=warn,
                          env_policy=env_policy)

    @classmethod
    def _serve(cls, prepared: Prepared, session: Session, env: IsolatedEnv, isolator: Isolator, *, asker: Asker,
               base_env: Mapping[str, str] | None, warn: Callable[[str], None] | None,
               env_policy: EnvPolicy | None) -> Launch:
        """The run of `session` in `env`, with its Denden server listening and its sandbox set."""
        project = prepared.project
        session.isolation_started(env.to_dict())
        for message in prepared.warnings:
            _warn(session, message, warn, event="staging_warning")
        files_dirs, files_warning = attached_files(project)
        if files_warning:
            _warn(session, files_warning, warn, event="files_dir_skipped")
        run = Run(
            session=session, stager=prepared.stager, policy=prepared.policy, bind=prepared.binder,
            project_dir=env.working_dir, asker=asker, memory=_memory(prepared, session, warn), base_env=base_env,
            env_for=prepared.env_for, env_missing=prepared.missing_for, files_dirs=files_dirs,
            env_policy=env_policy,
        )
        try:
            server = DendenServer(run, listen_for(prepared.transport, session.directory))
        except OSError:
            session.finish(State.FAILED, None)
            raise
        run.denden_addr = session.denden_addr = server.address
        run.denden_token = server.token
        if server.token:  # for `strawpot cancel` from another process
            save_token(session.run_id, server.token)
        listen = server.listen
        run.confine(prepared.sandbox, project.dir, project.tree_root,
                    listen.path if isinstance(listen, UnixSocket) else None)
        run.hide(other_runs(project, env, run.base_env.get("HOME")))
        session.save()
        return cls(prepared, run, server, env, isolator)

    @property
    def session(self) -> Session:
        return self.run.session

    def start_root(self, task: str, *, attach: bool = False) -> LiveAgent:
        return self.run.spawn(self.prepared.role, task, None, attach=attach)

    def resume_agent(self, agent_id: str, task: str, *, attach: bool = False) -> LiveAgent:
        """Spawn the recorded agent again with `--resume <its session id>`, in its workspace."""
        record = self.session.agents[agent_id]
        return self.run.spawn(record.role, task, None, attach=attach, again=record)

    def wait_root(self, root: LiveAgent) -> Finished:
        return self.run.wait(root, None)

    def run_to_end(self, task: str, *, attach: bool, agent: str | None = None) -> Ended:
        """Run the orchestrator agent (or resume the recorded `agent`) to its end, stop everything, merge back.

        Ctrl-C or SIGTERM stops every agent and ends the run `interrupted` (exit code 130). A root agent that
        cannot be staged, bound or spawned ends it `failed`, raised as one line (exit 1).
        """
        try:
            with sigterm_as_interrupt():
                root = (self.resume_agent(agent, task, attach=attach) if agent
                        else self.start_root(task, attach=attach))
                done = self.wait_root(root)
        except KeyboardInterrupt:
            stopped = self.close(State.INTERRUPTED, STOPPED_EXIT_CODE)
            return Ended(self.session.run_id, self.prepared.role, State.INTERRUPTED, STOPPED_EXIT_CODE, "",
                         self.merged, stopped=tuple(stopped))
        except (StagingError, RuntimeFailure, BindingError) as exc:
            self.close(State.FAILED, None)
            raise StrawpotError(f"could not start role {self.prepared.role}: {exc}") from None
        finally:
            if self.session.tmux:
                forget_own_socket()
        self.close(done.state, done.exit_code, summary=done.output)
        state = self.session.state
        code = command_exit_code(state, done.exit_code) or (1 if state == State.FAILED else 0)
        return Ended(self.session.run_id, self.prepared.role, state, code, done.output, self.merged,
                     paused=done.state == State.PAUSED)

    def close(self, state: State, exit_code: int | None, summary: str = "") -> list[str]:
        """Stop everything; a succeeded run's work is merged back (`self.merged` says how), any other is kept.
        `summary` is the main agent's final answer, recorded as the run's."""
        stopped = self.run.shutdown()
        if self.server.token:  # an agent that echoes its environment must not write the secret into session.json
            summary = summary.replace(self.server.token, "[the run's Denden token]")
        self.server.stop()
        drop_token(self.session.run_id)
        self.end_isolation(state)
        self.session.finish(State.FAILED if self.merged.work_lost else state, exit_code, summary)
        return stopped

    def end_isolation(self, state: str) -> None:
        self.merged = end_isolation(self.isolator, self.env, self.prepared.project.dir, state, self.session.run_id)
        self.session.isolation_ended(self.env.to_dict(), self.merged.summary())


def _warn(session: Session, message: str, warn: Callable[[str], None] | None, *, event: str) -> None:
    session.event(event, message=message)
    if warn is not None:
        warn(message)
    else:
        print(f"warning: {message}", file=sys.stderr)


def _memory(prepared: Prepared, session: Session, warn: Callable[[str], None] | None) -> GuardedMemory:
    project, name = prepared.project, prepared.memory_provider

    def report(message: str) -> None:
        _warn(session, message, warn, event="memory_failed")

    return GuardedMemory(lambda: open_memory(name, project), report,
                         prepared.memory_prompt_bytes)
