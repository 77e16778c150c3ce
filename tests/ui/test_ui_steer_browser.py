"""A real browser answers an agent's question on the run page; a second question appears there without a reload."""

from __future__ import annotations

import contextlib
import json
import sys
import time
from pathlib import Path

import pytest

from dashboard.app import create_app, home_path
from orchestrator import questions
from orchestrator.memory_providers import open_memory
from strawpot.commands.ui import project_settings
from strawpot.model.layout import Project
from tests.ui._live import no_script_errors, serving, wait_for

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "registry_server" / "web"))
from _browser import save_screenshot, start_chromium  # noqa: E402

SECRET = "steer-browser-secret"


def test_a_question_is_answered_in_the_browser(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STRAWPOT_HOME", str(tmp_path / "home"))
    project = tmp_path / "project"
    run_dir = project / ".strawpot" / "sessions" / "run1"
    run_dir.mkdir(parents=True)
    (project / "strawpot.toml").write_text("")
    (run_dir / "session.json").write_text(json.dumps({
        "run_id": "run1", "role": "lead", "state": "running", "started_at": time.time(), "agents": [
            {"agent_id": "lead-1", "role": "lead", "agent": "stub-agent", "parent": None, "state": "running",
             "started_at": time.time()}]}))
    questions.post(run_dir, "lead-1", "Which database should the service use?", ["sqlite", "postgres"], "sqlite",
                   "the task does not say")

    driver = start_chromium(tmp_path / "profile")
    with contextlib.ExitStack() as stack:
        stack.callback(driver.quit)
        base = stack.enter_context(serving(create_app(project, SECRET, settings=project_settings)))
        driver.get(f"{base}{home_path(project)}runs/run1?token={SECRET}")
        assert "Which database should the service use?" in driver.find_element("id", "ask-1").text
        driver.execute_script("window.notReloaded = true")

        # Another agent asks while the page is open: it appears live, and typing in it survives updates.
        questions.post(run_dir, "impl-2", "Name the <branch>?", [], "", "")
        wait_for(lambda: driver.find_elements("id", "ask-2"))
        assert "Name the <branch>?" in driver.find_element("id", "ask-2").text
        assert driver.execute_script("return window.notReloaded") is True
        driver.find_element("css selector", "#ask-2 input[name=text]").send_keys("feature/x")
        questions.post(run_dir, "impl-3", "Third?", [], "", "")
        wait_for(lambda: driver.find_elements("id", "ask-3"))
        typed = driver.find_element("css selector", "#ask-2 input[name=text]").get_attribute("value")
        assert typed == "feature/x"

        # A real form POST: the browser's own Origin header must pass the guard (it is `null` under no-referrer).
        driver.find_element("css selector", "#ask-1 button[value=postgres]").click()
        wait_for(lambda: (q := questions.read(run_dir, "1")) is not None and not q.is_open)
        answered = questions.read(run_dir, "1")
        assert answered is not None and answered.answer == "postgres" and answered.answered_by == "ui"
        wait_for(lambda: "Answered: postgres" in driver.find_element("id", "ask-1").text)
        no_script_errors(driver)
        assert save_screenshot(driver, "ui-question-answered").is_file()

        memory = open_memory("builtin", Project.at(project))
        memory.remember("deploys go through the staging cluster", ["deploy"], "project")
        forget = memory.remember("the <b>old</b> deploy script is gone", ["deploy"], "project")
        memory.remember("tests run with pytest", ["testing"], "project")
        driver.find_element("link text", "Memory").click()
        driver.find_element("name", "q").send_keys("deploy\n")
        wait_for(lambda: "2 entries match" in driver.find_element("id", "memory-summary").text)
        driver.find_element("css selector", f"#entry-{forget} button").click()
        wait_for(lambda: "1 entry matches" in driver.find_element("id", "memory-summary").text)
        assert driver.current_url.startswith(f"{base}{home_path(project)}memory?")
        assert "q=deploy" in driver.current_url and [e.content for e in memory.recall("old", [], "", 5)] == []
        assert save_screenshot(driver, "ui-memory-search").is_file()
