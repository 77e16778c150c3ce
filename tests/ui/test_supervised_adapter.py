"""The whole path a chat user takes: the fixture adapter installed (global scope) into its own venv, enabled in
settings, started by a real `strawpot ui` with its capability URL, holds a two-task conversation through the stub
agent; what the user sees is its outbox."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests._cli import STRAWPOT, strawpot, strawpot_here
from tests.orchestrator.conftest import ProjectFixture
from tests.ui._live import wait_for
from tests.ui.test_integration_api import replies, send
from tests.ui.test_ui_steer import project  # noqa: F401

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "integrations" / "fixture-chat"
NAME = "fixture-chat"
pytestmark = pytest.mark.e2e


def test_an_installed_enabled_adapter_holds_a_conversation_under_strawpot_ui(project: ProjectFixture,  # noqa: F811
                                                                              tmp_path: Path) -> None:
    project.build()
    env = dict(os.environ)
    global_tree = Path(env["STRAWPOT_HOME"]) / "global"
    global_tree.mkdir(parents=True, exist_ok=True)
    (global_tree / "strawpot.toml").write_text(
        f'[integrations]\n{NAME} = {{ path = "{FIXTURE}" }}\n\n[scripts]\ntrusted = ["integration:{NAME}"]\n')
    done = strawpot("install", "--global", "--trust-project", cwd=tmp_path, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    for key, value in (("ui.integrations", NAME), (f"integrations.{NAME}.env.STRAWPOT_BOT_TOKEN", "123:tok"),
                       (f"integrations.{NAME}.env.POLL_INTERVAL", "0.3")):
        done = strawpot_here("config", "set", "--global", key, value, cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stderr

    data = Path(env["STRAWPOT_DATA_DIR"])
    chat = data / "integrations" / NAME / "data"
    with open(tmp_path / "ui.log", "w", encoding="utf-8") as log:
        ui = subprocess.Popen([*STRAWPOT, "ui", "--no-browser"], cwd=project.root, env=env,
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
    try:
        wait_for(lambda: (data / "ui.json").exists() and chat.is_dir(), "the UI to start the adapter", timeout=60)
        send(chat, 1, "c1", "echo:the answer is 42")
        send(chat, 2, "c1", "echo:second then context")
        first, second = replies(chat, 2)
        listed = strawpot_here("integrations", "list", "--json", cwd=project.root, env=env)
        assert listed.returncode == 0, listed.stderr
        [row] = [r for r in json.loads(listed.stdout)["integrations"] if r["name"] == NAME]
        assert row["state"] == "running" and row["restarts"] == 0, row
    finally:
        ui.terminate()
        ui.wait(timeout=60)
    assert (first["status"], first["text"]) == ("completed", "the answer is 42"), first
    assert second["status"] == "completed" and "answer: the answer is 42" in second["text"], second
