"""Delegation inside one run, driven over Denden with our own stubs: cancel of a subtree, parallel delegations."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator

import grpc
import pytest

from orchestrator._proto import denden_pb2 as pb
from orchestrator._proto import denden_pb2_grpc as pb_grpc
from orchestrator.ask import Asker
from orchestrator.launch import Launch, Project, prepare
from orchestrator.run import LiveAgent
from strawpot.config_files import load_settings

pytestmark = pytest.mark.e2e


@pytest.fixture
def launch(project) -> Iterator[Launch]:  # type: ignore[no-untyped-def]
    project.build()
    launch = Launch.start(prepare(Project(project.root), load_settings(Project(project.root))), task="", asker=Asker(None))
    try:
        yield launch
    finally:
        launch.close("finished", 0)


def _send(launch: Launch, agent_id: str, **payload: object) -> pb.DenDenResponse:
    with grpc.insecure_channel(launch.server.address) as channel:
        trace = pb.Trace(run_id=launch.session.run_id, agent_instance_id=agent_id)
        return pb_grpc.DendenStub(channel).Send(
            pb.DenDenRequest(request_id=uuid.uuid4().hex, trace=trace, **payload), timeout=60)


def _wait_running(launch: Launch, roles: list[str], timeout: float = 15) -> dict[str, str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        running = {a.role: a.agent_id for a in list(launch.session.agents.values()) if a.state == "running"}
        if all(r in running for r in roles):
            return running
        time.sleep(0.05)
    raise AssertionError(f"roles {roles} never all ran")


def test_cancel_stops_the_agent_and_its_descendants(launch: Launch, group_alive, pid_alive) -> None:  # type: ignore[no-untyped-def]
    root: LiveAgent = launch.start_root("delegate:implementer:delegate:reviewer:spawn:30 then sleep:30")
    ids = _wait_running(launch, ["orchestrator", "implementer", "reviewer"])
    reviewer_ws = launch.session.agents[ids["reviewer"]].workspace
    deadline = time.monotonic() + 10
    while not (launch.session.agent_dir(ids["reviewer"]) / "spawned.pid").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    reply = _send(launch, ids["orchestrator"], cancel=pb.CancelPayload(agent_id=ids["implementer"]))
    assert reply.status == pb.OK, reply.error
    assert sorted(reply.cancel_result.cancelled_agents) == sorted([ids["implementer"], ids["reviewer"]])
    for role in ("implementer", "reviewer"):
        record = launch.session.agents[ids[role]]
        assert record.state == "cancelled"
        assert not group_alive(record.pid)
    grandchild = int((launch.session.agent_dir(ids["reviewer"]) / "spawned.pid").read_text())
    assert not pid_alive(grandchild)  # it was in the reviewer's process group
    assert reviewer_ws
    # the root survives and got a clear answer for its delegation
    done = launch.run.wait(root, 20)
    assert done.state == "succeeded"
    assert done.output.startswith("ERROR ERR_SUBAGENT_CANCELLED: agent implementer-")
    assert launch.session.agents[ids["orchestrator"]].state == "succeeded"
    saved = json.loads((launch.session.directory / "session.json").read_text())
    assert {a["role"]: a["state"] for a in saved["agents"]} == {
        "orchestrator": "succeeded", "implementer": "cancelled", "reviewer": "cancelled"}


def test_cancel_unknown_agent(launch: Launch) -> None:
    root = launch.start_root("sleep:30")
    reply = _send(launch, root.record.agent_id, cancel=pb.CancelPayload(agent_id="nobody-1"))
    assert reply.status == pb.ERROR and reply.error.code == "ERR_UNKNOWN_AGENT"


def test_parallel_delegations_of_the_same_task_all_complete(launch: Launch) -> None:
    root = launch.start_root("sleep:30")
    replies: list[pb.DenDenResponse] = []

    def delegate() -> None:
        task = pb.Task(text="sleep:0.5 then echo:done")
        replies.append(_send(launch, root.record.agent_id,
                             delegate=pb.DelegatePayload(delegate_to="implementer", task=task)))

    threads = [threading.Thread(target=delegate) for _ in range(6)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert [r.delegate_result.text for r in replies] == ["done"] * 6
    assert time.monotonic() - started < 6  # side by side, not one after another behind a lock
    status = None
    with grpc.insecure_channel(launch.server.address) as channel:
        status = pb_grpc.DendenStub(channel).Status(pb.StatusRequest(), timeout=5)
    assert status.active_agents == 1


def test_budget_is_enforced_across_the_run(project) -> None:  # type: ignore[no-untyped-def]
    project.policy["max_delegations"] = 2
    project.build()
    launch = Launch.start(prepare(Project(project.root), load_settings(Project(project.root))), task="", asker=Asker(None))
    try:
        root = launch.start_root("sleep:30")
        codes = []
        for _ in range(3):
            reply = _send(launch, root.record.agent_id, delegate=pb.DelegatePayload(
                delegate_to="reviewer", task=pb.Task(text="echo:ok")))
            codes.append(reply.error.code if reply.status != pb.OK else "OK")
        assert codes == ["OK", "OK", "DENY_BUDGET_EXCEEDED"]
    finally:
        launch.close("finished", 0)
