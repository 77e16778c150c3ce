"""Hostile input against the trust model and the environment of package code, on a live registry (issue 25):
a tool hint under `-y`, a hint added to the lock by hand, a trusted package's v2 with another script, a cloned
project's trust, and planted tokens that no spawned process may see."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from strawpot.config_files import Project
from strawpot.model.lockfile import LockedTool, Lockfile
from tests._cli import strawpot


def write(project: Project, text: str) -> None:
    project.manifest_path.write_text(text, encoding="utf-8")


def agent_with_hint(registry, hint: str, *, tool: str = "absent-tool-25") -> tuple[str, str]:  # type: ignore[no-untyped-def]
    agent = registry.unique("hinted")
    registry.publish("agent", agent, "1.0.0", extra={"tools": {tool: {"description": "x", "install": {
        "linux": hint, "macos": hint}}}})
    role = registry.unique("hinted-role")
    registry.publish("role", role, "1.0.0", default_agent=agent)
    return agent, role


def test_a_tool_hint_never_runs_under_yes_and_needs_trust_and_install_tools(cli, project, registry, tmp_path):
    marker = tmp_path / "hint-ran"
    agent, role = agent_with_hint(registry, f"touch {marker}")
    result = cli("install", "-y", "--ignore-scripts", "role", role, "--project", project.dir)
    assert result.code == 0, result.text
    assert not marker.exists(), "-y ran an untrusted tool hint"
    assert "rerun with --install-tools" in result.err

    asked = cli("install", "--install-tools", "--project", project.dir)
    assert asked.code == 0 and not marker.exists(), asked.text
    assert f"agent {agent} is not trusted for it; review it, then run `strawpot trust agent:{agent}`" in asked.err

    assert cli("trust", f"agent:{agent}", "--project", project.dir).code == 0
    assert not marker.exists()  # trusting runs no hint by itself
    ran = cli("install", "--install-tools", "--project", project.dir)
    assert ran.code == 0 and marker.exists(), ran.text


def test_a_hint_added_to_the_lock_by_hand_never_runs_and_verify_fails(cli, project, registry, tmp_path):
    marker = tmp_path / "smuggled"
    agent, role = agent_with_hint(registry, "true")
    assert cli("install", "role", role, "--project", project.dir).code == 0
    assert cli("trust", f"agent:{agent}", "--project", project.dir).code == 0
    assert cli("verify", "--project", project.dir).code == 0
    lock = Lockfile.load(project.lock_path)
    pkg = next(p for p in lock.packages if p.name == agent)
    forged = LockedTool("smuggled-tool-25", "", {"linux": f"touch {marker}", "macos": f"touch {marker}"})
    lock = Lockfile(tuple(p if p is not pkg else type(pkg)(**{**pkg.__dict__, "tools": (*pkg.tools, forged)})
                          for p in lock.packages), lock.manifest_hash, lock.generated_by, trust=lock.trust)
    lock.write(project.lock_path)

    result = cli("install", "-y", "--frozen", "--install-tools", "--project", project.dir)
    assert result.code == 0, result.text
    assert not marker.exists(), "a hint from a hand-edited lock ran"
    assert ("the install command of tool smuggled-tool-25 in strawpot.lock is not the one agent "
            f"{agent} gives in its AGENT.md; not run") in result.err
    verify = cli("verify", "--project", project.dir)
    assert verify.code == 5, verify.text
    assert (f"agent {agent}: AGENT.md: strawpot.lock lists tool 'smuggled-tool-25', which AGENT.md does not "
            "declare") in verify.out


def test_a_changed_script_in_a_new_version_waits_for_fresh_consent(cli, project, registry, tmp_path):
    marker = tmp_path / "v2-ran"
    slug = registry.unique("pinned")
    registry.publish("skill", slug, "1.0.0", extra={"install": {"linux": "echo v1 > built.txt",
                                                                "macos": "echo v1 > built.txt"}})
    assert cli("install", "skill", slug, "--project", project.dir).code == 0
    assert cli("trust", f"skill:{slug}", "--project", project.dir).code == 0
    folder = project.dir / ".strawpot" / "skills" / slug
    assert (folder / "built.txt").read_text() == "v1\n"
    [pin] = Lockfile.load(project.lock_path).trust
    assert pin.id == f"skill:{slug}" and len(pin.sha256) == 1

    evil = f"touch {marker}; echo v2 > built.txt"
    registry.publish("skill", slug, "2.0.0", extra={"install": {"linux": evil, "macos": evil}})
    result = cli("install", "skill", f"{slug}@^2", "--project", project.dir)
    assert result.code == 0, result.text
    assert not marker.exists(), "a changed install script ran without fresh consent"
    warnings = [line for line in result.err.splitlines() if line.startswith("warning: install scripts not run")]
    assert warnings == [f"warning: install scripts not run (changed since you trusted them): skill:{slug}; review "
                        f"the new text (`strawpot info KIND SLUG`), then run `strawpot trust skill:{slug}`"]

    again = cli("trust", f"skill:{slug}", "--project", project.dir)
    assert again.code == 0 and marker.exists() and (folder / "built.txt").read_text() == "v2\n", again.text
    [pin] = Lockfile.load(project.lock_path).trust
    assert len(pin.sha256) == 2  # both texts the user trusted


def test_a_cloned_projects_trust_needs_this_machines_consent(cli, project, registry, tmp_path, monkeypatch):
    marker = tmp_path / "clone-ran"
    slug = registry.unique("cloned")
    script = f"touch {marker}"
    registry.publish("skill", slug, "1.0.0", extra={"install": {"linux": script, "macos": script}})
    # the author's machine: installed, trusted, lock pinned
    assert cli("install", "skill", slug, "--project", project.dir).code == 0
    assert cli("trust", f"skill:{slug}", "--project", project.dir).code == 0
    assert marker.exists()
    marker.unlink()
    # a clone elsewhere on another machine: the committed strawpot.toml and strawpot.lock only
    clone = Project.at(tmp_path / "clone")
    clone.dir.mkdir()
    shutil.copy(project.manifest_path, clone.manifest_path)
    shutil.copy(project.lock_path, clone.lock_path)
    monkeypatch.setenv("STRAWPOT_CONFIG_DIR", str(tmp_path / "other-machine"))

    result = cli("install", "--project", clone.dir)
    assert result.code == 0 and not marker.exists(), result.text
    assert (f"warning: install scripts not run (trusted by strawpot.toml, not yet confirmed on this machine): "
            f"skill:{slug}; review them (`strawpot info KIND SLUG`), then run `strawpot trust skill:{slug}` "
            "(in CI: --trust-project or STRAWPOT_TRUST_PROJECT=1)") in result.err
    monkeypatch.setenv("STRAWPOT_TRUST_PROJECT", "1")
    ci = cli("install", "--project", clone.dir)
    assert ci.code == 0 and marker.exists(), ci.text


def test_a_cloned_projects_trust_is_pinned_even_in_ci(cli, project, registry, tmp_path, monkeypatch):
    """--trust-project honours the lock's pins, not whatever the package's script is now."""
    marker = tmp_path / "pin-ran"
    slug = registry.unique("repinned")
    registry.publish("skill", slug, "1.0.0", extra={"install": {"linux": "true", "macos": "true"}})
    assert cli("install", "skill", slug, "--project", project.dir).code == 0
    assert cli("trust", f"skill:{slug}", "--project", project.dir).code == 0
    registry.publish("skill", slug, "1.1.0", extra={"install": {"linux": f"touch {marker}",
                                                                "macos": f"touch {marker}"}})
    write(project, project.manifest_path.read_text().replace('"^1.0.0"', '"==1.1.0"'))
    result = cli("install", "--trust-project", "--project", project.dir)
    assert result.code == 0 and not marker.exists(), result.text
    assert "changed since you trusted them" in result.err


# -- secrets stay home ----------------------------------------------------------------------------------------

TOKEN = "sh_planted0123456789abcdef"
API_KEY = "sk-ant-planted-0123456789"
CONFIG_TOKEN = "sh_configfile0123456789"

WRAPPER = """#!/bin/sh
if [ "$1" = setup ]; then
  env > "{dump}/setup.env"
fi
if [ "$1" = build ]; then
  env > "{dump}/build.env"
  printf '{{"cmd": ["sh", "-c", "env > {dump}/agent.env"]}}\\n'
fi
"""


def test_no_spawned_process_sees_a_planted_token(cli, project, registry, tmp_path, monkeypatch):
    dump, toolbin = tmp_path / "dump", tmp_path / "toolbin"
    dump.mkdir()
    agent, role = registry.unique("leaky"), registry.unique("leaky-role")
    script = f"env > {dump}/script.env && cp wrapper.src wrapper && chmod +x wrapper"
    hint = (f"env > {dump}/hint.env && mkdir -p {toolbin} && printf '#!/bin/sh\\n' > {toolbin}/planted-tool "
            f"&& chmod +x {toolbin}/planted-tool")
    registry.publish("agent", agent, "1.0.0", files={"wrapper.src": WRAPPER.format(dump=dump).encode()}, extra={
        "bin": {"linux": "wrapper", "macos": "wrapper"},
        "install": {"linux": script, "macos": script},
        "tools": {"planted-tool": {"description": "made by the hint", "install": {"linux": hint, "macos": hint}}},
        "env": {"DECLARED_VAR": {"required": True, "description": "declared by the agent"}},
    })
    registry.publish("role", role, "1.0.0", default_agent=agent)
    monkeypatch.setenv("STRAWPOT_TOKEN", TOKEN)
    monkeypatch.setenv("STRAWPOT_TOKEN_REGISTRY", "http://elsewhere.invalid")  # not sent to this registry
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    monkeypatch.setenv("DECLARED_VAR", "declared-value")
    monkeypatch.setenv("LEAK_VIA_PASS_ENV", f"x{CONFIG_TOKEN}x")
    monkeypatch.setenv("PATH", f"{toolbin}{os.pathsep}{os.environ['PATH']}")
    config = Path(os.environ["STRAWPOT_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text(f'[tokens]\n"{registry.url}" = "{CONFIG_TOKEN}"\n')

    write(project, '[session]\npass_env = ["LEAK_VIA_PASS_ENV"]\n')
    assert cli("install", "role", role, "--project", project.dir).code == 0
    assert cli("trust", f"agent:{agent}", "--project", project.dir).code == 0
    tools = cli("install", "--install-tools", "--project", project.dir)
    assert tools.code == 0, tools.text
    started = strawpot("start", "--role", role, "--headless", "--task", "x", cwd=project.dir, timeout=60)
    assert started.returncode == 0, started.stderr
    setup = strawpot("setup", agent, cwd=project.dir, timeout=60)
    assert setup.returncode == 0, setup.stderr

    dumps = {name: (dump / f"{name}.env").read_text() for name in ("script", "hint", "build", "agent", "setup")}
    for name, text in dumps.items():
        for secret in (TOKEN, API_KEY, CONFIG_TOKEN, "STRAWPOT_TOKEN"):
            assert secret not in text, f"{secret} reached the {name} process"
        [path] = [line.removeprefix("PATH=") for line in text.splitlines() if line.startswith("PATH=")]
        assert str(toolbin) in path.split(os.pathsep) and "HOME=" in text  # after staged programs' folders, if any
    assert "DECLARED_VAR=declared-value" in dumps["setup"]
    for name in ("build", "agent"):
        assert "DECLARED_VAR=declared-value" in dumps[name]
        assert f"STRAWPOT_ROLE={role}" in dumps[name] and "DENDEN_ADDR=" in dumps[name]
    assert "INSTALL_DIR=" in dumps["script"]


@pytest.mark.parametrize("hide", ["DECLARED_VAR", "DECLARED_*"])
def test_hide_env_wins_over_a_declared_variable(hide):  # type: ignore[no-untyped-def]
    from strawpot.model.child_env import EnvPolicy, child_env

    env = child_env({"PATH": "/bin"}, EnvPolicy(hide_env=(hide,)), declared={"DECLARED_VAR": "v"})
    assert env == {"PATH": "/bin"}


def test_on_a_terminal_a_changed_script_is_shown_as_a_change_and_yes_runs_it(cli, project, registry, isolated_env):
    """The service hands its reporter (the terminal prompt, which prints a diff) the trusted text and the new one."""
    from hub_client import Cache, HubClient
    from strawpot.install.options import Edit, Options, Requested
    from strawpot.install.outcome import QuietReporter
    from strawpot.install.service import run
    from strawpot.model.kinds import Kind

    slug = registry.unique("asked")
    registry.publish("skill", slug, "1.0.0", extra={"install": {"linux": "echo v1", "macos": "echo v1"}})
    assert cli("install", "skill", slug, "--project", project.dir).code == 0
    assert cli("trust", f"skill:{slug}", "--project", project.dir).code == 0
    registry.publish("skill", slug, "2.0.0", extra={"install": {"linux": "echo v2", "macos": "echo v2"}})
    asked = []

    class Yes(QuietReporter):
        def confirm_script(self, script) -> bool:  # type: ignore[no-untyped-def]
            asked.append((script.reason, script.previous, script.text))
            return True

    with HubClient(registry.url, cache=Cache(isolated_env / "cache")) as client:
        out = run(project, Edit(add=(Requested(Kind.SKILL, slug, "^2"),)), Options(registry=registry.url),
                  reporter=Yes(), client=client)
    assert asked == [("changed", "echo v1", "echo v2")]
    assert out.builds.ran == [f"skill:{slug}"]
    [pin] = Lockfile.load(project.lock_path).trust
    assert len(pin.sha256) == 2
