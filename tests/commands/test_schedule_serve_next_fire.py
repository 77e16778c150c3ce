"""`strawpot schedule serve` says when each schedule fires next, in its zone and in local time: on start, and
again after each fire (a real serve, a real locked project, a real headless session)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from orchestrator.schedules import Schedule, ScheduleStore
from tests._cli import STRAWPOT
from tests.orchestrator.conftest import ProjectFixture, standard_roles, standard_skills

LOCAL = ZoneInfo("Asia/Tokyo")  # the serve's TZ: neither schedule's zone
LINE = re.compile(r"schedule (\S+): next fire (\d{4}-\d\d-\d\d \d\d:\d\d) (\S+) \((\S+)\), "
                  r"(\d{4}-\d\d-\d\d \d\d:\d\d) JST local time")


def _said(stream: list[str], name: str) -> list[re.Match[str]]:
    return [m for line in stream if (m := LINE.fullmatch(line)) and m[1] == name]


def _check(found: re.Match[str], zone: str, after: datetime) -> datetime:
    """The instant a next-fire line names, checked: the same instant in the schedule's zone and in local time."""
    at = datetime.strptime(found[2], "%Y-%m-%d %H:%M").replace(tzinfo=ZoneInfo(zone))
    assert found[4] == zone and found[3] == at.strftime("%Z"), found[0]
    assert found[5] == at.astimezone(LOCAL).strftime("%Y-%m-%d %H:%M"), found[0]
    assert after < at <= after + timedelta(days=1), found[0]
    return at


def test_serve_says_each_schedules_next_fire_on_start_and_after_a_fire(tmp_path: Path) -> None:
    project = ProjectFixture(tmp_path / "proj", standard_roles(), standard_skills(),
                             policy={"max_depth": 3, "agent_timeout": 20, "kill_grace": 0.5})
    project.root.mkdir()
    project.build()
    data = tmp_path / "data"
    store = ScheduleStore(data)
    store.add(Schedule(name="paris", cron="0 9 * * *", project=project.root, role="orchestrator", task="echo:hi",
                       timezone="Europe/Paris"))
    # added an hour ago, every minute: with catch_up = latest it fires as serving begins
    store.add(Schedule(name="minutely", cron="* * * * *", project=project.root, role="orchestrator",
                       task="echo:tick", timezone="UTC", created=datetime.now(UTC) - timedelta(hours=1)))
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("STRAWPOT_", "STRAWHUB_"))},
           "STRAWPOT_DATA_DIR": str(data), "STRAWPOT_CONFIG_DIR": str(tmp_path / "config"), "NO_COLOR": "1",
           "TZ": "Asia/Tokyo", "STRAWPOT_SCHEDULE_CATCH_UP": "latest",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    started = datetime.now(UTC).replace(second=0, microsecond=0)
    serving = subprocess.Popen([*STRAWPOT, "schedule", "serve"], cwd=tmp_path, env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not any(r.outcome == "succeeded" for r in store.history("minutely")):
            assert time.monotonic() < deadline and serving.poll() is None, "the minutely schedule did not fire"
            time.sleep(0.1)
    finally:
        serving.send_signal(signal.SIGTERM)
        _, err = serving.communicate(timeout=30)
    lines = err.splitlines()
    assert serving.returncode == 0 and "Traceback" not in err, err
    assert lines[0].startswith("serving 2 schedules from "), err
    on_start = lines[1:3]  # one line per schedule, by name, before anything fires
    [paris] = _said(on_start, "paris")
    at = _check(paris, "Europe/Paris", started)
    assert (at.hour, at.minute) == (9, 0)
    [first] = _said(on_start, "minutely")
    assert _check(first, "UTC", started) <= started + timedelta(minutes=2)
    fired = next(i for i, line in enumerate(lines) if line.startswith("schedule minutely: started run "))
    after_fire = _said(lines[3:], "minutely")  # said again once the tick fired it
    assert after_fire and lines.index(after_fire[0][0]) < fired + 3, err
    assert _check(after_fire[0], "UTC", started) <= started + timedelta(minutes=3)
