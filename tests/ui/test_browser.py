"""Real Chromium over `strawpot ui`: start a session from the form, watch a sub-agent appear live, cancel it."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from dashboard.app import create_app, home_path
from orchestrator import questions
from orchestrator.projects import ProjectStore
from orchestrator.schedules import Schedule, ScheduleRun, ScheduleStore
from strawpot.model.fs import atomic_write
from tests.orchestrator.conftest import ProjectFixture, kill_left_in, standard_roles, standard_skills
from tests.ui._live import no_script_errors, serving, wait_for

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "registry_server" / "web"))
from _browser import save_screenshot, start_chromium  # noqa: E402

SECRET = "browser-test-secret"


def _cell(driver: WebDriver, agent_id: str, column: int) -> str:
    return str(driver.find_element(By.CSS_SELECTOR, f'#agents tr[data-agent="{agent_id}"]')
               .find_elements(By.TAG_NAME, "td")[column].text)


def test_the_run_page_follows_the_run_folder_live(tmp_path: Path) -> None:
    project = tmp_path / "project"
    folder = project / ".strawpot" / "sessions" / "run1"
    folder.mkdir(parents=True)
    (project / "strawpot.toml").write_text("")
    session = {"run_id": "run1", "role": "lead", "state": "running", "started_at": time.time(), "agents": [
        {"agent_id": "lead-1", "role": "lead", "agent": "stub", "parent": None, "state": "running",
         "started_at": time.time()}]}
    atomic_write(folder / "session.json", json.dumps(session), durable=False)
    driver = start_chromium(tmp_path / "profile")
    try:
        with serving(create_app(project, SECRET, data_dir=tmp_path / "data")) as base:
            page = f"{base}{home_path(project)}runs/run1"
            driver.get(page)
            assert "forbidden" in driver.page_source
            driver.get(f"{page}?token={SECRET}")
            assert "lead-1" in driver.page_source and "token" not in driver.current_url
            driver.execute_script("window.notReloaded = true")

            # A delegation appears and the run ends, written to the run folder as the orchestrator would.
            session["agents"].append({"agent_id": "impl-2", "role": "implementer", "agent": "stub",
                                      "parent": "lead-1", "state": "cancelled", "started_at": time.time()})
            session["agents"][0]["state"] = "cancelled"
            session["state"] = "cancelled"
            atomic_write(folder / "session.json", json.dumps(session), durable=False)
            wait_for(lambda: "impl-2" in driver.find_element(By.ID, "agents").text, "the new agent")
            assert driver.find_element(By.ID, "run-state").text == "cancelled"
            assert driver.execute_script("return window.notReloaded") is True
            no_script_errors(driver)
            assert save_screenshot(driver, "ui-run-live").is_file()
    finally:
        driver.quit()


@pytest.mark.e2e
def test_start_from_the_form_watch_a_sub_agent_and_cancel_it_without_reloading(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    project = ProjectFixture(root, standard_roles(), standard_skills(),
                             policy={"max_depth": 3, "agent_timeout": 300, "kill_grace": 0.5}).build()
    data = tmp_path / "data"
    # What the `strawpot start` the form spawns inherits: its own config folder, this Python for the stub agent.
    monkeypatch.setenv("STRAWPOT_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("STRAWPOT_DATA_DIR", str(data))
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("STRAWPOT_SESSION_ASK", "run")  # its question waits in the run folder for the test's answer
    store = ScheduleStore(data)
    store.add(Schedule("triage", "0 9 * * 1-5", root, "orchestrator", "triage new issues", timezone="Europe/Paris"))
    store.add(Schedule("coverage", "30 2 * * *", root, "implementer", "raise test coverage"))

    driver = start_chromium(tmp_path / "profile")
    run_id = ""
    try:
        with serving(create_app(root, SECRET, data_dir=data)) as base:
            driver.get(f"{base}{home_path(root)}?token={SECRET}")
            assert "stub-agent" in driver.find_element(By.ID, "packages").text  # the lock, verified
            # The orchestrator asks before it delegates, so the page is open before the sub-agent appears.
            driver.find_element(By.NAME, "task").send_keys(
                "ask:Go on?|yes then delegate:implementer:echo:working then sleep:300")
            driver.find_element(By.CSS_SELECTOR, "form[action$='/start'] button").click()
            wait_for(lambda: any(project.sessions_dir.glob("*/session.json")), "the run folder")
            [run_id] = [p.name for p in project.sessions_dir.iterdir()]
            driver.get(f"{base}{home_path(root)}")
            # the home page's live feed may redraw the list between finding the link and clicking it
            wait_for(lambda: driver.find_element(By.LINK_TEXT, run_id).click() or True, f"the link to {run_id}")
            driver.execute_script("window.notReloaded = true")
            assert "implementer" not in driver.find_element(By.ID, "agents").text
            run_dir = project.sessions_dir / run_id
            wait_for(lambda: questions.read(run_dir, "1"), "the orchestrator's question")
            questions.answer(run_dir, "1", "yes", "ui")

            wait_for(lambda: "implementer" in driver.find_element(By.ID, "agents").text, "the sub-agent", 60)
            sub = json.loads((project.sessions_dir / run_id / "session.json").read_text())
            [impl] = [a["agent_id"] for a in sub["agents"] if a["role"] == "implementer"]
            wait_for(lambda: _cell(driver, impl, 3) == "running", "the sub-agent running")
            log = f'#logs section[data-agent="{impl}"] pre'
            wait_for(lambda: "working" in driver.find_element(By.CSS_SELECTOR, log).text, "its log tail")
            assert save_screenshot(driver, "ui-run-mid-run").is_file()

            # the live tree may redraw the row between finding its button and clicking it: find it again then
            wait_for(lambda: driver.find_element(By.CSS_SELECTOR, f'#agents tr[data-agent="{impl}"] button').click()
                     or True, "the sub-agent's cancel button")
            wait_for(lambda: _cell(driver, impl, 3) == "cancelled", "the sub-agent cancelled")
            wait_for(lambda: driver.find_element(By.ID, "run-state").text != "running", "the run to end")
            assert driver.execute_script("return window.notReloaded") is True
            assert driver.find_element(By.ID, "action-error").text == ""
            no_script_errors(driver)
            assert not driver.find_elements(By.ID, "cancel-run")  # the run ended: nothing left to cancel
            assert save_screenshot(driver, "ui-run-after-cancel").is_file()
            driver.execute_script("document.getElementById('worktree').scrollIntoView()")
            assert "role:implementer" in driver.find_element(By.ID, "inputs").text
            assert save_screenshot(driver, "ui-run-inputs").is_file()

            store.record(ScheduleRun("triage", run_id, datetime.now(UTC), "started"))
            driver.get(f"{base}/")
            assert home_path(root) in driver.page_source  # `start` from the form recorded the project
            assert save_screenshot(driver, "ui-projects").is_file()
            driver.get(f"{base}{home_path(root)}")
            assert save_screenshot(driver, "ui-project").is_file()
            driver.get(f"{base}/schedules")
            assert "never ran" in driver.page_source
            driver.find_element(By.LINK_TEXT, "run page").click()
            assert run_id in driver.find_element(By.TAG_NAME, "h1").text
            driver.back()
            assert save_screenshot(driver, "ui-schedules").is_file()
            no_script_errors(driver)
    finally:
        driver.quit()
        if run_id:  # whatever the test saw, leave no run behind
            with contextlib.suppress(Exception):
                left = json.loads((project.sessions_dir / run_id / "session.json").read_text())
                if left["state"] == "running":  # its `start` leads its own process group (start_new_session)
                    os.killpg(left["owner_pid"], signal.SIGKILL)
            kill_left_in(tmp_path)  # its agents lead groups of their own
    [used] = ProjectStore(data).load()[0]
    assert used.path == root.resolve()
