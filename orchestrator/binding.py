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
from strawpot.model.platform import current_os


class BindingError(Exception):
    """No agent can be bound to a role, or the bound agent cannot run on this machine."""


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


def merge_config(params: Mapping[str, Any], settings: Mapping[str, Any]) -> dict[str, Any]:
    """The agent's param defaults overlaid with the user's `[agents.<name>]` values (the user wins)."""
    return {**params, **settings}


class Binder:
    """Binds roles to agents of the lock and builds (once each) their WrapperRuntime."""

    def __init__(self, stager: Stager, manifest: Manifest, *, cli_agent: str | None = None,
                 environ: Mapping[str, str] | None = None, os_name: str | None = None,
                 which: Callable[[str], str | None] = shutil.which) -> None:
        self.stager = stager
        self.manifest = manifest
        self.cli_agent = cli_agent
        self.environ = dict(os.environ if environ is None else environ)
        self.os_name = os_name or current_os()
        self.which = which
        self._runtimes: dict[str, WrapperRuntime] = {}

    def binding(self, role: str) -> Binding:
        try:
            role_default = self.stager.package(Kind.ROLE, role).default_agent
        except StagingError as exc:
            raise BindingError(str(exc)) from None
        runtime = self.manifest.orchestrator.get("runtime")
        found = choose_agent(
            role, cli=self.cli_agent, environ=self.environ, manifest_default=self.manifest.role_default_agent(role),
            role_default=role_default, runtime=runtime if isinstance(runtime, str) else None,
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
            config = merge_config(package.params, self.manifest.agent_settings(agent))
            self._runtimes[agent] = WrapperRuntime(agent, wrapper, config)
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
            out += self._agent_problems(agent, runtime.wrapper)
        return out

    def _unbuilt(self, agent: str) -> str | None:
        """Why an agent whose install script builds it is not built here, with the command that fixes it."""
        if self.stager.package(Kind.AGENT, agent).install_script(self.os_name) is None:
            return None
        if self.stager.tree.record(Kind.AGENT, agent) is not None:
            return None
        if f"agent:{agent}" in self.manifest.scripts().trusted:
            return f"agent {agent}: its install script has not run here; run `strawpot install`"
        return (f"agent {agent}: its install script is not trusted, so its wrapper is not built; review it "
                f"(`strawpot info agent {agent}`), then run `strawpot trust agent:{agent}`")

    def _agent_problems(self, agent: str, wrapper: Path) -> list[str]:
        out = []
        if unbuilt := self._unbuilt(agent):
            out.append(unbuilt)
        elif not os.access(wrapper, os.X_OK):
            out.append(f"agent {agent}: wrapper {wrapper} is missing or not executable")
        locked = self.stager.lock.get(Kind.AGENT, agent)
        for tool in locked.tools if locked else ():
            if self.which(tool.name) is None:
                hint = tool.install.get(self.os_name)
                out.append(f"agent {agent}: tool {tool.name!r} is not on PATH"
                           + (f" (install: {hint})" if hint else ""))
        for env in self.stager.package(Kind.AGENT, agent).env.values():
            if env.required and env.default is None and not self.environ.get(env.name):
                what = f" ({env.description})" if env.description else ""
                out.append(f"agent {agent}: environment variable {env.name} is required but not set{what}")
        return out
