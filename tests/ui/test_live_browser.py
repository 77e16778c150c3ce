"""Real Chromium keeps the project page and the home page open: a run started from the form appears, ticks,
asks a question at the top of the page, is answered there and ends with its summary, all without a reload."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import Select

from dashboard.app import create_app, home_path
from strawpot.commands.ui import project_settings
from strawpot.model.fs import atomic_write
from tests.orchestrator.conftest import ProjectFixture, standard_roles, standard_skills
from tests.ui._live import no_script_errors, serving, wait_for

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "registry_server" / "web"))
from _browser import save_screenshot, start_chromium  # noqa: E402

SECRET = "live-browser-secret"
# What a browser does when its tab goes to the background (arguments[0] true) or comes back.
_VISIBILITY = ("Object.defineProperty(document, 'hidden', {value: arguments[0], configurable: true});"
               "document.dispatchEvent(new Event('visibilitychange'));")


def _row(driver: WebDriver) -> str:
    return str(driver.find_element(By.CSS_SELECTOR, "#runs-body tr").text)


def _state(driver: WebDriver) -> str:
    return str(driver.find_element(By.CSS_SELECTOR, "#runs-body tr .state").get_attribute("class"))


@pytest.mark.e2e
def test_the_project_page_follows_a_run_from_the_form_to_its_summary_without_reloading(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    project = ProjectFixture(root, standard_roles(), standard_skills(), policy={"agent_timeout": 120}).build()
    data = tmp_path / "data"
    # What the `strawpot start` the form spawns inherits: its own folders, this Python for the stub agent.
    monkeypatch.setenv("STRAWPOT_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("STRAWPOT_DATA_DIR", str(data))
    monkeypatch.setenv("STRAWPOT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")

    driver = start_chromium(tmp_path / "profile")
    run_id = ""
    try:
        with serving(create_app(root, SECRET, data_dir=data, settings=project_settings)) as base:
            driver.get(f"{base}{home_path(root)}?token={SECRET}")
            driver.execute_script("window.notReloaded = true")
            assert driver.find_element(By.ID, "no-runs").is_displayed()
            assert not driver.find_element(By.ID, "waiting").is_displayed()

            role = Select(driver.find_element(By.ID, "start-role"))
            assert role.first_selected_option.text == "default: orchestrator"
            role.select_by_value("implementer")
            assert driver.find_element(By.ID, "runtime-default").text == "default: stub-agent"
            assert [o.text for o in Select(driver.find_element(By.ID, "start-runtime")).options] == [
                "default: stub-agent", "stub-agent"]
            driver.find_element(By.NAME, "task").send_keys(
                "sleep:3 then ask:Which <colour>?|blue then echo:<b>painted</b>")
            driver.find_element(By.CSS_SELECTOR, "form[action$='/start'] button").click()

            # The page came back from the POST: from here on it must never reload again.
            wait_for(lambda: driver.find_element(By.ID, "runs").is_displayed(), "the new run", 60)
            driver.execute_script("window.notReloaded = true")
            [run_id] = [p.name for p in project.sessions_dir.iterdir()]
            wait_for(lambda: "state-running" in _state(driver), "the run running")
            wait_for(lambda: "stub-agent" in _row(driver), "its main agent's runtime")  # recorded once it spawns
            assert run_id in _row(driver) and "implementer" in _row(driver)
            ticking = driver.find_element(By.CSS_SELECTOR, "#runs-body tr .elapsed")
            first = ticking.text
            wait_for(lambda: driver.find_element(By.CSS_SELECTOR, "#runs-body tr .elapsed").text != first,
                     "the duration to tick")

            # Its agent asks: the question appears at the top of the page, above the start form.
            wait_for(lambda: driver.find_element(By.ID, "waiting").is_displayed(), "the question", 60)
            waiting = driver.find_element(By.ID, "waiting")
            assert "Which <colour>?" in waiting.text and run_id in waiting.text
            assert waiting.location["y"] < driver.find_element(By.CSS_SELECTOR, "form.start").location["y"]
            assert "1 question waiting for you" in _row(driver)
            assert save_screenshot(driver, "ui-project-live-question").is_file()
            answer = waiting.find_element(By.CSS_SELECTOR, "input[name=text]")
            answer.clear()
            answer.send_keys("green")
            waiting.find_element(By.CSS_SELECTOR, "button:not([name])").click()

            wait_for(lambda: not driver.find_element(By.ID, "waiting").is_displayed(), "the answered question")
            wait_for(lambda: "state-succeeded" in _state(driver), "the run's end", 60)
            summary = driver.find_element(By.CSS_SELECTOR, "#runs-body tr td.summary").text
            assert summary == "green <b>painted</b>"  # the agent's final answer, as text
            assert driver.find_element(By.CSS_SELECTOR, "#runs-body tr td:nth-child(7)").text == "0"
            assert driver.execute_script("return window.notReloaded") is True
            assert driver.find_element(By.ID, "action-error").text == ""
            no_script_errors(driver)
            assert save_screenshot(driver, "ui-project-live-ended").is_file()
    finally:
        driver.quit()
        if run_id:  # whatever the test saw, leave no run behind
            with contextlib.suppress(Exception):
                left = json.loads((project.sessions_dir / run_id / "session.json").read_text())
                if left["state"] == "running":  # its `start` leads its own process group (start_new_session)
                    os.killpg(left["owner_pid"], signal.SIGKILL)


def test_the_home_feed_shows_an_agent_at_work_and_drops_it_when_its_run_ends(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    folder = root / ".strawpot" / "sessions" / "run_20260101_100000_aaaaaa"
    workspace = root / "ws"
    folder.mkdir(parents=True)
    workspace.mkdir()
    (root / "strawpot.toml").write_text("")
    driver = start_chromium(tmp_path / "profile")
    try:
        with serving(create_app(root, SECRET, data_dir=tmp_path / "data")) as base:
            driver.get(f"{base}/?token={SECRET}")
            driver.execute_script("window.notReloaded = true")
            assert driver.find_element(By.ID, "idle").is_displayed()

            (workspace / "agent.log").write_text("planning\nwriting <tests>\n")
            session = {"run_id": folder.name, "role": "lead", "task": "fix the flaky test", "state": "running",
                       "started_at": time.time() - 5, "agents": [
                           {"agent_id": "lead-1", "role": "lead", "agent": "stub-agent", "parent": None,
                            "state": "running", "started_at": time.time() - 5, "workspace": str(workspace)}]}
            atomic_write(folder / "session.json", json.dumps(session), durable=False)
            wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, '#activity li[data-agent="lead-1"]'), "the agent")
            item = driver.find_element(By.CSS_SELECTOR, '#activity li[data-agent="lead-1"]')
            assert "proj" in item.text and "lead" in item.text and "stub-agent" in item.text
            assert "writing <tests>" in item.find_element(By.CSS_SELECTOR, "pre.lines").text
            assert not driver.find_element(By.ID, "idle").is_displayed()
            since = driver.find_element(By.CSS_SELECTOR, "#activity .elapsed").text
            wait_for(lambda: driver.find_element(By.CSS_SELECTOR, "#activity .elapsed").text != since, "a tick")
            (workspace / "agent.log").write_text("planning\nwriting <tests>\nall tests pass\n")
            wait_for(lambda: "all tests pass" in driver.find_element(By.CSS_SELECTOR, "#activity pre.lines").text,
                     "the new output line")
            assert save_screenshot(driver, "ui-home-activity").is_file()

            # A page in a background tab gives its stream up (a browser has few connections per host) and
            # catches up when it is shown again.
            driver.execute_script(_VISIBILITY, True)
            (workspace / "agent.log").write_text("planning\nwriting <tests>\nall tests pass\npushed\n")
            time.sleep(2.5)  # more than two polls of the server: a stream still open would have shown it
            assert "pushed" not in driver.find_element(By.CSS_SELECTOR, "#activity pre.lines").text
            driver.execute_script(_VISIBILITY, False)
            wait_for(lambda: "pushed" in driver.find_element(By.CSS_SELECTOR, "#activity pre.lines").text,
                     "the page to catch up")

            atomic_write(folder / "session.json", json.dumps({**session, "state": "succeeded", "exit_code": 0,
                                                              "ended_at": time.time(), "summary": "Fixed."}),
                         durable=False)
            wait_for(lambda: driver.find_element(By.ID, "idle").is_displayed(), "the feed to empty")
            assert "Fixed." in driver.find_element(By.ID, "recent").text
            assert driver.execute_script("return window.notReloaded") is True
            no_script_errors(driver)
    finally:
        driver.quit()
