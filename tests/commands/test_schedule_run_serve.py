"""`strawpot schedule run|serve|history` and `strawpot ui`'s scheduler as a user runs them: real subprocesses, a
real locked project, real headless sessions."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from orchestrator.scheduler import serve_in_background
from orchestrator.schedules import Schedule, ScheduleStore
from tests._cli import STRAWPOT, strawpot, strawpot_here

pytestmark = pytest.mark.e2e


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The CLI's environment: a global config folder and a data folder of its own."""
    (tmp_path / "config").mkdir()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("STRAWPOT_", "STRAWHUB_"))}
    return {**base, "STRAWPOT_CONFIG_DIR": str(tmp_path / "config"), "STRAWPOT_DATA_DIR": str(tmp_path / "data"),
            "NO_COLOR": "1", "COLUMNS": "200"}


def add(name: str, project: Path, task: str, env: dict[str, str]) -> None:
    done = strawpot_here("schedule", "add", name, "--cron", "0 9 * * *", "--timezone", "UTC", "--role", "orchestrator",
               "--task", task, "--project", str(project), env=env, cwd=project)
    assert done.returncode == 0, done.stderr


def history(name: str, env: dict[str, str], cwd: Path) -> list[dict[str, object]]:
    done = strawpot_here("schedule", "history", name, "--json", env=env, cwd=cwd)
    assert done.returncode == 0, done.stderr
    runs: list[dict[str, object]] = json.loads(done.stdout)["runs"]
    return runs


def wait_for(predicate, timeout: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_run_fires_now_waits_and_exits_with_the_sessions_code(project, env) -> None:  # type: ignore[no-untyped-def]
    project.build()
    add("triage", project.root, "echo:triaged", env)
    add("broken", project.root, "echo:half then fail:4", env)
    done = strawpot("schedule", "run", "triage", env=env, cwd=project.root)
    assert done.returncode == 0, done.stderr
    [run] = history("triage", env, project.root)
    assert done.stdout.strip() == "triaged"  # the session's result, as `strawpot start` prints it
    assert done.stderr.strip().endswith(f"run {run['run_id']} succeeded (exit code 0)")
    assert (run["outcome"], run["exit_code"], run["scheduled_for"]) == ("succeeded", 0, None)
    recorded = json.loads((project.sessions_dir / str(run["run_id"]) / "session.json").read_text())
    assert recorded["tmux"] == ""  # a headless run with a given run id is not a run inside tmux

    failed = strawpot("schedule", "run", "broken", env=env, cwd=project.root)
    [bad] = history("broken", env, project.root)
    assert failed.returncode == 4
    # the session ran and failed: its end line once, not repeated as its own reason
    assert failed.stderr.strip().splitlines()[-1] == f"run {bad['run_id']} failed (exit code 4)"
    assert (bad["outcome"], bad["exit_code"], bad["error"]) == ("failed", 4, "")
    said = strawpot_here("schedule", "history", "broken", env=env, cwd=project.root).stdout
    assert said.strip().endswith(f"  {bad['run_id']}  failed (exit code 4)"), said


def test_run_of_a_broken_project_is_one_line_and_recorded(project, env, tmp_path) -> None:  # type: ignore[no-untyped-def]
    project.build()
    add("tampered", project.root, "echo:x", env)
    skill = project.state_dir / "skills" / "coding" / "SKILL.md"
    skill.write_text(skill.read_text().replace("wisely", "BADLY!"))
    done = strawpot("schedule", "run", "tampered", env=env, cwd=tmp_path)
    assert done.returncode == 5 and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[0].startswith(
        "error: schedule tampered: the installed packages do not match strawpot.lock: skill coding: SKILL.md")
    [run] = history("tampered", env, tmp_path)
    assert (run["outcome"], run["exit_code"]) == ("failed", 5) and "content differs" in str(run["error"])

    gone = tmp_path / "gone"
    gone.mkdir()
    add("gone", gone, "echo:x", env)
    gone.rmdir()
    done = strawpot("schedule", "run", "gone", env=env, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines()[0] == (f"error: schedule gone: project folder {gone} does not exist: create "
                                           "it or remove the schedule")
    assert [r["outcome"] for r in history("gone", env, tmp_path)] == ["failed"]
    missing = strawpot("schedule", "run", "nope", env=env, cwd=tmp_path)
    assert missing.returncode == 2 and "error: no schedule named 'nope'" in missing.stderr


def test_history_of_an_unknown_name_exits_2_and_of_a_schedule_that_never_fired_says_so(project, env, tmp_path) -> None:  # type: ignore[no-untyped-def]
    unknown = strawpot_here("schedule", "history", "nope", env=env, cwd=tmp_path)
    assert (unknown.returncode, unknown.stdout) == (2, "")
    assert unknown.stderr.splitlines()[0] == "error: no schedule named 'nope', and no history of one"
    project.build()
    add("fresh", project.root, "echo:x", env)
    fresh = strawpot_here("schedule", "history", "fresh", env=env, cwd=tmp_path)
    assert (fresh.returncode, fresh.stdout) == (0, "")
    assert fresh.stderr.strip() == "schedule fresh has not fired yet (`strawpot schedule run fresh` fires it now)"
    assert history("fresh", env, tmp_path) == []


def test_add_warns_when_the_project_cannot_run_it_yet(project, env, tmp_path) -> None:  # type: ignore[no-untyped-def]
    nowhere = tmp_path / "src" / "app"
    done = strawpot_here("schedule", "add", "later", "--cron", "0 9 * * *", "--role", "r", "--task", "t", "--project",
               str(nowhere), env=env, cwd=tmp_path)
    assert done.returncode == 0
    assert done.stderr.splitlines() == [
        "Added schedule later (0 9 * * *, " + done.stderr.split("(0 9 * * *, ", 1)[1].split(")", 1)[0] + ")",
        f"warning: schedule later cannot fire yet: project folder {nowhere} does not exist: create it or remove "
        "the schedule"]
    unlocked = tmp_path / "unlocked"
    unlocked.mkdir()
    done = strawpot_here("schedule", "add", "unlocked", "--cron", "0 9 * * *", "--role", "r", "--task", "t", "--project",
               str(unlocked), env=env, cwd=tmp_path)
    assert done.stderr.splitlines()[-1] == (f"warning: schedule unlocked cannot fire yet: no strawpot.lock in "
                                            f"{unlocked}: run `strawpot lock` there")
    project.build()
    done = strawpot_here("schedule", "add", "ready", "--cron", "0 9 * * *", "--role", "r", "--task", "t", "--project",
               str(project.root), env=env, cwd=tmp_path)
    assert "warning" not in done.stderr


def _due_three_hours_ago(data: Path, project: Path) -> None:
    """A schedule added three hours ago that fires hourly, half an hour away from now: three fire times passed, so
    with catch_up = latest it fires as serving begins and two are missed; the next one is half an hour off, so
    none comes while a test runs (a minutely schedule fired again whenever a minute turned during the test)."""
    now = datetime.now(UTC)
    ScheduleStore(data).add(Schedule(name="hourly", cron=f"{(now.minute + 30) % 60} * * * *", project=project,
                                     role="orchestrator", task="echo:tick", timezone="UTC",
                                     created=now - timedelta(hours=3)))


def test_serve_fires_and_a_second_serve_refuses_naming_the_pid(project, env, tmp_path) -> None:  # type: ignore[no-untyped-def]
    project.build()
    _due_three_hours_ago(tmp_path / "data", project.root)
    serving = subprocess.Popen([*STRAWPOT, "schedule", "serve"], cwd=tmp_path, stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               env={**env, "STRAWPOT_SCHEDULE_CATCH_UP": "latest"})
    try:
        lock = tmp_path / "data" / "scheduler.lock"
        wait_for(lambda: lock.is_file() and lock.read_text().strip() == str(serving.pid))
        second = strawpot("schedule", "serve", env=env, cwd=tmp_path)
        assert second.returncode == 1 and "Traceback" not in second.stderr
        assert second.stderr.strip() == (f"error: another scheduler (pid {serving.pid}: `strawpot schedule serve` "
                                         f"or `strawpot ui`) already serves {tmp_path / 'data'}: stop it first")
        wait_for(lambda: any(r["outcome"] == "succeeded" for r in history("hourly", env, tmp_path)))
    finally:
        serving.send_signal(signal.SIGTERM)
        _, err = serving.communicate(timeout=30)
    assert serving.returncode == 0, err
    assert "stopped serving schedules" in err and "Traceback" not in err
    missed, run = history("hourly", env, tmp_path)  # three fire times passed: the latest fired, two missed
    assert missed["outcome"] == "missed"
    assert missed["error"] == "2 fire times passed while no scheduler ran (catch_up = latest)"
    assert run["scheduled_for"] and run["run_id"]


def test_ui_runs_the_scheduler_unless_a_serve_holds_the_lock(project, env, tmp_path) -> None:  # type: ignore[no-untyped-def]
    project.build()
    ui_argv = [*STRAWPOT, "ui", "--no-browser", "--project", str(project.root)]
    ui_env = {**env, "STRAWPOT_SCHEDULE_CATCH_UP": "latest"}
    serve = subprocess.Popen([*STRAWPOT, "schedule", "serve"], cwd=tmp_path, env=env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    lock = tmp_path / "data" / "scheduler.lock"
    ui = None
    try:
        wait_for(lambda: lock.is_file() and lock.read_text().strip() == str(serve.pid))
        ui = subprocess.Popen(ui_argv, cwd=project.root, env=ui_env, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        assert ui.stderr is not None
        lines = ui.stderr.readline() + ui.stderr.readline()  # the UI's URL, then the scheduler's one line
        assert f"schedules: another scheduler (pid {serve.pid}: " in lines and "this UI does not fire them" in lines
    finally:
        serve.terminate()
        serve.wait(timeout=30)
        if ui is not None:
            ui.terminate()
            ui.communicate(timeout=30)

    _due_three_hours_ago(tmp_path / "data", project.root)
    ui = subprocess.Popen(ui_argv, cwd=project.root, env=ui_env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: any(r["outcome"] == "succeeded" for r in history("hourly", env, tmp_path)), timeout=60)
    finally:
        ui.terminate()
        ui.communicate(timeout=30)


def test_a_serve_started_while_the_ui_runs_refuses_naming_the_ui(tmp_path, env) -> None:  # type: ignore[no-untyped-def]
    """The UI keeps the scheduler's lock for as long as it runs, not only while it starts its scheduler."""
    ui = subprocess.Popen([*STRAWPOT, "ui", "--no-browser"], cwd=tmp_path, env=env, stdin=subprocess.DEVNULL,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert ui.stderr is not None
        assert "StrawPot UI: http://127.0.0.1:" in ui.stderr.readline()
        lock = tmp_path / "data" / "scheduler.lock"
        wait_for(lambda: lock.is_file() and lock.read_text().strip() == str(ui.pid))
        # without the lock this serve would serve until killed: a bound makes that a failure
        second = strawpot("schedule", "serve", cwd=tmp_path, env=env, timeout=120)
        assert second.returncode == 1, second.stderr
        assert second.stderr.strip() == (f"error: another scheduler (pid {ui.pid}: `strawpot schedule serve` "
                                         f"or `strawpot ui`) already serves {tmp_path / 'data'}: stop it first")
    finally:
        ui.terminate()
        ui.communicate(timeout=30)


def test_ctrl_c_on_run_stops_the_session_and_the_history_says_so(project, env, tmp_path) -> None:  # type: ignore[no-untyped-def]
    project.build()
    add("slow", project.root, "sleep:30", env)
    proc = subprocess.Popen([*STRAWPOT, "schedule", "run", "slow"], cwd=tmp_path, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        wait_for(lambda: any(project.sessions_dir.glob("*/session.json")) and any(
            a["state"] == "running" for f in project.sessions_dir.glob("*/session.json")
            for a in json.loads(f.read_text())["agents"]))
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C on the terminal does: the whole foreground group
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130 and "Traceback" not in err, err
    [run] = history("slow", env, tmp_path)
    assert (run["outcome"], run["exit_code"]) == ("interrupted", 130)


def test_a_symlinked_scheduler_lock_is_refused_in_one_line_and_its_target_kept(env, tmp_path) -> None:  # type: ignore[no-untyped-def]
    precious = tmp_path / "precious.txt"  # what a link planted in the data folder points at
    precious.write_text("a file of the user's\n")
    (tmp_path / "data").mkdir()
    lock = tmp_path / "data" / "scheduler.lock"
    lock.symlink_to(precious)
    served = strawpot("schedule", "serve", env=env, cwd=tmp_path)
    assert served.returncode == 1 and served.stderr.splitlines() == [
        f"error: cannot lock {lock}: a symbolic link, not followed",
        "hint: remove it (no scheduler runs while it is there)"], served.stderr
    said: list[str] = []
    assert serve_in_background(tmp_path / "data", "none", said.append) is None  # the UI's scheduler
    assert said == [f"schedules: cannot lock {lock}: a symbolic link, not followed; this UI does not fire them"]
    assert precious.read_text() == "a file of the user's\n" and lock.is_symlink()
