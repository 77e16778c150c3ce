"""`strawpot doctor`: can every locked agent run here? Each problem comes with the command or step that fixes it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from orchestrator.binding import Binder, BindingError, Problem
from orchestrator.envvars import EnvValues, package_needs
from orchestrator.staging import StagingError
from strawpot.model.errors import UsageError
from strawpot.model.kinds import Kind


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
    from orchestrator.sandbox import BwrapSandbox
    from strawpot.model.errors import MissingToolError

    report: dict[str, Any] = {"setting": setting, "kind": kind, "ok": True, "problem": "", "fix": ""}
    try:
        BwrapSandbox(setting).check()
    except MissingToolError as exc:
        report.update(problem=exc.message, fix=exc.hint or "", ok=kind != "bwrap")
    report["bwrap_works"] = not report["problem"]
    return report
