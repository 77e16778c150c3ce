"""`Launch.start`/`Launch.resume` open a run and `run_to_end` runs it, returning how it ended as a value."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from orchestrator.ask import Asker
from orchestrator.launch import Ended, Launch, Project, prepare
from orchestrator.run_record import read_run
from orchestrator.session import STOPPED_EXIT_CODE, State
from strawpot.config_files import load_settings
from tests.orchestrator._agents import resumable_agent

pytestmark = pytest.mark.e2e


def _prepared(root):  # type: ignore[no-untyped-def]
    return prepare(Project(root), load_settings(Project(root)))


def test_run_to_end_returns_the_end_of_the_run(project) -> None:  # type: ignore[no-untyped-def]
    project.build()
    ended = Launch.start(_prepared(project.root), task="echo:done", asker=Asker(None)).run_to_end("echo:done",
                                                                                                  attach=False)
    assert isinstance(ended, Ended)
    assert (ended.state, ended.exit_code, ended.output, ended.paused, ended.stopped) == (
        State.SUCCEEDED, 0, "done", False, ())
    saved = read_run(project.root / ".strawpot" / "sessions", ended.run_id)
    assert (saved.state, saved.summary) == ("succeeded", "done")  # the main agent's final answer


def test_a_failing_orchestrator_gives_its_exit_code(project) -> None:  # type: ignore[no-untyped-def]
    project.build()
    ended = Launch.start(_prepared(project.root), task="fail:3", asker=Asker(None)).run_to_end("fail:3", attach=False)
    assert (ended.state, ended.exit_code) == (State.FAILED, 3)


def test_sigterm_ends_the_run_interrupted_and_restores_the_handler(project) -> None:  # type: ignore[no-untyped-def]
    project.build()
    launch = Launch.start(_prepared(project.root), task="sleep:30", asker=Asker(None))
    before = signal.getsignal(signal.SIGTERM)
    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGTERM))
    timer.start()
    try:
        ended = launch.run_to_end("sleep:30", attach=False)
    finally:
        timer.cancel()
    assert (ended.state, ended.exit_code, len(ended.stopped)) == (State.INTERRUPTED, STOPPED_EXIT_CODE, 1)
    assert signal.getsignal(signal.SIGTERM) is before
    saved = read_run(project.root / ".strawpot" / "sessions", ended.run_id)
    assert (saved.state, saved.exit_code) == ("interrupted", STOPPED_EXIT_CODE)


def test_resume_reopens_the_run_and_continues_the_same_agent(project, tmp_path) -> None:  # type: ignore[no-untyped-def]
    project.build(resumable_agent(tmp_path))
    first = Launch.start(_prepared(project.root), task="pause", asker=Asker(None)).run_to_end("pause", attach=False)
    assert first.state == State.PAUSED and first.paused
    [paused] = read_run(project.root / ".strawpot" / "sessions", first.run_id).agents
    agent_id = paused.agent_id
    again = Launch.resume(_prepared(project.root), first.run_id, asker=Asker(None))
    ended = again.run_to_end("echo:carried on", attach=False, agent=agent_id)
    assert (ended.run_id, ended.state, ended.output) == (first.run_id, State.SUCCEEDED, "carried on")
    [agent] = read_run(project.root / ".strawpot" / "sessions", first.run_id).agents
    assert agent.agent_id == agent_id and agent.state == "succeeded" and agent.task == "echo:carried on"
