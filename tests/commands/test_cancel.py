"""`strawpot cancel` as a user runs it: an agent and its subtree, a whole run, a run whose strawpot died, an address off
this machine."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from tests._cli import strawpot
from tests.commands._runs import running, start_in_background

pytestmark = pytest.mark.e2e


def test_cancel_an_agent_and_its_subtree(project, env, pid_alive) -> None:  # type: ignore[no-untyped-def]
    project.policy["agent_timeout"] = 300  # the test cancels them; a loaded machine is slow
    project.build()
    proc = start_in_background(project, "delegate:implementer:delegate:reviewer:sleep:300", env)
    try:
        run_id, agents = running(project, 3)
        implementer = next(a for a in agents if a["role"] == "implementer")
        sub = strawpot("cancel", run_id, "--agent", implementer["agent_id"], "--json", cwd=project.root, env=env)
        assert sub.returncode == 0, sub.stderr
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert sorted(json.loads(sub.stdout)["cancelled"]) == sorted(
        a["agent_id"] for a in agents if a["role"] != "orchestrator")
    # the orchestrator saw its delegation cancelled and ended normally
    assert proc.returncode == 0, err
    assert out.startswith("ERROR ERR_SUBAGENT_CANCELLED")
    assert all(not pid_alive(a["pid"]) for a in agents)


def token_bases(env: dict[str, str]) -> list[str]:
    """Where the runs of `env` keep their sockets and tokens (orchestrator.endpoint.socket_bases, in that env)."""
    import tempfile

    return [b for b in (env.get("XDG_RUNTIME_DIR"), env.get("TMPDIR") or tempfile.gettempdir(), "/tmp") if b]


@pytest.mark.parametrize("transport", ["unix", "tcp"])
def test_cancel_the_whole_run(project, env, pid_alive, transport) -> None:  # type: ignore[no-untyped-def]
    project.denden = {"transport": transport}  # over TCP, cancel must send the run's token
    project.policy["agent_timeout"] = 300  # the test cancels them; a loaded machine is slow
    project.build()
    proc = start_in_background(project, "delegate:implementer:sleep:300", env)
    try:
        run_id, agents = running(project, 2)
        unknown = strawpot("cancel", run_id, "--agent", "ghost-1", cwd=project.root, env=env)
        assert unknown.returncode == 2 and "no agent 'ghost-1' in this run" in unknown.stderr
        from orchestrator.run_token import FOLDER_PREFIX, TOKEN_FILE

        assert not (project.sessions_dir / run_id / TOKEN_FILE).exists()  # never in the run folder
        token = next((p for base in token_bases(env) if (p := Path(base) / f"{FOLDER_PREFIX}{run_id}" / TOKEN_FILE)
                      .is_file()), None)
        assert (token is not None) == (transport == "tcp")
        if token is not None:
            assert token.stat().st_mode & 0o777 == 0o600
            assert json.loads((project.sessions_dir / run_id / "session.json").read_text())["denden_addr"] \
                .startswith("127.0.0.1:")
        whole = strawpot("cancel", run_id, cwd=project.root, env=env)
        assert whole.returncode == 0, whole.stderr
        assert f"run {run_id} cancelled" in whole.stderr
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert f"run {run_id} cancelled (exit code 130)" in err  # one code: shown, recorded, returned
    assert all(not pid_alive(a["pid"]) for a in agents)
    data = json.loads((project.sessions_dir / run_id / "session.json").read_text())
    assert data["state"] == "cancelled" and data["exit_code"] == 130
    assert {a["exit_code"] for a in data["agents"]} == {130}
    listed = strawpot("sessions", cwd=project.root, env=env).stdout.splitlines()[1].split()
    assert listed[listed.index("cancelled") + 1] == "130", listed
    assert {a["role"]: a["state"] for a in data["agents"]} == {"orchestrator": "cancelled", "implementer": "cancelled"}
    ended = strawpot("cancel", run_id, cwd=project.root, env=env)
    assert ended.returncode == 2 and f"run {run_id} has ended (cancelled)" in ended.stderr
    assert not (project.sessions_dir / run_id / "denden.token").exists()  # gone with its server


def test_cancel_after_the_runs_strawpot_died_stops_what_it_leftrunning(project, env, pid_alive) -> None:  # type: ignore[no-untyped-def]
    project.policy["agent_timeout"] = 300  # the test cancels them; a loaded machine is slow
    project.build()
    proc = start_in_background(project, "delegate:implementer:sleep:300", env)
    try:
        run_id, agents = running(project, 2)
    finally:
        proc.kill()  # SIGKILL: no clean-up at all; its agents, each in a group of its own, keep running
        proc.communicate(timeout=60)
    assert all(pid_alive(a["pid"]) for a in agents)
    result = strawpot("cancel", run_id, cwd=project.root, env=env)
    assert result.returncode == 0, result.stderr
    assert "its strawpot process is gone; stopped the agents it left running" in result.stderr
    deadline = time.monotonic() + 60
    while any(pid_alive(a["pid"]) for a in agents) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(pid_alive(a["pid"]) for a in agents)
    data = json.loads((project.sessions_dir / run_id / "session.json").read_text())
    assert data["state"] == "cancelled" and {a["state"] for a in data["agents"]} == {"cancelled"}


def test_cancel_sends_nothing_to_an_address_off_this_machine_and_reads_no_planted_token(project, env, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from orchestrator.endpoint import socket_bases
    from orchestrator.run_token import FOLDER_PREFIX, TOKEN_FILE, read_token

    project.build()
    run_id = "run_20260101_000000_abcdef"
    folder = project.sessions_dir / run_id
    folder.mkdir(parents=True)
    (folder / "session.json").write_text(json.dumps({
        "run_id": run_id, "state": "running", "owner_pid": os.getpid(), "denden_addr": "203.0.113.7:50051",
        "agents": [{"agent_id": "orchestrator-1", "parent": None}]}))
    secret = tmp_path / "secret"
    secret.write_text("not a token\n")
    planted = Path(socket_bases()[0]) / f"{FOLDER_PREFIX}{run_id}"
    planted.mkdir(mode=0o700)
    try:
        (planted / TOKEN_FILE).symlink_to(secret)  # a link at the token's name is not followed
        assert read_token(run_id) is None
        (planted / TOKEN_FILE).unlink()
        (planted / TOKEN_FILE).write_text("sh_planted")
        planted.chmod(0o755)  # a folder others may enter is not where a token lives
        assert read_token(run_id) is None
        assert read_token("../" + run_id) is None  # not a run id: no path is made of it
    finally:
        shutil.rmtree(planted)
    refused = strawpot("cancel", run_id, cwd=project.root, env=env)
    assert refused.returncode == 2, refused.stderr
    assert "'203.0.113.7:50051' is not a socket or a loopback address" in refused.stderr and "nothing was sent" \
        in refused.stderr
