"""A schedule fires at its time and the UI shows it: the scheduler at an injected clock runs a real headless session
of a real locked project, then `/schedules` links that run as `succeeded` and its run page draws its agent tree."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from markupsafe import escape
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from dashboard.app import create_app
from dashboard.security import cookie_name
from orchestrator.projects import project_key
from orchestrator.run_record import find_run
from orchestrator.scheduler import Scheduler
from orchestrator.schedules import Schedule, ScheduleRun, ScheduleStore
from tests._fake_clock import Clock
from tests.orchestrator.conftest import ProjectFixture, standard_roles, standard_skills
from tests.ui._live import no_script_errors, serving, wait_for

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "registry_server" / "web"))
from _browser import save_screenshot, start_chromium  # noqa: E402

pytestmark = pytest.mark.e2e
SECRET = "schedule-ui-secret"
NINE = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)  # a Monday
TASK = "echo:triaging then delegate:implementer:write:TRIAGE.md=fixed the first issue"
MERGED = "applied the session's changes to your working tree (1 file): TRIAGE.md"
IDENTITY = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example.org"}


@dataclass(frozen=True)
class Fired:
    root: Path
    data: Path
    run: ScheduleRun
    clock: Clock  # the scheduler's, which the UI shows next fires by

    @property
    def run_page(self) -> str:
        return f"/p/{project_key(self.root)}/runs/{self.run.run_id}"


def _fire(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Fired:
    """A weekday-09:00 schedule of a locked project, served by the scheduler from 08:59:50 (injected) to its fire."""
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.setenv("STRAWPOT_CONFIG_DIR", str(tmp_path / "config"))
    data = tmp_path / "data"
    monkeypatch.setenv("STRAWPOT_DATA_DIR", str(data))  # the fired `strawpot start` records its project there
    root = tmp_path / "proj"
    root.mkdir()
    ProjectFixture(root, standard_roles(), standard_skills(),
                   policy={"max_depth": 3, "agent_timeout": 30, "kill_grace": 0.5}).build()
    # The project runs its sessions in a git worktree, merged back at the end (a setting, not a dependency).
    with (root / "strawpot.toml").open("a") as toml:
        toml.write('\n[session]\nisolation = "worktree"\n')
    (root / ".gitignore").write_text(".strawpot/\n")
    for args in (("init", "-q", "-b", "main"), ("add", "-A"), ("commit", "-q", "-m", "first")):
        subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, env={**os.environ, **IDENTITY})
    store = ScheduleStore(data)
    store.add(Schedule("triage", "0 9 * * 1-5", root, "orchestrator", TASK, timezone="UTC",
                       created=NINE - timedelta(hours=1)))
    clock = Clock(NINE - timedelta(seconds=10))
    scheduler = Scheduler(store, now=clock, say=lambda line: None)

    def sleep(seconds: float) -> None:  # the look after 09:00 is the loop's last
        clock.sleep(seconds)
        if len(clock.slept) == 2:
            scheduler.stop()

    scheduler.sleep = sleep
    scheduler.serve()
    scheduler.wait_idle()
    assert clock.slept[0] == pytest.approx(10.0)  # it slept straight to 09:00, no longer
    [run] = store.history("triage")
    assert (run.scheduled_for, run.outcome, run.exit_code) == (NINE, "succeeded", 0), run.error
    session = find_run(root / ".strawpot" / "sessions", str(run.run_id))
    assert session is not None and session.state == "succeeded" and session.task == TASK
    assert (root / "TRIAGE.md").read_text() == "fixed the first issue"  # the worktree's work came back
    return Fired(root, data, run, clock)


def _row(page: str, name: str) -> str:
    """The `<tr>` of schedule `name` in the schedules table."""
    [row] = [r for r in re.findall(r"<tr>.*?</tr>", page, re.S) if f"<td>{name}</td>" in r]
    return row


def test_a_fired_schedule_is_listed_with_its_succeeded_run_whose_page_draws_the_agent_tree(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fired = _fire(tmp_path, monkeypatch)
    with serving(create_app(None, SECRET, data_dir=fired.data, now=fired.clock)) as base, \
            httpx.Client(base_url=base, cookies={cookie_name(httpx.URL(base).port): SECRET}) as client:
        assert httpx.get(f"{base}/schedules").status_code == 403  # without the secret: nothing
        listing = client.get("/schedules")
        assert listing.status_code == 200
        row = _row(listing.text, "triage")
        assert '<span class="state state-succeeded">succeeded</span>' in row and "2026-01-05 09:00 UTC" in row
        assert "<td>2026-01-06 09:00 UTC</td>" in row  # the next weekday 09:00 by the scheduler's clock
        assert f'<a href="{fired.run_page}">run page</a>' in row

        page = client.get(fired.run_page)
        assert page.status_code == 200
        assert f"Run {fired.run.run_id}" in page.text and '<b class="state state-succeeded" id="run-state">succeeded</b>' in page.text
        agents = re.findall(r'<tr data-agent="([^"]+)"><td class="depth-(\d)">[^<]*</td><td>([^<]*)</td>.*?'
                            r'<td class="state state-\w+">([^<]*)</td>', page.text, re.S)
        assert [(depth, role, state) for _, depth, role, state in agents] == [
            ("0", "orchestrator", "succeeded"), ("1", "implementer", "succeeded")]  # delegation order, indented
        implementer = agents[1][0]
        assert "write:TRIAGE.md" in page.text.split(f'<section data-agent="{implementer}">')[1]  # its log tail
        assert '<b id="worktree-state">merged</b>' in page.text
        assert f'<p id="merge-result">Merge result: <q>{escape(MERGED)}</q></p>' in page.text


def test_the_browser_shows_the_fired_schedule_and_follows_it_to_the_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fired = _fire(tmp_path, monkeypatch)
    driver = start_chromium(tmp_path / "profile")
    try:
        with serving(create_app(None, SECRET, data_dir=fired.data, now=fired.clock)) as base:
            driver.get(f"{base}/schedules?token={SECRET}")
            row = driver.find_element(By.XPATH, "//table[@id='schedules']//tr[td[1]='triage']")
            assert row.find_element(By.CLASS_NAME, "state").text == "succeeded"
            assert "2026-01-05 09:00 UTC" in row.text and "2026-01-06 09:00 UTC" in row.text
            assert save_screenshot(driver, "ui-schedule-fired").is_file()
            row.find_element(By.LINK_TEXT, "run page").click()
            wait_for(lambda: driver.current_url == f"{base}{fired.run_page}", "the run page to load")
            wait_for(lambda: driver.find_element(By.ID, "run-state").text == "succeeded", "the run's state")

            def roles() -> list[str]:  # run.js redraws the tree once it loads: a row may go stale under us
                return [r.find_elements(By.TAG_NAME, "td")[1].text
                        for r in driver.find_elements(By.CSS_SELECTOR, "#agents tbody tr")]

            wait_for(lambda: roles() == ["orchestrator", "implementer"], "the agent tree")
            wait_for(lambda: driver.find_element(By.ID, "worktree-state").text == "merged", "the worktree state")
            wait_for(lambda: driver.find_element(By.CSS_SELECTOR, "#merge-result q").text == MERGED, "the merge result")
            driver.execute_script("document.getElementById('worktree').scrollIntoView()")
            assert save_screenshot(driver, "ui-schedule-fired-run").is_file()
            no_script_errors(driver)

            # A second schedule of the project, added from the page's form onto the Ray runner.
            driver.get(f"{base}/schedules")
            for field, value in (("add-name", "overnight"), ("add-cron", "0 2 * * *"), ("add-timezone", "UTC"),
                                 ("add-role", "orchestrator"), ("add-task", TASK)):
                driver.find_element(By.ID, field).send_keys(value)
            Select(driver.find_element(By.ID, "add-project")).select_by_value(project_key(fired.root))
            Select(driver.find_element(By.ID, "add-runner")).select_by_value("ray")
            driver.find_element(By.CSS_SELECTOR, "#add-schedule button[type=submit]").click()
            added = "//table[@id='schedules']//tr[td[1]='overnight']"
            wait_for(lambda: driver.find_elements(By.XPATH, added), "the added schedule's row")
            assert driver.find_element(By.XPATH, f"{added}/td[@class='runner']").text == "ray"
            assert driver.find_element(By.XPATH, "//tr[td[1]='triage']/td[@class='runner']").text == "project default"
            stored = ScheduleStore(fired.data).get("overnight")
            assert stored is not None and (stored.runner, stored.project, stored.task) == ("ray", fired.root.resolve(), TASK)
            assert save_screenshot(driver, "ui-schedule-added").is_file()
            no_script_errors(driver)
    finally:
        driver.quit()
