"""`strawpot doctor`: can every locked agent run here? Each problem comes with the command or step that fixes it."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator.binding import Binder, BindingError, Problem
from orchestrator.envvars import EnvValues, package_needs
from orchestrator.staging import StagingError
from strawpot.model.errors import MissingToolError, UsageError
from strawpot.model.kinds import Kind
from strawpot.model.settings import Settings

if TYPE_CHECKING:
    from sandbox.walls import SandboxSettings

_MISSING = 'for p; do [ -e "$p" ] || printf "%s\\n" "$p"; done'  # prints each argument that does not exist


@dataclass
class AgentReport:
    agent: str
    version: str
    wrapper: str = ""
    problems: list[Problem] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"agent": self.agent, "version": self.version, "wrapper": self.wrapper, "ok": not self.problems,
                "problems": [{"problem": p.what, "fix": p.fix} for p in self.problems], "hints": self.hints}


def check_agents(binder: Binder, env: EnvValues, config_file: str) -> list[AgentReport]:
    """One report per agent of the lock, in name order."""
    reports = []
    for locked in sorted((p for p in binder.stager.lock.packages if p.kind is Kind.AGENT), key=lambda p: p.name):
        report = AgentReport(locked.name, locked.version)
        reports.append(report)
        try:
            package = binder.stager.package(Kind.AGENT, locked.name)
            runtime = binder.runtime(locked.name)
        except (StagingError, BindingError) as exc:
            report.problems.append(Problem(locked.name, str(exc), "run `strawpot sync`"))
            continue
        except UsageError as exc:  # a bad [agents.<name>] value
            report.problems.append(Problem(locked.name, exc.message, exc.hint or "fix strawpot.toml"))
            continue
        report.wrapper = str(runtime.wrapper)
        report.problems += binder.agent_problems(locked.name, runtime.wrapper)
        for need in env.missing(package_needs(Kind.AGENT, locked.name, package.env)):
            report.problems.append(Problem(
                locked.name, f"environment variable {need.describe()} is not set",
                f"export {need.spec.name}=..., add it under [agents.{locked.name}.env] in {config_file}, "
                "or run `strawpot start` on a terminal to be asked"))
        report.hints.append(f"if {locked.name} needs a one-time login, run `strawpot setup {locked.name}`")
    return reports


def check_sandbox(setting: str, kind: str) -> dict[str, Any]:
    """Whether `kind` (the sandbox `setting` asks for) can confine processes here; bubblewrap is tried even
    when the setting says none, so the user knows whether turning it on would work."""
    from sandbox.walls import BwrapSandbox
    from strawpot.model.errors import MissingToolError

    report: dict[str, Any] = {"setting": setting, "kind": kind, "ok": True, "problem": "", "fix": ""}
    try:
        BwrapSandbox(setting).check()
    except MissingToolError as exc:
        report.update(problem=exc.message, fix=exc.hint or "", ok=kind != "bwrap")
    report["bwrap_works"] = not report["problem"]
    return report


def check_confined(reports: list[AgentReport], binder: Binder, sandbox: SandboxSettings, project_dir: Path,
                   state_dir: Path, environ: Mapping[str, str]) -> None:
    """With the session's sandbox on: each program an agent may run (its wrapper, its path params, its tools)
    must show inside a run's walls, as `start` would need it; one problem for each that does not."""
    from orchestrator.run import programs_of, run_walls
    from sandbox.paths import exposed

    home = Path(environ["HOME"]) if environ.get("HOME") else None
    for report in reports:
        try:
            runtime = binder.runtime(report.agent)
        except (StagingError, BindingError, UsageError):
            continue  # reported by check_agents
        programs = programs_of(runtime, binder.stager.tools_of(report.agent))
        found = [str(p) if os.sep in str(p) else shutil.which(str(p), path=environ.get("PATH")) for p in programs]
        paths = [path for path in found if path]  # a tool not on PATH is check_agents' problem
        walls = run_walls(sandbox, home, project_dir, project_dir, state_dir).plus(
            readable=exposed(programs, environ.get("PATH")))
        probe = subprocess.run(sandbox.sandbox.command(["sh", "-c", _MISSING, "sh", *paths], walls, project_dir),
                               capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL, env=dict(environ))
        for missing in probe.stdout.splitlines():
            report.problems.append(Problem(
                report.agent, f"{missing} is hidden inside the sandbox ({sandbox.setting} = {sandbox.kind!r}), so "
                "`strawpot start` cannot run it", "move it out of the hidden path, or list its folder in "
                "[sandbox] writable"))


def check_runner(settings: Settings) -> list[dict[str, Any]]:
    """With `[session] runner = "ray"`: whether its cluster answers (the runner's own connect), and whether it has
    room for a session now (a free CPU, each custom resource it asks for); one check each. [] for the local runner."""
    if settings.get("session.runner") != "ray":
        return []
    from orchestrator.runners import RAY_EXTRA, runner_for

    address = settings.get("runner.ray.address")
    try:
        runner_for(settings)  # one line naming the extra when Ray is not installed
    except MissingToolError as exc:
        return [_check("cluster", exc.message, f"pip install '{RAY_EXTRA}'")]
    from orchestrator.ray_runner import PIN, SESSION_CPUS, RayRunner

    runner = RayRunner(settings)
    try:
        room = runner.room()  # the runner's own connect: exit 7's line when the cluster does not answer
        runner.leave().join()
    except MissingToolError as exc:
        return [_check("cluster", exc.message, exc.hint or "start the cluster, or fix [runner.ray] address "
                       "(docs/deploy.md)")]
    checks = [_check("cluster", f"the Ray cluster at {address} answers: {room.nodes} node(s), {room.cpus:g} CPUs")]
    if room.free_cpus >= SESSION_CPUS:
        checks.append(_check("cpus", f"{room.free_cpus:g} of {room.cpus:g} CPUs free: room for "
                                     f"{int(room.free_cpus // SESSION_CPUS)} session(s) now"))
    else:
        checks.append(_check("cpus", f"no CPU free on the cluster ({room.free_cpus:g} of {room.cpus:g}): a session "
                                     "started now waits for one", "wait for running sessions to end, or add a worker "
                                     "node (docs/deploy.md)"))
    for name, (nodes, free) in room.resources.items():
        if not nodes:
            checks.append(_check(f"resource {name}", f"no node of the cluster has resource {name}: a session asking "
                                 "for it never starts", f"start a worker with `ray start --resources "
                                 f"'{{\"{name}\": 1}}'`, or drop it from [runner.ray] resources"))
        elif free < PIN:
            checks.append(_check(f"resource {name}", f"resource {name} (on {nodes} node(s)) is all in use: a session "
                                 "started now waits for it", "wait for running sessions to end"))
        else:
            checks.append(_check(f"resource {name}", f"resource {name}: on {nodes} node(s), free"))
    return checks


def _check(name: str, line: str, fix: str | None = None) -> dict[str, Any]:
    """One check of the runner: a problem when it comes with a fix, else ok."""
    return {"check": name, "ok": fix is None, "line": line, "fix": fix or ""}
