"""Role → agent binding layers, and the readiness checks `start` runs before spawning anything."""

from __future__ import annotations

import pytest

from orchestrator.binding import Binder, BindingError, choose_agent, role_env_var
from orchestrator.staging import Stager
from strawpot.config_files import load_settings
from strawpot.model.installed import InstalledTree
from strawpot.model.layout import Project
from strawpot.model.lockfile import Lockfile
from strawpot.model.manifest import Manifest

ALL = dict(cli="cli-agent", env="env-agent", manifest="manifest-agent", role="role-agent", runtime="runtime-agent")


@pytest.mark.parametrize(
    ("present", "expected_agent", "expected_layer"),
    [
        (("cli", "env", "manifest", "role", "runtime"), "cli-agent", "--runtime"),
        (("env", "manifest", "role", "runtime"), "env-agent", "STRAWPOT_AGENT_CODE_REVIEWER"),
        (("manifest", "role", "runtime"), "manifest-agent", "[roles.code-reviewer].default_agent"),
        (("role", "runtime"), "role-agent", "role code-reviewer default_agent"),
        (("runtime",), "runtime-agent", "[orchestrator].runtime"),
        ((), None, None),
    ],
)
def test_binding_layers(present: tuple[str, ...], expected_agent: str | None, expected_layer: str | None) -> None:
    got = {k: (v if k in present else None) for k, v in ALL.items()}
    environ = {"STRAWPOT_AGENT_CODE_REVIEWER": got["env"]} if got["env"] else {}
    binding = choose_agent("code-reviewer", cli=got["cli"], environ=environ, manifest_default=got["manifest"],
                           role_default=got["role"], runtime=got["runtime"])
    assert (binding.agent if binding else None) == expected_agent
    assert (binding.layer if binding else None) == expected_layer


def test_role_env_var() -> None:
    assert role_env_var("code-reviewer") == "STRAWPOT_AGENT_CODE_REVIEWER"


def _binder(project, **kw) -> Binder:  # type: ignore[no-untyped-def]
    stager = Stager(InstalledTree(project.state_dir), Lockfile.load(project.root / "strawpot.lock"))
    return Binder(stager, Manifest.load(project.root / "strawpot.toml"), load_settings(Project(project.root)), **kw)


def test_binder_builds_runtime_with_merged_config(project) -> None:
    project.agent_settings = {"greeting": "bonjour"}
    binder = _binder(project.build(), environ={})
    runtime = binder("reviewer")
    assert runtime.name == "stub-agent"
    assert runtime.wrapper == project.state_dir / "agents" / "stub-agent" / "bin" / "stub-wrapper"
    assert runtime.config["greeting"] == "bonjour"  # the user's [agents.stub-agent] wins
    assert "python" in runtime.config
    assert binder.problems(["reviewer", "implementer"]) == []


def test_binder_reports_unknown_agent_and_missing_tool(project) -> None:
    binder = _binder(project.build(), environ={"STRAWPOT_AGENT_REVIEWER": "ghost-agent"}, which=lambda name: None)
    problems = binder.problems(["reviewer", "implementer"])
    assert any("agent 'ghost-agent' is not in strawpot.lock" in p and "bound to role reviewer" in p for p in problems)
    assert any("tool 'python3' is not on PATH (install: sudo apt-get install -y python3)" in p for p in problems)
    with pytest.raises(BindingError):
        binder("reviewer")


def test_binder_without_any_binding(project) -> None:
    project.build()
    text = (project.root / "strawpot.toml").read_text().replace('runtime = "stub-agent"\n', "")
    (project.root / "strawpot.toml").write_text(text)
    problems = _binder(project, environ={}).problems(["reviewer"])
    assert problems == ["no agent is bound to role 'reviewer': pass --runtime, set STRAWPOT_AGENT_REVIEWER, "
                        "or set [orchestrator].runtime in strawpot.toml"]
