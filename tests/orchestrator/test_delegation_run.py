"""Delegation inside one run, driven over Denden with our own stubs: cancel of a subtree, parallel delegations."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

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
    project.policy["agent_timeout"] = 300  # the tests end their agents themselves; a loaded machine is slow
    project.build()
    launch = Launch.start(prepare(Project(project.root), load_settings(Project(project.root))), task="", asker=Asker(None))
    try:
        yield launch
    finally:
        launch.close("finished", 0)


def _send(launch: Launch, agent_id: str, timeout: float = 60, **payload: object) -> pb.DenDenResponse:
    with grpc.insecure_channel(launch.server.address) as channel:
        trace = pb.Trace(run_id=launch.session.run_id, agent_instance_id=agent_id)
        return pb_grpc.DendenStub(channel).Send(
            pb.DenDenRequest(request_id=uuid.uuid4().hex, trace=trace, **payload), timeout=timeout)


def _wait_running(launch: Launch, roles: list[str], timeout: float = 60) -> dict[str, str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        running = {a.role: a.agent_id for a in list(launch.session.agents.values()) if a.state == "running"}
        if all(r in running for r in roles):
            return running
        time.sleep(0.05)
    raise AssertionError(f"roles {roles} never all ran")


def _running(launch: Launch, role: str) -> int:
    return sum(a.role == role and a.state == "running" for a in list(launch.session.agents.values()))


def test_cancel_stops_the_agent_and_its_descendants(launch: Launch, group_alive, pid_alive) -> None:  # type: ignore[no-untyped-def]
    root: LiveAgent = launch.start_root("delegate:implementer:delegate:reviewer:spawn:300 then sleep:300")
    ids = _wait_running(launch, ["orchestrator", "implementer", "reviewer"])
    reviewer_ws = launch.session.agents[ids["reviewer"]].workspace
    spawned = launch.session.agent_dir(ids["reviewer"]) / "spawned.pid"
    deadline = time.monotonic() + 60
    while not spawned.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert spawned.exists(), "the reviewer never spawned its child"
    reply = _send(launch, ids["orchestrator"], cancel=pb.CancelPayload(agent_id=ids["implementer"]))
    assert reply.status == pb.OK, reply.error
    assert sorted(reply.cancel_result.cancelled_agents) == sorted([ids["implementer"], ids["reviewer"]])
    for role in ("implementer", "reviewer"):
        record = launch.session.agents[ids[role]]
        assert record.state == "cancelled"
        assert not group_alive(record.pid)
    grandchild = int(spawned.read_text())
    assert not pid_alive(grandchild)  # it was in the reviewer's process group
    assert reviewer_ws
    # the root survives and got a clear answer for its delegation
    done = launch.run.wait(root, 60)
    assert done.state == "succeeded"
    assert done.output.startswith("ERROR ERR_SUBAGENT_CANCELLED: agent implementer-")
    assert launch.session.agents[ids["orchestrator"]].state == "succeeded"
    saved = json.loads((launch.session.directory / "session.json").read_text())
    assert {a["role"]: a["state"] for a in saved["agents"]} == {
        "orchestrator": "succeeded", "implementer": "cancelled", "reviewer": "cancelled"}


def test_cancel_unknown_agent(launch: Launch) -> None:
    root = launch.start_root("sleep:300")
    reply = _send(launch, root.record.agent_id, cancel=pb.CancelPayload(agent_id="nobody-1"))
    assert reply.status == pb.ERROR and reply.error.code == "ERR_UNKNOWN_AGENT"


def test_parallel_delegations_of_the_same_task_all_complete(launch: Launch, tmp_path: Path) -> None:
    root = launch.start_root("sleep:300")  # still running when the test asks for the active agents
    replies: list[pb.DenDenResponse] = []
    go = tmp_path / "go"

    def delegate() -> None:
        task = pb.Task(text=f"wait-for:{go} then echo:done")
        replies.append(_send(launch, root.record.agent_id, timeout=300,  # the slowest of the six spawns gates all
                             delegate=pb.DelegatePayload(delegate_to="implementer", task=task)))

    threads = [threading.Thread(target=delegate) for _ in range(6)]
    for t in threads:
        t.start()
    # side by side, not one after another behind a lock: all six run at once while none can finish
    deadline = time.monotonic() + 60
    while _running(launch, "implementer") < 6 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _running(launch, "implementer") == 6
    go.touch()
    for t in threads:
        t.join(120)
    assert [r.delegate_result.text for r in replies] == ["done"] * 6
    status = None
    with grpc.insecure_channel(launch.server.address) as channel:
        status = pb_grpc.DendenStub(channel).Status(pb.StatusRequest(), timeout=60)
    assert status.active_agents == 1


def test_budget_is_enforced_across_the_run(project) -> None:  # type: ignore[no-untyped-def]
    project.policy["max_delegations"] = 2
    project.build()
    launch = Launch.start(prepare(Project(project.root), load_settings(Project(project.root))), task="", asker=Asker(None))
    try:
        root = launch.start_root("sleep:300")  # alive for all three delegations, however slow they are
        codes = []
        for _ in range(3):
            reply = _send(launch, root.record.agent_id, delegate=pb.DelegatePayload(
                delegate_to="reviewer", task=pb.Task(text="echo:ok")))
            codes.append(reply.error.code if reply.status != pb.OK else "OK")
        assert codes == ["OK", "OK", "DENY_BUDGET_EXCEEDED"]
    finally:
        launch.close("finished", 0)
