"""`strawpot ui` runs the chat integrations settings enable, and `strawpot integrations list|start|stop|logs` as a
user runs them: a real install of the fixture adapter into its own virtual environment, a real `strawpot ui`,
real processes started, restarted with backoff, failed with their log tail, and stopped by SIGTERM."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from orchestrator.conversations import ConversationStore
from orchestrator.integration_keys import key_for
from tests._cli import STRAWPOT, strawpot, strawpot_here

pytestmark = pytest.mark.e2e
FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "integrations" / "fixture-bot"
NAME = "fixture-bot"
SET_TOKEN = f"strawpot config set --global integrations.{NAME}.env.STRAWPOT_BOT_TOKEN VALUE"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project with fixture-bot installed by path and built (its venv made, pip run), once for the module."""
    root = tmp_path_factory.mktemp("integration")
    project = root / "proj"
    project.mkdir()
    (project / "strawpot.toml").write_text(f'[integrations]\n{NAME} = {{ path = "{FIXTURE}" }}\n')
    env = {**_clean(), "STRAWPOT_HOME": str(root / "home"), "STRAWPOT_CONFIG_DIR": str(root / "config"),
           "STRAWPOT_DATA_DIR": str(root / "data"), "STRAWPOT_CACHE_DIR": str(root / "cache")}
    done = strawpot("trust", f"integration:{NAME}", cwd=project, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert (project / ".strawpot" / "integrations" / NAME / ".venv" / "bin" / "python").exists()
    return project


def _clean() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("STRAWPOT_", "STRAWHUB_"))}


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """A user of their own: global config, global tree and data folder in tmp_path."""
    return {**_clean(), "STRAWPOT_CONFIG_DIR": str(tmp_path / "config"), "STRAWPOT_HOME": str(tmp_path / "home"),
            "STRAWPOT_DATA_DIR": str(tmp_path / "data"), "STRAWPOT_CACHE_DIR": str(tmp_path / "cache"),
            "NO_COLOR": "1", "COLUMNS": "300"}


def configure(env: dict[str, str], cwd: Path, **values: str) -> None:
    for key, value in values.items():
        done = strawpot_here("config", "set", "--global", key.replace("__", "."), value, cwd=cwd, env=env)
        assert done.returncode == 0, done.stderr


def wait_for(predicate: Callable[[], object], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


@pytest.fixture
def ui(installed: Path, env: dict[str, str]) -> Iterator[Callable[[], subprocess.Popen[str]]]:
    """Starts `strawpot ui` on the project (when called); stops it with SIGTERM at the end."""
    started: list[subprocess.Popen[str]] = []

    def start() -> subprocess.Popen[str]:
        process = subprocess.Popen([*STRAWPOT, "ui", "--no-browser"], cwd=installed, env=env, text=True,
                                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        started.append(process)
        assert process.stderr is not None
        assert "StrawPot UI for " in process.stderr.readline()
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            process.communicate(timeout=60)


def listed(env: dict[str, str], cwd: Path) -> dict[str, dict[str, object]]:
    done = strawpot_here("integrations", "list", "--json", cwd=cwd, env=env)
    assert done.returncode == 0, done.stderr
    return {row["name"]: row for row in json.loads(done.stdout)["integrations"]}


def starts(data: Path) -> list[dict[str, object]]:
    """What each start of the adapter recorded (it writes env-<pid>.json first thing), oldest first."""
    files = sorted((data / "integrations" / NAME / "data").glob("env-*.json"), key=lambda p: p.stat().st_mtime)
    return [json.loads(p.read_text()) | {"mtime": p.stat().st_mtime} for p in files]


def test_ui_starts_an_enabled_integration_with_its_capability_url_and_stops_it_with_sigterm(
        installed: Path, env: dict[str, str], ui: Callable[[], subprocess.Popen[str]]) -> None:
    configure(env, installed, ui__integrations=NAME, **{f"integrations__{NAME}__env__STRAWPOT_BOT_TOKEN": "123:tok"})
    data = Path(env["STRAWPOT_DATA_DIR"])
    process = ui()
    wait_for(lambda: starts(data), "the adapter to start")
    seen = starts(data)[0]
    origin = json.loads((data / "ui.json").read_text())["origin"]
    assert origin.startswith("http://127.0.0.1:") and "token" not in (data / "ui.json").read_text()
    folder = installed / ".strawpot" / "integrations" / NAME
    assert seen["STRAWPOT_API_URL"] == f"{origin}/i/{key_for(data, NAME)}"
    assert seen["STRAWPOT_INTEGRATION_NAME"] == NAME and seen["STRAWPOT_BOT_TOKEN"] == "123:tok"
    assert seen["STRAWPOT_DATA_DIR"] == str(data / "integrations" / NAME / "data")
    # installed in the UI's project: its conversations are that project's, as the real adapters' project_id says
    assert seen["STRAWPOT_PROJECT_ID"] == str(ConversationStore(data).project_id(installed))
    assert seen["prefix"] == str(folder / ".venv") and seen["cwd"] == str(folder)  # its own venv's python

    row = listed(env, installed)[NAME]
    assert row["state"] == "running" and row["pid"] == seen["pid"] and row["enabled"] and row["restarts"] == 0
    assert row["scope"] == "project" and row["folder"] == str(folder)
    second = strawpot("ui", "--no-browser", cwd=installed, env=env, timeout=60)
    assert second.returncode == 1
    assert second.stderr.startswith(f"error: another strawpot ui (pid {process.pid} at {origin}) already serves "
                                    f"the data folder {data}"), second.stderr
    logs = strawpot("integrations", "logs", NAME, cwd=installed, env=env)
    assert logs.returncode == 0 and f"fixture-bot {seen['pid']} connecting to its chat service" in logs.stdout

    process.send_signal(signal.SIGTERM)
    process.communicate(timeout=60)
    stopped = data / "integrations" / NAME / "data" / f"stopped-{seen['pid']}"
    assert stopped.read_text() == "SIGTERM"  # the adapter got SIGTERM, and the UI waited for it
    assert not (data / "ui.json").exists()
    assert listed(env, installed)[NAME]["state"] == "not running (no strawpot ui)"


def test_an_adapter_that_exits_at_once_is_restarted_with_backoff_then_failed_with_its_log_tail(
        installed: Path, env: dict[str, str], ui: Callable[[], subprocess.Popen[str]]) -> None:
    configure(env, installed, ui__integrations=NAME, **{f"integrations__{NAME}__env__STRAWPOT_BOT_TOKEN": "t",
                                                        f"integrations__{NAME}__env__FIXTURE_BOT_EXIT": "3"})
    data = Path(env["STRAWPOT_DATA_DIR"])
    ui()
    wait_for(lambda: listed(env, installed)[NAME]["state"] == "failed", "the integration to fail")
    row = listed(env, installed)[NAME]
    error = str(row["error"])
    assert error.startswith("exited (code 3) 4 times in a row within 10 s of starting; not restarted until "
                            f"`strawpot integrations start {NAME}`; last lines of "), error
    assert error.endswith("fixture-bot: exiting at once with 3") and row["restarts"] == 3
    times = [float(str(s["mtime"])) for s in starts(data)]
    assert len(times) == 4  # started, then restarted three times, then left alone
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert gaps[0] >= 0.9 and gaps[1] >= 1.9 and gaps[2] >= 3.9, gaps  # 1 s, 2 s, 4 s
    time.sleep(1.5)
    assert len(starts(data)) == 4
    shown = strawpot("integrations", "list", cwd=installed, env=env)
    [line] = [line for line in shown.stdout.splitlines() if line.startswith(f"{NAME}  failed: exited (code 3) 4 times")]
    assert "adapter.log: fixture-bot: exiting at once with 3  [enabled]" in line, line  # what its log said last

    configure(env, installed, **{f"integrations__{NAME}__env__FIXTURE_BOT_EXIT": ""})
    again = strawpot("integrations", "start", NAME, cwd=installed, env=env, timeout=120)
    assert again.returncode == 0, again.stderr
    assert again.stderr.startswith(f"Started {NAME} (pid "), again.stderr
    assert listed(env, installed)[NAME]["state"] == "running"


def test_a_missing_required_variable_is_one_line_naming_it_and_how_to_set_it(
        installed: Path, env: dict[str, str], ui: Callable[[], subprocess.Popen[str]]) -> None:
    process = ui()
    done = strawpot("integrations", "start", NAME, cwd=installed, env=env, timeout=120)
    assert done.returncode == 1
    line = (f"error: integration {NAME} did not start: integration {NAME} needs STRAWPOT_BOT_TOKEN (the bot token "
            f"(any text; the fixture only records it)), which is not set; set it with `{SET_TOKEN}`")
    assert done.stderr.strip() == line, done.stderr  # one line: what is missing, and how to set it
    assert "Traceback" not in done.stderr
    assert not starts(Path(env["STRAWPOT_DATA_DIR"]))  # nothing ran
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert f"integration {NAME} not started: integration {NAME} needs STRAWPOT_BOT_TOKEN" in err


def test_start_and_stop_are_remembered_and_the_running_ui_acts_on_them(
        installed: Path, env: dict[str, str], ui: Callable[[], subprocess.Popen[str]]) -> None:
    configure(env, installed, **{f"integrations__{NAME}__env__STRAWPOT_BOT_TOKEN": "t"})  # installed, not enabled
    data = Path(env["STRAWPOT_DATA_DIR"])
    early = strawpot("integrations", "start", NAME, cwd=installed, env=env)
    assert early.returncode == 0 and early.stderr.strip() == (
        f"Recorded: {NAME} will start when `strawpot ui` runs (none serves {data} now)")
    ui()
    wait_for(lambda: starts(data), "the adapter to start")
    pid = int(str(starts(data)[0]["pid"]))
    done = strawpot("integrations", "stop", NAME, cwd=installed, env=env, timeout=120)
    assert done.returncode == 0 and done.stderr.strip() == f"Stopped {NAME}", done.stderr
    assert (data / "integrations" / NAME / "data" / f"stopped-{pid}").read_text() == "SIGTERM"
    row = listed(env, installed)[NAME]
    assert row["state"] == "stopped" and row["said"] == "stop" and not row["enabled"]


@pytest.mark.parametrize(("args", "code", "line"), [
    (("integrations", "start", "Not_A_Name"), 2, "error: integration name 'Not_A_Name' is not a valid slug"),
    (("integrations", "start", "nowhere"), 1, "error: integration nowhere is not installed here or globally"),
    (("integrations", "logs", "nowhere"), 1, "error: integration nowhere has no log at "),
])
def test_bad_names_are_one_line(args: tuple[str, ...], code: int, line: str, env: dict[str, str],
                                tmp_path: Path) -> None:
    done = strawpot(*args, cwd=tmp_path, env=env)
    assert done.returncode == code and done.stderr.startswith(line), done.stderr
    assert "Traceback" not in done.stderr


def test_an_integration_whose_install_command_never_ran_is_not_started(installed: Path, tmp_path: Path) -> None:
    from orchestrator.integration_launch import NotStartable, prepare

    tree = tmp_path / "tree"
    shutil.copytree(installed / ".strawpot" / "integrations" / NAME, tree / "integrations" / NAME,
                    ignore=shutil.ignore_patterns(".venv", ".install-record.json"))
    with pytest.raises(NotStartable) as info:
        prepare(NAME, [tree], tmp_path / "data", "http://127.0.0.1:1", {"STRAWPOT_BOT_TOKEN": "t"}, os.environ)
    assert str(info.value) == (f"integration {NAME}'s install command has not run here, so it has no virtual "
                               f"environment; review it (`strawpot info integration {NAME}`), then run "
                               f"`strawpot trust integration:{NAME}`")


def test_a_ui_started_after_one_was_killed_stops_the_integration_it_left_running(
        installed: Path, env: dict[str, str], ui: Callable[[], subprocess.Popen[str]]) -> None:
    configure(env, installed, ui__integrations=NAME, **{f"integrations__{NAME}__env__STRAWPOT_BOT_TOKEN": "t"})
    data = Path(env["STRAWPOT_DATA_DIR"])
    first = ui()
    wait_for(lambda: starts(data), "the adapter to start")
    orphan = int(str(starts(data)[0]["pid"]))
    first.kill()  # SIGKILL: the UI cannot stop its integration
    first.communicate(timeout=30)
    try:
        os.kill(orphan, 0)  # still running, alone
        second = ui()
        wait_for(lambda: len(starts(data)) == 2, "the new UI's adapter to start")
        assert (data / "integrations" / NAME / "data" / f"stopped-{orphan}").read_text() == "SIGTERM"  # not twice
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(orphan, signal.SIGKILL)  # whatever happened above, the test leaves no process behind
    second.send_signal(signal.SIGTERM)
    _, err = second.communicate(timeout=60)
    assert f"integration {NAME}: stopping pid {orphan}, left running by a UI that was killed" in err


def test_logs_prints_the_tail_and_follows_what_is_appended_until_ctrl_c(env: dict[str, str], tmp_path: Path) -> None:
    log = Path(env["STRAWPOT_DATA_DIR"]) / "integrations" / NAME / "adapter.log"
    log.parent.mkdir(parents=True)
    log.write_text("".join(f"line {n}\n" for n in range(100)) + "\x1b[31mred\x1b[0m\n")
    shown = strawpot("integrations", "logs", NAME, "-n", "3", cwd=tmp_path, env=env)
    assert shown.returncode == 0 and shown.stdout == "line 98\nline 99\nred\n"  # escapes dropped
    follow = subprocess.Popen([*STRAWPOT, "integrations", "logs", NAME, "-n", "1", "--follow"], cwd=tmp_path, env=env,
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert follow.stdout is not None
        assert follow.stdout.readline() == "red\n"
        with open(log, "a") as fh:
            fh.write("appended later\n")
        assert follow.stdout.readline() == "appended later\n"
    finally:
        follow.send_signal(signal.SIGINT)
        _, err = follow.communicate(timeout=30)
    assert follow.returncode == 0 and "Traceback" not in err, err
