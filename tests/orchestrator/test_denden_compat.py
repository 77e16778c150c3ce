"""denden-server 0.1.21's own Python client stubs talk to our server: Status, delegate, ask_user, memory, errors."""

from __future__ import annotations

import importlib
import time
import uuid
from collections.abc import Iterator

import grpc
import pytest

from orchestrator.ask import Asker
from orchestrator.launch import Launch, Project, prepare
from strawpot.config_files import load_settings

pytestmark = pytest.mark.compat
# denden-server 0.1.21 is a test dependency: a missing one is a failure, never a skip
theirs = importlib.import_module("denden.gen.denden_pb2")
theirs_grpc = importlib.import_module("denden.gen.denden_pb2_grpc")


@pytest.fixture
def live(project) -> Iterator[tuple[Launch, object, object]]:  # type: ignore[no-untyped-def]
    """A run whose root agent idles (sleep) so a test can speak Denden as that agent."""
    project.build()
    launch = Launch.start(prepare(Project(project.root), load_settings(Project(project.root))), task="", asker=Asker(None))
    root = launch.start_root("sleep:300")
    channel = grpc.insecure_channel(launch.server.address)
    try:
        yield launch, root, theirs_grpc.DendenStub(channel)
    finally:
        channel.close()
        launch.close("finished", 0)


def _request(launch: Launch, agent_id: str, **payload: object) -> object:
    trace = theirs.Trace(run_id=launch.session.run_id, agent_instance_id=agent_id)
    return theirs.DenDenRequest(denden_version="1.0", request_id=uuid.uuid4().hex, trace=trace, **payload)


def test_status_reports_uptime_and_live_agents(live) -> None:  # type: ignore[no-untyped-def]
    launch, root, stub = live
    status = stub.Status(theirs.StatusRequest(), timeout=60)
    assert status.uptime_seconds >= 0
    assert status.active_agents == 1  # the idling root


def test_delegate_runs_a_real_agent(live) -> None:  # type: ignore[no-untyped-def]
    launch, root, stub = live
    req = _request(launch, root.record.agent_id,
                   delegate=theirs.DelegatePayload(delegate_to="implementer", task=theirs.Task(text="echo:patched")))
    reply = stub.Send(req, timeout=30)
    assert reply.status == theirs.OK, reply.error
    assert reply.request_id == req.request_id
    assert reply.delegate_result.text == "patched"
    children = [a for a in launch.session.agents.values() if a.parent == root.record.agent_id]
    assert [(a.role, a.state, a.depth) for a in children] == [("implementer", "succeeded", 1)]


def test_delegate_json_result_is_a_struct(live) -> None:  # type: ignore[no-untyped-def]
    launch, root, stub = live
    task = theirs.Task(text='echo:{"verdict": "ok", "issues": 0}', return_format=theirs.JSON)
    reply = stub.Send(_request(launch, root.record.agent_id,
                               delegate=theirs.DelegatePayload(delegate_to="reviewer", task=task)), timeout=30)
    assert reply.status == theirs.OK, reply.error
    assert reply.delegate_result.WhichOneof("content") == "json"
    assert dict(reply.delegate_result.json) == {"verdict": "ok", "issues": 0.0}


def test_delegate_json_result_is_validated(live) -> None:  # type: ignore[no-untyped-def]
    launch, root, stub = live
    task = theirs.Task(text="echo:not json", return_format=theirs.JSON)
    reply = stub.Send(_request(launch, root.record.agent_id,
                               delegate=theirs.DelegatePayload(delegate_to="reviewer", task=task)), timeout=30)
    assert reply.status == theirs.ERROR
    assert reply.error.code == "ERR_INVALID_RESULT"


def test_ask_user_headless_answers_with_default(live) -> None:  # type: ignore[no-untyped-def]
    launch, root, stub = live
    ask = theirs.AskUserPayload(question="Proceed?", choices=["yes", "no"], default_value="no")
    reply = stub.Send(_request(launch, root.record.agent_id, ask_user=ask), timeout=60)
    assert reply.status == theirs.OK
    assert reply.ask_user_result.text == "no"
    first_choice = stub.Send(_request(launch, root.record.agent_id,
                                      ask_user=theirs.AskUserPayload(question="Which?", choices=["a", "b"])), timeout=60)
    assert first_choice.ask_user_result.text == "a"
    nothing = stub.Send(_request(launch, root.record.agent_id, ask_user=theirs.AskUserPayload(question="Name?")), timeout=60)
    assert nothing.status == theirs.ERROR and nothing.error.code == "ERR_NO_USER"


def test_remember_then_recall(live) -> None:  # type: ignore[no-untyped-def]
    launch, root, stub = live
    agent = root.record.agent_id
    stored = stub.Send(_request(launch, agent, remember=theirs.RememberPayload(
        content="the build uses uv", keywords=["build", "tooling"], scope="project")), timeout=60)
    assert stored.status == theirs.OK and stored.remember_result.entry_id
    stub.Send(_request(launch, agent, remember=theirs.RememberPayload(content="tabs not spaces", scope="project")), timeout=60)
    found = stub.Send(_request(launch, agent, recall=theirs.RecallPayload(query="how is the build done", scope="project")),
                      timeout=60)
    assert [e.content for e in found.recall_result.entries] == ["the build uses uv"]
    assert found.recall_result.entries[0].entry_id == stored.remember_result.entry_id
    assert list(found.recall_result.entries[0].keywords) == ["build", "tooling"]


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda r: r.ClearField("request_id"), "request_id is required"),
        (lambda r: r.ClearField("trace"), "trace with run_id and agent_instance_id is required"),
        (lambda r: r.trace.ClearField("agent_instance_id"), "trace with run_id and agent_instance_id is required"),
        (lambda r: setattr(r.trace, "run_id", "run_other"), "is not the run this server serves"),
        (lambda r: r.ClearField("remember"), "exactly one payload is required"),
        (lambda r: r.remember.ClearField("content"), "remember.content is required"),
    ],
)
def test_malformed_requests_get_a_clear_error(live, mutate, message: str) -> None:  # type: ignore[no-untyped-def]
    launch, root, stub = live
    req = _request(launch, root.record.agent_id, remember=theirs.RememberPayload(content="x"))
    mutate(req)
    reply = stub.Send(req, timeout=60)
    assert reply.status == theirs.ERROR
    assert reply.error.code == "INVALID_REQUEST"
    assert message in reply.error.message
    assert reply.request_id == req.request_id


def test_delegate_from_unknown_agent_is_refused(live) -> None:  # type: ignore[no-untyped-def]
    launch, root, stub = live
    reply = stub.Send(_request(launch, "intruder-1", delegate=theirs.DelegatePayload(
        delegate_to="reviewer", task=theirs.Task(text="echo:x"))), timeout=60)
    assert reply.status == theirs.ERROR and reply.error.code == "ERR_UNKNOWN_AGENT"
    time.sleep(0)  # nothing was spawned:
    assert len(launch.session.agents) == 1
