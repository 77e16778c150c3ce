"""The realistic fixture agent end to end: `strawpot publish`, install, `strawpot trust`, `verify` and a headless
`strawpot start` in which its built wrapper drives the fake-coder CLI over real Denden; untrusted, start exits 7."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests._cli import strawpot

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]
AGENT = ROOT / "fixtures" / "agents" / "fixture-coder"
TOOLS = ROOT / "fixtures" / "tools"


@pytest.fixture(scope="module")
def published(registry) -> subprocess.CompletedProcess[str]:  # type: ignore[no-untyped-def]
    """fixture-coder, published once with the real `strawpot publish` (no executable in the package)."""
    env = {**os.environ, "STRAWPOT_TOKEN": registry.live.token, "NO_COLOR": "1"}
    done = strawpot("publish", AGENT, "--registry", registry.url, cwd=Path.cwd(), env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return done


def agent_env(**extra: str) -> dict[str, str]:
    path = os.pathsep.join([str(TOOLS), str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return {**os.environ, "PATH": path, "NO_COLOR": "1", "COLUMNS": "300", **extra}


def start(project_dir: Path, task: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return strawpot("start", "--headless", "--runtime", "fixture-coder", "--task", task, cwd=project_dir, env=env,
                    timeout=120)


def manifest(project, *, trusted: bool) -> None:
    trust = '\n[scripts]\ntrusted = ["agent:fixture-coder"]\n' if trusted else ""
    project.manifest_path.write_text(
        '[roles]\nlead = "*"\n\n[agents]\nfixture-coder = { version = "^0.1", model = "fake-large", max_turns = 7 }\n'
        f'\n[orchestrator]\nrole = "lead"\n{trust}', encoding="utf-8")


def test_publish_shows_the_install_script_and_ships_no_executable(published, registry) -> None:
    assert "agent fixture-coder 0.1.0" in published.stdout + published.stderr
    listed = registry.client.package_versions("agent", "fixture-coder").versions[-1]
    assert listed.version == "0.1.0"
    assert {f.path for f in listed.files} == {"AGENT.md", "build/install.sh", "build/wrapper.py"}
    assert not any(f.executable for f in listed.files)
    info = strawpot("info", "agent", "fixture-coder", "--registry", registry.url, cwd=Path.cwd(), timeout=60)
    assert info.returncode == 0, info.stderr
    assert "install script (linux): sh build/install.sh" in info.stdout


def test_trusted_fixture_agent_verifies_and_runs_to_the_end(published, cli, project) -> None:
    manifest(project, trusted=False)
    installed = cli("install", "--project", project.dir)
    assert installed.code == 0, installed.text
    assert "strawpot trust agent:fixture-coder" in installed.err
    trusted = cli("trust", "agent:fixture-coder", "--project", project.dir)
    assert trusted.code == 0, trusted.text
    wrapper = project.dir / ".strawpot" / "agents" / "fixture-coder" / "fixture_coder"
    assert os.access(wrapper, os.X_OK)
    verified = cli("verify", "--project", project.dir)
    assert verified.code == 0, verified.text

    done = start(project.dir, "delegate:reviewer:check the change", agent_env(FIXTURE_CODER_TOKEN="t0ken"))
    assert done.returncode == 0, done.stdout + done.stderr
    settings = "model=fake-large max_turns=7 temperature=0.2 skip_permissions=true"
    assert done.stdout.splitlines() == [
        f"fake-coder[lead] {settings}: delegate:reviewer:check the change",
        f"fake-coder[reviewer] {settings}: check the change",
    ]
    assert (project.dir / "fake-coder-lead.txt").read_text() == f"{settings}\ntask=delegate:reviewer:check the change\n"
    assert (project.dir / "fake-coder-reviewer.txt").read_text() == f"{settings}\ntask=check the change\n"

    missing = start(project.dir, "hello", agent_env(FIXTURE_CODER_TOKEN=""))
    assert missing.returncode == 7 and "FIXTURE_CODER_TOKEN" in missing.stderr, missing.stderr


def test_untrusted_fixture_agent_does_not_start(published, cli, project) -> None:
    manifest(project, trusted=False)
    assert cli("install", "-y", "--project", project.dir).code == 0
    assert not (project.dir / ".strawpot" / "agents" / "fixture-coder" / "fixture_coder").exists()
    done = start(project.dir, "hello", agent_env(FIXTURE_CODER_TOKEN="t0ken"))
    assert done.returncode == 7, done.stderr
    assert "agent fixture-coder: its install script is not trusted" in done.stderr
    assert "`strawpot trust agent:fixture-coder`" in done.stderr
    assert "Traceback" not in done.stderr
    assert not list(project.dir.glob("fake-coder-*.txt"))
    manifest(project, trusted=True)  # trusted by hand, not built yet
    pending = start(project.dir, "hello", agent_env(FIXTURE_CODER_TOKEN="t0ken"))
    assert pending.returncode == 7, pending.stderr
    assert "agent fixture-coder: its install script has not run here (run `strawpot sync --rebuild agent:fixture-coder`)" in pending.stderr
