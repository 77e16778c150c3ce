"""Links a sandboxed agent plants in its own workspace (`result`, `agent.log`, `agent.pid`, `ROLE.md`, `skills`)
lead strawpot, which runs unconfined, nowhere: it neither reads nor writes through them, now or at `resume`."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from dashboard.logtail import tail
from strawpot.model.agent_files import open_regular
from tests._cli import strawpot
from tests.orchestrator._agents import resumable_agent

pytestmark = pytest.mark.e2e
KEY = "-----BEGIN OPENSSH PRIVATE KEY----- not-a-real-key"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(KEY)
    (home / ".bashrc").write_text("# mine\n")
    (home / ".profile").write_text("# profile\n")
    (home / "pidfile").write_text("mine\n")
    (home / "elsewhere").mkdir()
    return home


def run(root: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("STRAWPOT_", "XDG_CONFIG"))}
    return strawpot(*args, cwd=root, env={**environ, "HOME": str(home), "STRAWPOT_SESSION_SANDBOX": "bwrap"})


def test_a_sub_agents_result_linked_to_a_key_is_not_read_nor_handed_to_its_caller(project, home) -> None:  # type: ignore[no-untyped-def]
    project.build()
    proc = run(project.root, home, "start", "--headless", "--task",
               f"delegate:implementer:plant:result={home}/.ssh/id_rsa")
    assert proc.returncode == 0, proc.stderr
    assert KEY not in proc.stdout and KEY not in proc.stderr
    assert "result is not a regular file" in proc.stdout, proc.stdout
    assert (home / ".ssh" / "id_rsa").read_text() == KEY


def test_resume_neither_writes_nor_copies_through_links_the_agent_planted(project, home, tmp_path) -> None:  # type: ignore[no-untyped-def]
    project.build(resumable_agent(tmp_path))
    plants = {"agent.log": home / ".bashrc", "agent.pid": home / "pidfile", "ROLE.md": home / ".profile",
              "role_prompt.md": home / ".profile", "skills": home / "elsewhere"}
    task = " then ".join(f"plant:{name}={target}" for name, target in plants.items()) + " then pause"
    first = run(project.root, home, "start", "--headless", "--task", task)
    assert first.returncode == 0, first.stderr
    [run_dir] = (project.root / ".strawpot" / "sessions").iterdir()
    [agent] = json.loads((run_dir / "session.json").read_text())["agents"]
    workspace = Path(agent["workspace"])
    assert all((workspace / name).is_symlink() for name in plants), "the agent could not plant its links"

    again = run(project.root, home, "resume", run_dir.name, "--headless", "--task", "echo:carried on")
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == "carried on"
    assert (home / ".bashrc").read_text() == "# mine\n"
    assert (home / "pidfile").read_text() == "mine\n"
    assert (home / ".profile").read_text() == "# profile\n"
    assert list((home / "elsewhere").iterdir()) == []
    for name in plants:  # each was replaced by strawpot's own file or folder
        assert not (workspace / name).is_symlink(), name
    assert (workspace / "skills" / "planning" / "SKILL.md").is_file()
    assert "You are the orchestrator." in (workspace / "ROLE.md").read_text()
    assert "carried on" in (workspace / "agent.log").read_text()


def test_open_regular_refuses_or_replaces_what_is_not_a_plain_file(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("secret")
    link = tmp_path / "link"
    link.symlink_to(secret)
    with pytest.raises(OSError):
        open_regular(link)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file"):
        open_regular(fifo)  # returns at once: no writer is waited for
    hard = tmp_path / "hard"
    os.link(secret, hard)
    for planted, mode in ((link, "w"), (fifo, "a"), (hard, "a")):
        with open_regular(planted, mode) as fh:  # type: ignore[arg-type]
            fh.write(b"ours")
        assert not planted.is_symlink() and planted.read_bytes() == b"ours" and os.stat(planted).st_nlink == 1
    assert secret.read_text() == "secret"
    with open_regular(hard, "a") as fh:
        fh.write(b" and more")
    with open_regular(hard) as fh:
        assert fh.read() == b"ours and more"


def test_the_ui_does_not_show_a_log_the_agent_linked_to_a_key(home: Path, tmp_path: Path) -> None:
    log = tmp_path / "agent.log"
    log.symlink_to(home / ".ssh" / "id_rsa")
    assert tail(log) == ""
    log.unlink()
    log.write_text("working\n")
    assert tail(log) == "working\n"
