"""An agent shaped exactly like the published Claude Code wrapper (`curl … install.sh | sh`, which downloads into
the current directory and moves the file into $INSTALL_DIR), its script served by a fake `curl`: it installs
under trust and runs headless; offline, the build fails naming the wrapper, and the command `doctor` names
rebuilds it once the network is back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from strawpot.model.install_record import load_record
from strawpot.model.platform import current_os
from tests._cli import strawpot

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]
AGENT = ROOT / "fixtures" / "agents" / "remote-coder"
FAKE_NET = ROOT / "fixtures" / "net" / "bin"
TOOLS = ROOT / "fixtures" / "tools"


@pytest.fixture(scope="module")
def published(registry) -> None:  # type: ignore[no-untyped-def]
    registry.publish_folder(AGENT)


def run_in(project, *args: str, offline: bool = False) -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join([str(FAKE_NET), str(TOOLS), str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    env = {**os.environ, "PATH": path, "NO_COLOR": "1", "COLUMNS": "400", "FIXTURE_CODER_TOKEN": "t0ken"}
    env.pop("FAKE_NET", None)
    env["STRAWPOT_TRUST_PROJECT"] = "1"  # the manifest's hand-written [scripts] trusted counts, as in CI
    if offline:  # scripts inherit an allow-list only: the fake network's switch is passed on as a user would
        env.update(FAKE_NET="offline", STRAWPOT_SESSION_PASS_ENV="FAKE_NET")
    return strawpot(*args, cwd=project.dir, env=env, timeout=120)


def manifest(project, registry, *, trusted: bool) -> None:
    trust = '\n[scripts]\ntrusted = ["agent:remote-coder"]\n' if trusted else ""
    project.manifest_path.write_text(
        f'[registry]\nurl = "{registry.url}"\n\n[roles]\nlead = "*"\n\n[agents]\nremote-coder = "^0.1"\n\n'
        f'[orchestrator]\nrole = "lead"\n{trust}', encoding="utf-8")


def wrapper(project) -> Path:
    return project.dir / ".strawpot" / "agents" / "remote-coder" / "remote_coder"


def runs_headless(project) -> None:
    done = run_in(project, "start", "--headless", "--runtime", "remote-coder", "--task", "delegate:reviewer:look")
    assert done.returncode == 0, done.stdout + done.stderr
    settings = "model=fake-small max_turns=1 temperature=0.0 skip_permissions=true"
    assert done.stdout.splitlines() == [f"fake-coder[lead] {settings}: delegate:reviewer:look",
                                        f"fake-coder[reviewer] {settings}: look"]


def test_info_and_validate_say_the_script_downloads_what_it_runs(published, project, registry) -> None:
    note = ("note: the install scripts (linux, macos) download what they run: the lock pins these commands, "
            "not the code they fetch")
    assert note in run_in(project, "validate", str(AGENT)).stdout
    info = run_in(project, "info", "agent", "remote-coder", "--registry", registry.url)
    assert info.returncode == 0 and note in info.stdout, info.stderr
    as_json = json.loads(run_in(project, "info", "agent", "remote-coder", "--registry", registry.url, "--json").stdout)
    assert as_json["install_note"] == note.removeprefix("note: ")
    validated = json.loads(run_in(project, "validate", str(AGENT), "--json").stdout)
    assert validated["install_note"] == note.removeprefix("note: ") and validated["warnings"] == []


def test_trusted_remote_agent_installs_and_runs_headless(published, project, registry) -> None:
    manifest(project, registry, trusted=True)
    installed = run_in(project, "install")
    assert installed.returncode == 0, installed.stderr
    assert "Ran the install script of agent:remote-coder" in installed.stderr
    assert os.access(wrapper(project), os.X_OK)
    record = load_record(wrapper(project).parent)
    assert record is not None and [(f.path, f.executable) for f in record.outputs] == [("remote_coder", True)]
    log = (project.dir / ".strawpot" / "logs" / "install-agent-remote-coder.log").read_text()
    assert "Downloading remote_coder for" in log and "Installed remote_coder to " in log
    assert run_in(project, "verify").returncode == 0
    runs_headless(project)


def test_offline_build_fails_naming_the_wrapper_and_doctors_fix_rebuilds_it(published, project, registry) -> None:
    manifest(project, registry, trusted=False)
    assert run_in(project, "install", "-y").returncode == 0  # placed as published; its script waits for trust
    offline = run_in(project, "trust", "agent:remote-coder", offline=True)
    assert offline.returncode == 1, offline.stderr
    log = project.dir / ".strawpot" / "logs" / "install-agent-remote-coder.log"
    [error] = [line for line in offline.stderr.splitlines() if line.startswith("error:")]
    assert error == (f"error: the install script of agent remote-coder 0.1.0 failed (exit 6) without building "
                     f"remote_coder (metadata.strawpot.bin.{current_os()}); the package was not installed; log: {log}")
    assert "Could not resolve host: downloads.fixture.invalid" in offline.stderr
    assert not wrapper(project).exists() and load_record(wrapper(project).parent) is None

    for _ in range(2):  # never built, then built and lost: the same fix each time
        doctor = run_in(project, "doctor", "--json")
        assert doctor.returncode == 7, doctor.stdout + doctor.stderr
        [report] = [r for r in json.loads(doctor.stdout)["agents"] if r["agent"] == "remote-coder"]
        [problem] = report["problems"]
        fix = problem["fix"].split("`")[1]
        assert fix == "strawpot sync --rebuild agent:remote-coder"
        again = run_in(project, *fix.split()[1:])  # the network is back
        assert again.returncode == 0, again.stderr
        assert "Ran the install script of agent:remote-coder" in again.stderr
        assert os.access(wrapper(project), os.X_OK)
        healthy = run_in(project, "doctor")
        assert healthy.returncode == 0, healthy.stdout + healthy.stderr
        wrapper(project).unlink()
    assert run_in(project, "sync", "--rebuild", "agent:remote-coder").returncode == 0
    runs_headless(project)


def test_rebuild_refuses_what_it_cannot_do(published, project, registry) -> None:
    manifest(project, registry, trusted=False)
    assert run_in(project, "install", "-y").returncode == 0
    untrusted = run_in(project, "sync", "--rebuild", "agent:remote-coder")
    assert untrusted.returncode == 1 and "Traceback" not in untrusted.stderr
    assert ("error: the install script of agent remote-coder 0.1.0 is not trusted, so it was not rebuilt"
            in untrusted.stderr)
    assert "`strawpot trust agent:remote-coder`" in untrusted.stderr
    missing = run_in(project, "sync", "--rebuild", "skill:not-here")
    assert missing.returncode == 2 and "skill:not-here is not in strawpot.lock" in missing.stderr
    bad = run_in(project, "sync", "--rebuild", "agent")
    assert bad.returncode == 2 and "'agent' is not KIND:SLUG" in bad.stderr
    assert not wrapper(project).exists()
