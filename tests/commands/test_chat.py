"""`strawpot chat` against a real project and the stub agent: one task, a typed conversation, lists, bad input."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from orchestrator import questions
from orchestrator.conversation_runner import ConversationRunner
from orchestrator.conversations import ConversationStore
from tests._cli import STRAWPOT, strawpot, strawpot_here
from tests.commands._runs import running

pytestmark = pytest.mark.e2e


@pytest.fixture
def chat_env(env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    return {**env, "STRAWPOT_DATA_DIR": str(tmp_path / "data")}


def test_one_task_prints_its_answer_and_exits_with_its_run_s_code(project, chat_env, tmp_path) -> None:  # type: ignore[no-untyped-def]
    project.build()
    done = strawpot("chat", "--task", "echo:the answer is 42", cwd=project.root, env=chat_env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "the answer is 42\n"
    assert "run run_" in done.stderr and "succeeded (exit code 0)" in done.stderr

    failed = strawpot("chat", "--task", "echo:half done then fail:3", "--json", cwd=project.root, env=chat_env)
    assert failed.returncode == 3, failed.stderr
    report = json.loads(failed.stdout)
    assert report["command"] == "chat" and report["task"]["state"] == "failed"
    assert report["task"]["exit_code"] == 3 and report["task"]["run_id"]
    assert report["error"] == {"code": "conflict", "exit_code": 3, "hint": None,
                               "message": f"run {report['task']['run_id']} failed"}
    [second, first] = ConversationStore(tmp_path / "data").recent(project.root)
    assert report["conversation"] == second.id != first.id, "each `chat --task` opens a conversation of its own"

    listed = strawpot_here("chat", "--list", "--json", cwd=project.root, env=chat_env)
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)["conversations"]
    assert [(r["id"], r["tasks"], r["last_task"]["state"]) for r in rows] == [
        (second.id, 1, "failed"), (first.id, 1, "succeeded")]
    assert rows[1]["last_task"]["summary"] == "the answer is 42"
    text = strawpot_here("chat", "--list", cwd=project.root, env=chat_env)
    assert f"{first.id}  " in text.stdout and "last: succeeded  echo:the answer is 42" in text.stdout


def test_a_typed_conversation_answers_each_line_and_the_second_sees_the_first(project, chat_env, tmp_path) -> None:  # type: ignore[no-untyped-def]
    project.build()
    done = strawpot("chat", cwd=project.root, env=chat_env,
                    input="echo:the answer is 42\n\necho:second then context\nexit\necho:never run\n")
    assert done.returncode == 0, done.stderr
    first, _, second = done.stdout.partition("\n")
    assert first == "the answer is 42"
    assert second.startswith("second\n") and "task: echo:the answer is 42" in second
    assert "answer: the answer is 42" in second, "the second task's agent was given the first's answer"
    [conversation] = ConversationStore(tmp_path / "data").recent(project.root)
    tasks = ConversationStore(tmp_path / "data").tasks(conversation.id)
    assert [t.task for t in tasks] == ["echo:the answer is 42", "echo:second then context"]

    again = strawpot("chat", "--conversation", str(conversation.id), cwd=project.root, env=chat_env,
                     input="echo:third then context\n")
    assert again.returncode == 0, again.stderr
    assert "task: echo:second then context" in again.stdout and "task: echo:the answer is 42" in again.stdout


def test_a_missing_conversation_is_exit_2_in_one_line(project, chat_env) -> None:  # type: ignore[no-untyped-def]
    project.build()
    done = strawpot("chat", "--conversation", "999", "--task", "echo:x", cwd=project.root, env=chat_env)
    assert done.returncode == 2
    assert done.stderr.splitlines()[0] == "error: no conversation 999"
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert not project.sessions_dir.exists(), "nothing ran"


def test_an_answer_with_terminal_escapes_is_shown_inert(project, chat_env) -> None:  # type: ignore[no-untyped-def]
    project.build()
    hostile = "echo:\x1b]0;pwned\x07\x1b[2J\x1b[31mred\x08caret"
    done = strawpot("chat", "--task", hostile, cwd=project.root, env=chat_env)
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout and "\x08" not in done.stdout
    assert done.stdout == "red?caret\n"
    listed = strawpot_here("chat", "--list", cwd=project.root, env=chat_env)
    assert "\x1b" not in listed.stdout and "red?caret" in listed.stdout


def test_ctrl_c_stops_the_running_session_and_records_its_end(project, chat_env, tmp_path) -> None:  # type: ignore[no-untyped-def]
    project.build()
    # Its own session and process group, as a terminal's foreground job: Ctrl-C is SIGINT to the whole group.
    chat = subprocess.Popen([*STRAWPOT, "chat", "--task", "sleep:300"], cwd=project.root, env=chat_env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        run_id, _ = running(project, 1)
        os.killpg(chat.pid, signal.SIGINT)
        out, err = chat.communicate(timeout=60)
    finally:
        if chat.poll() is None:
            os.killpg(chat.pid, signal.SIGKILL)
    assert chat.returncode == 130, err
    assert f"run {run_id} interrupted" in err and "Traceback" not in err
    [conversation] = ConversationStore(tmp_path / "data").recent(project.root)
    [task] = ConversationStore(tmp_path / "data").tasks(conversation.id)
    assert (task.phase, task.state, task.run_id) == ("ended", "interrupted", run_id)
    record = json.loads((project.sessions_dir / run_id / "session.json").read_text())
    assert record["state"] == "interrupted"


def test_a_task_waits_behind_one_another_process_runs_and_says_so(project, chat_env, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    project.build()
    for key in ("STRAWPOT_CONFIG_DIR", "STRAWPOT_DATA_DIR"):
        monkeypatch.setenv(key, chat_env[key])
    store = ConversationStore(tmp_path / "data")
    conversation = store.create(project.root, source="ui")
    # the first task waits for the test's answer to its question, so it is running when the chat looks
    first = ConversationRunner(store).submit(conversation.id, "ask:What did you find?")
    assert first.run_id, "this process runs the first task"
    chat = subprocess.Popen([*STRAWPOT, "chat", "--conversation", str(conversation.id), "--task",
                             "echo:second then context"], cwd=project.root, env=chat_env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        stderr = chat.stderr
        assert stderr is not None
        said: list[str] = []

        def read() -> None:
            for line in stderr:
                said.append(line)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        deadline = time.monotonic() + 60
        while not any("queued behind" in line for line in said) and chat.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert any(f"queued behind 1 task of conversation {conversation.id}" in line for line in said), said
        run_dir = project.sessions_dir / first.run_id
        deadline = time.monotonic() + 60
        while questions.read(run_dir, "1") is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert questions.read(run_dir, "1") is not None, "the first task never asked"
        questions.answer(run_dir, "1", "the first answer", "cli")
        chat.wait(timeout=120)
        reader.join(timeout=60)
        assert chat.stdout is not None
        out, err = chat.stdout.read(), "".join(said)
    finally:
        if chat.poll() is None:
            chat.kill()
            chat.wait()
    assert chat.returncode == 0, err
    assert "answer: the first answer" in out, "it ran after the first ended, and saw its answer"
    second = store.tasks(conversation.id)[1]
    assert f"run {second.run_id} started" in err
    other_role = strawpot("chat", "--conversation", str(conversation.id), "--role", "reviewer", "--task", "echo:x",
                          cwd=project.root, env=chat_env)
    assert other_role.returncode == 2 and "runs as the project's [orchestrator] role, not reviewer" in other_role.stderr


def test_a_question_of_the_running_task_is_told_with_how_to_answer_it(project, chat_env) -> None:  # type: ignore[no-untyped-def]
    project.build()
    chat = subprocess.Popen([*STRAWPOT, "chat", "--task", "ask:Which \x1b[31mcolour?|blue then echo:done"],
                            cwd=project.root, env=chat_env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert chat.stderr is not None
        lines = []
        for line in chat.stderr:  # what chat says while it waits
            lines.append(line)
            if " asks (1): " in line:
                break
        run_id, _ = running(project, 1)
        assert lines[-1] == (f"run {run_id} asks (1): Which colour? (default: blue); answer with `strawpot "
                             f"sessions answer {run_id} 1 TEXT` or on its run page in strawpot ui\n"), lines
        answered = strawpot("sessions", "answer", run_id, "1", "red", cwd=project.root, env=chat_env)
        assert answered.returncode == 0, answered.stderr
        out, err = chat.communicate(timeout=60)
    finally:
        if chat.poll() is None:
            chat.kill()
    assert chat.returncode == 0, err
    assert out == "red\ndone\n"
