"""A session host's parts without a cluster: spare `start` processes, a session left by its sender, progress reads."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from orchestrator import remote_session
from orchestrator.remote_session import RemoteSession
from orchestrator.spare_start import Spares, fresh

WORKER_ENV = {k: os.environ[k] for k in remote_session.WORKER_OWN if k in os.environ}


def a_project_with_a_broken_config(root: Path) -> tuple[Path, dict[str, str]]:
    """A project folder and an environment whose config folder holds a broken config.toml: `start` there fails
    naming both, so its error line shows that the command ran in that folder with that environment."""
    (root / "proj").mkdir(parents=True)
    (root / "proj" / "strawpot.toml").write_text('[project]\nname = "p"\n')
    (root / "cfg").mkdir()
    (root / "cfg" / "config.toml").write_text("bad = [\n")
    return root / "proj", {**WORKER_ENV, "STRAWPOT_CONFIG_DIR": str(root / "cfg")}


def spare_of(spares: Spares, within: float = 30) -> subprocess.Popen[bytes]:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        spare = spares._spare  # noqa: SLF001 - which process is the spare is what this test is about
        if spare is not None:
            return spare
        time.sleep(0.05)
    raise AssertionError("no spare was started")


def test_a_spare_runs_the_sessions_command_as_a_fresh_start_does_and_a_new_spare_follows(tmp_path: Path) -> None:
    project, env = a_project_with_a_broken_config(tmp_path)
    # The project's own packages never stand in for ours (python -P): this one would say it was imported.
    (project / "orchestrator").mkdir()
    (project / "orchestrator" / "__init__.py").write_text(f"open({str(tmp_path / 'imported')!r}, 'w')\n")
    args = ["start", "--headless", "--task", "x"]
    expected = fresh(args, project, env, tmp_path / "fresh.err").wait(60)
    elsewhere = tmp_path / "elsewhere-config"  # the spare's own environment names another (broken) config folder:
    elsewhere.mkdir()  # the session must get only the environment it was sent
    (elsewhere / "config.toml").write_text("also = [\n")
    spares = Spares({**WORKER_ENV, "STRAWPOT_CONFIG_DIR": str(elsewhere), "STRAWPOT_LEAKED": "1"})
    try:
        spare = spare_of(spares)
        time.sleep(1)  # let it import the start path and wait for its order (it is taken either way)
        launched = spares.launch(args, project, env, tmp_path / "spare.err")
        assert launched is spare
        assert launched.wait(60) == expected == 2
        said = (tmp_path / "spare.err").read_text()
        assert said == (tmp_path / "fresh.err").read_text()
        assert said.startswith(f"error: {tmp_path / 'cfg' / 'config.toml'}:2:1: invalid TOML"), said
        following = spare_of(spares)
        assert following is not spare and following.poll() is None
        following.kill()  # a dead spare is passed over: the session starts fresh
        following.wait()
        again = spares.launch(args, project, env, tmp_path / "again.err")
        assert again is not following and again.wait(60) == 2
        assert (tmp_path / "again.err").read_text() == said
        plain = {**WORKER_ENV, "HOME": str(tmp_path / "home")}  # no config folder named: the spare's must not apply
        want = fresh(args, project, plain, tmp_path / "plain-fresh.err").wait(60)
        spare_of(spares)
        got = spares.launch(args, project, plain, tmp_path / "plain-spare.err").wait(60)
        seen = (tmp_path / "plain-spare.err").read_text()
        assert (got, seen) == (want, (tmp_path / "plain-fresh.err").read_text()) and "elsewhere" not in seen, seen
        assert not (tmp_path / "imported").exists()
    finally:
        spares.close()


def test_a_session_whose_sender_stops_asking_for_its_progress_is_stopped(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(remote_session, "ORPHANED", 3.0)
    session = RemoteSession("node-1")
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    session._proc = proc  # noqa: SLF001 - the session's `start`, as _start makes it
    asking = threading.Event()
    asks: list[float] = []  # when each `progress` call came
    stopped: list[float] = []
    progress, stop = session.progress, session.stop
    monkeypatch.setattr(session, "progress", lambda offset: asks.append(time.monotonic()) or progress(offset))
    monkeypatch.setattr(session, "stop", lambda: stopped.append(time.monotonic()) or stop())

    def sender() -> None:
        while not asking.wait(0.2):
            session.progress(0)

    threading.Thread(target=sender, daemon=True).start()
    threading.Timer(3, asking.set).start()  # the sender asks for 3 s, then is gone
    code = session._wait(proc)  # noqa: SLF001
    assert code == -15  # SIGTERM: `start` stops its agents and writes its record as on Ctrl-C (not the sleep's 0)
    # stopped once no one had asked for ORPHANED, measured from the last ask before the stop, as the session does
    # (a stalled machine moves both ends alike); never while asks came closer together than that
    assert stopped, "never stopped"
    last = max(at for at in asks if at <= stopped[0])
    assert 3.0 <= stopped[0] - last < 45, (stopped[0] - last, asks)  # not the child's 60 s either


def test_progress_brings_whole_trace_lines_from_an_offset_and_the_record(tmp_path: Path) -> None:
    session = RemoteSession("node-1")
    assert session.progress(0) == (b"", b"")  # before the run folder exists
    folder = tmp_path / "run"
    folder.mkdir()
    session._folder = folder  # noqa: SLF001 - set when the project is unpacked
    (folder / "trace.jsonl").write_bytes(b'{"event": "a"}\n{"event": "b"}\n{"event": "c", "half')
    (folder / "session.json").write_bytes(b'{"run_id": "r"}')
    chunk, record = session.progress(0)
    assert chunk == b'{"event": "a"}\n{"event": "b"}\n' and record == b'{"run_id": "r"}'
    assert session.progress(len(chunk))[0] == b""  # the line being written comes once it is whole
    (folder / "trace.jsonl").unlink()
    (folder / "trace.jsonl").symlink_to(tmp_path / "elsewhere")  # an agent's link is not followed
    (tmp_path / "elsewhere").write_bytes(b'{"event": "planted"}\n')
    assert session.progress(0)[0] == b""
