"""This side of a remote session: what it takes (bundle, installed tree, environment) and how what comes back lands."""

from __future__ import annotations

import contextlib
import json
import sys
import tarfile
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from orchestrator.git import GitFailed
from orchestrator.isolation import IsolatedEnv, Merged
from orchestrator.isolators import end_isolation
from orchestrator.launch import Ended, Prepared
from orchestrator.merge import safe_git
from orchestrator.remote_session import Job, Result, pack_tree, unpack_run_folder
from orchestrator.run_record import PRIVATE_FILE, SESSION_FILE, RunRecord, RunRecordBroken, find_run
from orchestrator.session import STOPPED_EXIT_CODE, TRACE_FILE, Session, State, command_exit_code
from orchestrator.worktree import WorktreeIsolator
from strawpot.model.child_env import EnvPolicy, child_env
from strawpot.model.errors import IntegrityFailure, StrawpotError
from strawpot.model.fs import atomic_write, read_own_file
from strawpot.model.settings import SCHEMA, Settings

REF_PREFIX = "refs/strawpot-remote/"
# Settings the remote `start` gets as STRAWPOT_* variables when they are not the project file's (which travels)
SENT_SECTIONS = ("policy.", "session.", "sandbox.", "denden.", "memory.")
NOT_SENT = frozenset({"session.runner", "session.isolation", "session.merge", "session.remote", "session.sandbox"})


def job_for(prepared: Prepared, env: IsolatedEnv, settings: Settings, *, run_id: str, task: str,
            params: Mapping[str, str], cli_agent: str | None, env_policy: EnvPolicy | None,
            environ: Mapping[str, str]) -> Job:
    """What travels: the base (a one-commit bundle of the tree the session starts from), the verified installed
    tree with its lock, the `start` options and the allowed environment (the allow-list local agents get, with
    `pass_env`, plus the values of the variables the run's packages declare)."""
    g = safe_git(env)
    ref = f"{REF_PREFIX}{run_id}"
    identity = () if g.text("config", "user.email", check=False).strip() else \
        ("-c", "user.name=strawpot", "-c", "user.email=strawpot@localhost")
    commit = g.text(*identity, "-c", "commit.gpgsign=false", "commit-tree", str(env.info["base_tree"]),
                    "-m", f"strawpot: base of session {run_id}").strip()
    with tempfile.TemporaryDirectory(prefix="strawpot-bundle-") as scratch:
        g.out("update-ref", ref, commit)
        try:
            g.out("bundle", "create", "-q", f"{scratch}/base.bundle", ref)
        finally:
            g.out("update-ref", "-d", ref, check=False)
        bundle = Path(scratch, "base.bundle").read_bytes()
    project = prepared.project
    args = ["--role", prepared.role, "--task", task, "--isolation", "none",
            "--sandbox", settings.get("session.sandbox")]
    args += ["--runtime", cli_agent] if cli_agent else []
    for name, value in params.items():
        args += ["--param", f"{name}={value}"]
    declared = prepared.env.exported(prepared.env_needs)
    return Job(run_id=run_id, bundle=bundle, tree=pack_tree(project.tree_root), lock=read_own_file(project.lock_path),
               manifest=read_own_file(project.manifest_path), rel=str(env.info.get("rel", "")), args=tuple(args),
               ref=ref, env={**child_env(environ, env_policy, declared=declared), **sent_settings(settings)})


def sent_settings(settings: Settings) -> dict[str, str]:
    """The run's settings that did not come from the project file, as the STRAWPOT_* variables that set them."""
    found = {}
    for name, key in SCHEMA.items():
        origin = settings.origin(name).layer
        if not name.startswith(SENT_SECTIONS) or name in NOT_SENT or key.env_var is None or \
                origin in ("default", "project"):
            continue
        value = settings.get(name)
        found[key.env_var] = ",".join(value) if isinstance(value, list | tuple) else \
            str(value).lower() if isinstance(value, bool) else str(value)
    return found


def land(session: Session, env: IsolatedEnv, isolator: WorktreeIsolator, base: Path, result: Result, *,
         interrupted: bool = False, cancelled: bool = False, observer: Callable[[str, dict[str, Any]], None] | None = None,
         warn: Callable[[str], None] | None = None, shown: int = 0) -> Ended:
    """Fill the run folder from what came back, put the patch into the run's worktree and end it there as a local
    worktree session ends (`end_isolation`: the same all-or-nothing merge-back). `cancelled`: `strawpot cancel`
    stopped it (it ends `cancelled`, as a local run does); `shown`: how many of the remote run's events the observer
    was told as it ran."""
    where = f"Ray node {result.node} ({result.host})"
    session.runner = {**session.runner, "node": result.node, "host": result.host}
    if result.refused:
        fail(session, env, isolator, base)
        raise IntegrityFailure(f"the worker on {where} refused run {session.run_id}: {result.refused}",
                               hint="nothing was started and your working tree is as it was; run `strawpot sync` "
                                    "here and check the worker's strawpot version, then start again")
    if result.cancelled:  # `strawpot cancel` before the session began there: nothing ran, nothing to bring back
        isolator.cleanup(env, base)
        session.isolation_ended(env.to_dict(), "")
        session.finish(State.CANCELLED, None)
        return Ended(session.run_id, session.role, session.state, STOPPED_EXIT_CODE, "", Merged())
    try:
        remote = fill_folder(session, result.record, observer, shown)
    except CannotLand as exc:
        fail(session, env, isolator, base)
        raise IntegrityFailure(f"the run folder {where} sent back for run {session.run_id} cannot be unpacked "
                               f"here: {exc}", hint="your working tree is as it was; the error names the archive's "
                                                     "fault or this machine's; start again once it is mended") from None
    if result.left_out:
        session.event("runner_left_out", files=list(result.left_out[:100]), total=len(result.left_out))
        say = f"{len(result.left_out)} file(s) or folder(s) of the run folder on {where} were too large or too " \
              f"many to bring back: " \
              f"{', '.join(result.left_out[:3])}{' …' if len(result.left_out) > 3 else ''}"
        (warn or _stderr)(say)
    if remote is None:
        fail(session, env, isolator, base)
        if SESSION_FILE in result.left_out:
            raise StrawpotError(f"run {session.run_id} on {where} ended, but its {SESSION_FILE} was too large to "
                                f"bring back: the run is failed here and its work left on the worker")
        raise StrawpotError(f"run {session.run_id} on {where} ended before its session began: "
                            f"{result.error or f'exit code {result.exit_code}'}")
    state, problem = State.CANCELLED if cancelled and remote.state == State.INTERRUPTED else remote.state, ""
    if result.patch:
        try:
            safe_git(env).out("apply", "--binary", "--whitespace=nowarn", "-", input_bytes=result.patch)
        except GitFailed as exc:
            state, problem = State.FAILED, f"the session's patch from {where} does not apply to its base: {exc.detail}"
    merged = end_isolation(isolator, env, base, state, session.run_id)
    if problem:
        merged = replace(merged, error=StrawpotError(problem, hint=merged.message or None), message="")
    session.isolation_ended(env.to_dict(), merged.summary())
    ended_state = State.FAILED if merged.work_lost or problem else state
    session.finish(ended_state, remote.exit_code, remote.summary)
    code = STOPPED_EXIT_CODE if interrupted else \
        command_exit_code(ended_state, remote.exit_code) or (1 if ended_state == State.FAILED else 0)
    return Ended(session.run_id, session.role, session.state, code, remote.summary, merged,
                 paused=state == State.PAUSED,
                 stopped=tuple(a.agent_id for a in remote.agents if a.state == State.CANCELLED))


def fail(session: Session, env: IsolatedEnv, isolator: WorktreeIsolator, base: Path) -> None:
    """The run ends failed with nothing of it brought back: its (untouched) worktree and branch removed."""
    isolator.cleanup(env, base)
    session.isolation_ended(env.to_dict(), "")
    session.finish(State.FAILED, None)


class CannotLand(Exception):
    """The run folder that came back cannot be unpacked into this one (what is wrong, as one line)."""


def fill_folder(session: Session, record: bytes, observer: Callable[[str, dict[str, Any]], None] | None,
                shown: int = 0) -> RunRecord | None:
    """The remote run folder's files into the local one (agents' workspaces, logs, trace), its agents into the
    local record with their workspaces here; the remote record, or None when the session never began there. The
    observer is told the events after the first `shown` (those it was told as the run went). CannotLand when
    what came back cannot be unpacked here."""
    if not record:
        return None
    with tempfile.TemporaryDirectory(prefix="strawpot-landing-") as scratch:
        # the remote record and trace land aside: readers of the run folder never see either half-written or
        # the remote record in place of this run's (session.save below writes that)
        aside = Path(scratch) / session.run_id
        try:
            unpack_run_folder(record, session.directory, {SESSION_FILE: aside, TRACE_FILE: aside})
        except (tarfile.TarError, EOFError, OSError, ValueError, RecursionError, OverflowError) as exc:
            # damaged, cut short, refused or no room here (the last two: a backstop to the walk before tarfile)
            raise CannotLand(str(exc)) from None
        try:
            remote = find_run(Path(scratch), session.run_id)
        except RunRecordBroken as exc:  # the session began there, but what it says cannot be taken
            raise CannotLand(f"its {SESSION_FILE} is not a run record: {exc.reason}") from None
        if remote is None:
            return None
        try:
            lines = (aside / TRACE_FILE).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:  # no trace came back: this run's stays
            lines = None
        if lines is not None:
            events = []
            for line in lines:
                with contextlib.suppress(ValueError, RecursionError):
                    event = json.loads(line)
                    if isinstance(event, dict) and event.get("event") != "run_finished":
                        events.append(line)
                        if event.get("event") != "run_started":
                            if observer is not None and shown <= 0:
                                observer(str(event.get("event")), event)
                            shown -= 1
            atomic_write(session.directory / TRACE_FILE, "".join(f"{line}\n" for line in events), mode=PRIVATE_FILE,
                         durable=False)
    session.agents = {a.agent_id: replace(a, workspace=str(session.agent_dir(a.agent_id))) for a in remote.agents}
    session.sandbox = dict(remote.sandbox)
    session.save()
    return remote


def _stderr(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)
