"""Real Chromium on the chat page of `strawpot ui`: send tasks, watch them run and answer, without a reload."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from dashboard.app import create_app, home_path
from tests.orchestrator.conftest import ProjectFixture, standard_roles, standard_skills
from tests.ui._live import no_script_errors, serving, wait_for

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "registry_server" / "web"))
from _browser import save_screenshot, start_chromium  # noqa: E402

pytestmark = pytest.mark.e2e
SECRET = "chat-browser-secret"


def _task(driver: WebDriver, n: int) -> str:
    """The text of the n-th task of the conversation (0 first), "" while there is none."""
    items = driver.find_elements(By.CSS_SELECTOR, "#tasks > li")
    return str(items[n].text) if len(items) > n else ""


def _state(driver: WebDriver, n: int) -> str:
    """The state of the n-th task (its text holds the task, whose path could hold any word)."""
    states = driver.find_elements(By.CSS_SELECTOR, "#tasks > li span.state")
    return str(states[n].text) if len(states) > n else ""


def test_send_tasks_and_see_them_run_and_answer_without_reloading(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    ProjectFixture(root, standard_roles(), standard_skills(), policy={"agent_timeout": 60}).build()
    data = tmp_path / "data"
    monkeypatch.setenv("STRAWPOT_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("STRAWPOT_DATA_DIR", str(data))
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    driver = start_chromium(tmp_path / "profile")
    go = tmp_path / "go"  # the first task's agent waits for it: running until the page has shown it so
    try:
        with serving(create_app(root, SECRET, data_dir=data)) as base:
            driver.get(f"{base}{home_path(root)}chat?token={SECRET}")
            driver.find_element(By.ID, "chat-first-task").send_keys(f"wait-for:{go} then echo:<i>first</i> answer")
            driver.find_element(By.CSS_SELECTOR, "form[action$='/chat'] button").click()
            wait_for(lambda: "/chat/" in driver.current_url, "the conversation's page")
            driver.execute_script("window.notReloaded = true")
            wait_for(lambda: _state(driver, 0) == "running", "the first task running")
            go.touch()
            wait_for(lambda: _state(driver, 0) == "succeeded", "the first task's end")
            assert "<i>first</i> answer" in driver.find_element(By.CSS_SELECTOR, "#tasks > li pre.summary").text
            assert not driver.find_elements(By.CSS_SELECTOR, "#tasks i"), "an answer is text, never markup"

            driver.find_element(By.ID, "chat-task").send_keys("echo:second then context")
            driver.find_element(By.CSS_SELECTOR, "#chat-form button").click()
            wait_for(lambda: _state(driver, 1) == "succeeded", "the second task's end", 60)
            assert "answer: <i>first</i> answer" in _task(driver, 1), "the second task saw the first's answer"
            assert driver.find_element(By.ID, "chat-task").get_attribute("value") == ""
            assert driver.execute_script("return window.notReloaded") is True
            assert driver.find_element(By.ID, "chat-error").text == ""
            no_script_errors(driver)
            assert save_screenshot(driver, "ui-chat").is_file()
            link = driver.find_elements(By.CSS_SELECTOR, "#tasks > li a.run")[1]
            run_id = link.text
            link.click()
            assert run_id in driver.find_element(By.TAG_NAME, "h1").text
            driver.get("about:blank")  # close the page's live feed before the server stops
    finally:
        go.touch()  # a failed check leaves no agent waiting for it
        driver.quit()
