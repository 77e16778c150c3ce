"""Which agent plays a role, with what config, and whether it can run here (tools, env vars, wrapper).

Binding layers, first match wins: the `--runtime` flag, `STRAWPOT_AGENT_<ROLE>` (slug upper-cased,
`-` → `_`), `[roles.<slug>].default_agent` in strawpot.toml, the role's own `default_agent`, and
`[orchestrator].runtime`.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.runtime import WrapperRuntime
from orchestrator.staging import Stager, StagingError
from strawpot.model.kinds import Kind
from strawpot.model.manifest import Manifest
from strawpot.model.params import ParamSpec
from strawpot.model.params import merge as merge_params
from strawpot.model.platform import current_os
from strawpot.model.settings import Settings

DOCTOR_DOCS = "docs/sessions.md, `strawpot doctor`"  # where each check and its fix are described


class BindingError(Exception):
    """No agent can be bound to a role, or the bound agent cannot run on this machine."""


@dataclass(frozen=True)
class Problem:
    """Something that stops an agent from running here, and what fixes it."""

    agent: str
    what: str
    fix: str

    def __str__(self) -> str:
        return f"agent {self.agent}: {self.what}" + (f" ({self.fix})" if self.fix else "")


def role_env_var(role: str) -> str:
    return "STRAWPOT_AGENT_" + role.upper().replace("-", "_")


@dataclass(frozen=True)
class Binding:
    role: str
    agent: str
    layer: str  # which layer chose it, for messages


def choose_agent(
    role: str, *, cli: str | None, environ: Mapping[str, str], manifest_default: str | None,
    role_default: str | None, runtime: str | None,
) -> Binding | None:
    """The first layer that names an agent for `role`, or None."""
    layers = (
        ("--runtime", cli),
        (role_env_var(role), environ.get(role_env_var(role))),
        (f"[roles.{role}].default_agent", manifest_default),
        (f"role {role} default_agent", role_default),
        ("[orchestrator].runtime", runtime),
    )
    for layer, agent in layers:
        if agent:
            return Binding(role, agent.strip(), layer)
    return None


def merge_config(agent: str, params: Mapping[str, ParamSpec], settings: Mapping[str, Any],
                 overrides: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The `--config` of `agent`: param defaults < `[agents.<name>]` < `--param` (UsageError on a bad value)."""
    return merge_params(agent, params, settings, overrides or {})


class Binder:
    """Binds roles to agents of the lock and builds (once each) their WrapperRuntime."""

    def __init__(self, stager: Stager, manifest: Manifest, settings: Settings, *, cli_agent: str | None = None,
                 environ: Mapping[str, str] | None = None, os_name: str | None = None,
                 which: Callable[[str], str | None] = shutil.which,
                 param_overrides: Mapping[str, str] | None = None) -> None:
        self.stager = stager
        self.param_overrides = dict(param_overrides or {})  # `start --param`: for the agent of the started role
        self.params_for: str | None = None
        self.manifest = manifest  # the requirements: `[roles.<slug>].default_agent`
        self.settings = settings
        self.cli_agent = cli_agent
        self.environ = dict(os.environ if environ is None else environ)
        self.os_name = os_name or current_os()
        self.which = which
        self._runtimes: dict[str, WrapperRuntime] = {}

    def check_runtime_flag(self) -> None:
        """`--runtime NAME` names an agent of the lock (MissingToolError naming it and the installed ones, else):
        checked before any role is bound, so the error is about the flag and not about whichever role came first."""
        if not self.cli_agent or self.stager.lock.get(Kind.AGENT, self.cli_agent.strip()) is not None:
            return
        from strawpot.model.errors import MissingToolError
        from strawpot.model.suggest import did_you_mean

        name = self.cli_agent.strip()
        agents = sorted(p.name for p in self.stager.lock.packages if p.kind is Kind.AGENT)
        listed = f"installed: {', '.join(agents)}" if agents else "no agent is installed"
        install = f"install it with `strawpot install agent {name}`"
        near = did_you_mean(name, agents, show="`--runtime {}`")
        raise MissingToolError(f"--runtime {name}: no installed agent has that name ({listed})",
                               hint=f"{near} Or {install}" if near else install)

    def binding(self, role: str) -> Binding:
        try:
            role_default = self.stager.package(Kind.ROLE, role).default_agent
        except StagingError as exc:
            raise BindingError(str(exc)) from None
        found = choose_agent(
            role, cli=self.cli_agent, environ=self.environ, manifest_default=self.manifest.role_default_agent(role),
            role_default=role_default, runtime=self.settings.get("orchestrator.runtime"),
        )
        if found is None:
            raise BindingError(
                f"no agent is bound to role {role!r}: pass --runtime, set {role_env_var(role)}, "
                "or set [orchestrator].runtime in strawpot.toml"
            )
        return found

    def runtime(self, agent: str) -> WrapperRuntime:
        if agent not in self._runtimes:
            try:
                package = self.stager.package(Kind.AGENT, agent)
            except StagingError as exc:
                raise BindingError(f"{exc} (install it with `strawpot install agent {agent}`)") from None
            rel = package.bin.get(self.os_name)
            if rel is None:
                raise BindingError(f"agent {agent} has no wrapper for {self.os_name} (metadata.strawpot.bin)")
            wrapper = self.stager.tree.package_dir(Kind.AGENT, agent) / rel
            overrides = self.param_overrides if agent == self.params_for else {}
            config = merge_config(agent, package.params, self.settings.agent(agent), overrides)
            self._runtimes[agent] = WrapperRuntime(agent, wrapper, config, resume=package.resume)
        return self._runtimes[agent]

    def __call__(self, role: str) -> WrapperRuntime:
        return self.runtime(self.binding(role).agent)

    def problems(self, roles: Iterable[str]) -> list[str]:
        """Everything that would stop an agent for one of `roles` from starting, each with its fix."""
        out: list[str] = []
        agents: dict[str, str] = {}
        for role in roles:
            try:
                agents.setdefault(self.binding(role).agent, role)
            except BindingError as exc:
                out.append(str(exc))
        for agent, role in sorted(agents.items()):
            try:
                runtime = self.runtime(agent)
            except BindingError as exc:
                out.append(f"{exc} (bound to role {role})")
                continue
            out += [str(p) for p in self.agent_problems(agent, runtime.wrapper)]
        return out

    def agent_problems(self, agent: str, wrapper: Path) -> list[Problem]:
        """What stops `agent` from running here: its wrapper, its tools. Required env vars are checked apart
        (orchestrator/envvars.py), since `start` may ask for them."""
        missing = self.wrapper_problem(agent, wrapper)
        out = [missing] if missing else []
        locked = self.stager.lock.get(Kind.AGENT, agent)
        for tool in locked.tools if locked else ():
            if self.which(tool.name) is None:
                hint = tool.install.get(self.os_name)
                out.append(Problem(agent, f"tool {tool.name!r} is not on PATH", f"install: {hint}" if hint else (
                    f"install `{tool.name}` by hand and put it on PATH: agent {agent} gives no install command for "
                    f"{self.os_name} (`strawpot info agent {agent}` says what it needs; see {DOCTOR_DOCS})")))
        return out

    def wrapper_problem(self, agent: str, wrapper: Path) -> Problem | None:
        """Why the agent's wrapper cannot run here (not built by its install script, missing, not what the
        script built), with the command that fixes it: `sync --rebuild` runs the script again."""
        script = self.stager.package(Kind.AGENT, agent).install_script(self.os_name)
        record = self.stager.tree.record(Kind.AGENT, agent)
        rebuild = f"run `strawpot sync --rebuild agent:{agent}` to build it again"
        if script is not None and record is None:
            if f"agent:{agent}" in self.settings.get("scripts.trusted"):
                return Problem(agent, "its install script has not run here", f"run `strawpot sync --rebuild agent:{agent}`")
            return Problem(agent, "its install script is not trusted, so its wrapper is not built",
                           f"review it (`strawpot info agent {agent}`), then run `strawpot trust agent:{agent}`")
        if not os.access(wrapper, os.X_OK):
            return Problem(agent, f"wrapper {wrapper} is missing or not executable",
                           rebuild if script is not None else "run `strawpot sync` to reinstall it from the lock")
        if record is not None:
            from strawpot.model.install_record import check_output

            base = self.stager.tree.package_dir(Kind.AGENT, agent)
            built = next((f for f in record.outputs if base / f.path == wrapper), None)
            if built is not None and (stale := check_output(wrapper, built, deep=False)):
                return Problem(agent, f"wrapper {wrapper}: {stale}", rebuild)
        return None
