"""Denden is reachable by the user alone: a private Unix socket by default, a per-run token over TCP.

The clients here are denden-server 0.1.21's own generated Python stubs, dialling DENDEN_ADDR unchanged.
"""

from __future__ import annotations

import os
import stat
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import denden.gen.denden_pb2 as theirs
import denden.gen.denden_pb2_grpc as theirs_grpc
import grpc
import pytest

from orchestrator.ask import Asker
from orchestrator.endpoint import MAX_SOCKET_PATH, SOCKET_NAME
from orchestrator.launch import Launch, Project, prepare
from strawpot.config_files import load_settings
from strawpot.model.errors import UsageError
from tests._short_paths import short_folder

pytestmark = pytest.mark.compat


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture
def short_root() -> Iterator[Path]:
    """A project folder with a short path, so the socket fits inside the run folder."""
    with short_folder() as root:
        yield root


@pytest.fixture
def short_project(project, short_root: Path):  # type: ignore[no-untyped-def]
    """The standard project, at a short path; request it before `started` so it outlives the run."""
    project.root = short_root
    return project


@pytest.fixture
def started(project) -> Iterator[Callable[[], Launch]]:  # type: ignore[no-untyped-def]
    """Start a run on the project as configured by the test (call it after setting project fields)."""
    launches: list[Launch] = []

    def start() -> Launch:
        if not launches:
            project.build()
        launch = Launch.start(prepare(Project(project.root), load_settings(Project(project.root))), task="", asker=Asker(None))
        launches.append(launch)
        return launch

    yield start
    for launch in launches:
        launch.close("finished", 0)


def _request(launch: Launch, agent_id: str, **payload: object) -> object:
    trace = theirs.Trace(run_id=launch.session.run_id, agent_instance_id=agent_id)
    return theirs.DenDenRequest(denden_version="1.0", request_id=uuid.uuid4().hex, trace=trace, **payload)


def _delegate(launch: Launch, agent_id: str, text: str) -> object:
    return _request(launch, agent_id, delegate=theirs.DelegatePayload(delegate_to="reviewer",
                                                                      task=theirs.Task(text=text)))


# -- the default: a Unix socket in a private folder of the run's own --------------------------------------


def test_default_is_a_private_unix_socket_in_a_folder_of_the_runs_own(short_project, started) -> None:  # type: ignore[no-untyped-def]
    launch = started()
    run_dir = launch.session.directory
    assert launch.server.token is None
    socket_path = Path(launch.server.address.removeprefix("unix:"))
    assert socket_path.name == SOCKET_NAME and socket_path.parent.name.startswith("strawpot-")
    assert not (run_dir / SOCKET_NAME).exists()  # not in the project: other runs' sandboxed agents could reach it
    assert stat.S_ISSOCK(os.lstat(socket_path).st_mode)
    assert _mode(socket_path) == 0o600 and _mode(socket_path.parent) == 0o700
    assert _mode(run_dir) == 0o700
    assert _mode(short_project.sessions_dir) == 0o700
    assert _mode(run_dir / "session.json") == 0o600
    assert _mode(run_dir / "trace.jsonl") == 0o600
    saved = launch.session.to_dict()
    assert saved["denden_addr"] == launch.server.address


def test_their_stubs_talk_over_the_unix_socket(short_project, started) -> None:  # type: ignore[no-untyped-def]
    launch = started()
    root = launch.start_root("sleep:300")
    assert launch.server.address.startswith("unix:/")
    with grpc.insecure_channel(launch.server.address) as channel:  # DENDEN_ADDR, dialled unchanged
        stub = theirs_grpc.DendenStub(channel)
        assert stub.Status(theirs.StatusRequest(), timeout=60).active_agents == 1
        reply = stub.Send(_delegate(launch, root.record.agent_id, "echo:over unix"), timeout=30)
    assert reply.status == theirs.OK, reply.error
    assert reply.delegate_result.text == "over unix"


def test_a_deep_project_path_gets_a_short_private_socket(project, started, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    deep = tmp_path.joinpath(*(["a-rather-long-folder-name"] * 6), "proj")
    deep.mkdir(parents=True)
    project.root = deep
    launch = started()
    assert len(str(launch.session.directory / SOCKET_NAME)) > MAX_SOCKET_PATH  # it could not go there
    assert launch.server.address.startswith("unix:/")
    socket_path = Path(launch.server.address.removeprefix("unix:"))
    assert len(os.fsencode(str(socket_path))) <= MAX_SOCKET_PATH
    folder = socket_path.parent
    assert _mode(folder) == 0o700 and folder.stat().st_uid == os.getuid()
    assert _mode(socket_path) == 0o600
    assert launch.session.to_dict()["denden_addr"] == launch.server.address
    root = launch.start_root("sleep:300")
    with grpc.insecure_channel(launch.server.address) as channel:
        reply = theirs_grpc.DendenStub(channel).Send(_delegate(launch, root.record.agent_id, "echo:deep"), timeout=30)
    assert reply.status == theirs.OK and reply.delegate_result.text == "deep"
    launch.close("finished", 0)
    assert not folder.exists()  # the private folder goes with the run


def test_memory_and_agent_logs_are_private(short_project, started) -> None:  # type: ignore[no-untyped-def]
    launch = started()
    root = launch.start_root("sleep:300")
    with grpc.insecure_channel(launch.server.address) as channel:
        reply = theirs_grpc.DendenStub(channel).Send(
            _request(launch, root.record.agent_id, remember=theirs.RememberPayload(content="a secret plan")), timeout=60)
    assert reply.status == theirs.OK
    memory_dir = short_project.state_dir / "memory"
    assert _mode(memory_dir) == 0o700
    assert _mode(memory_dir / "memory.db") == 0o600
    assert _mode(Path(root.record.workspace) / "agent.log") == 0o600


def test_an_older_open_sessions_folder_is_closed(short_project, started) -> None:  # type: ignore[no-untyped-def]
    short_root = short_project.root
    (short_root / ".strawpot" / "sessions").mkdir(parents=True, mode=0o755)
    os.chmod(short_root / ".strawpot" / "sessions", 0o755)
    started()
    assert _mode(short_root / ".strawpot" / "sessions") == 0o700


# -- TCP, where configured: every call carries the run's token ---------------------------------------------


@pytest.fixture
def tcp_launch(project, started) -> Launch:  # type: ignore[no-untyped-def]
    project.denden = {"transport": "tcp"}
    launch: Launch = started()
    return launch


def test_tcp_needs_the_runs_token(tcp_launch: Launch) -> None:
    launch = tcp_launch
    assert launch.server.address.startswith("127.0.0.1:")
    assert launch.server.token and len(launch.server.token) >= 32
    root = launch.start_root("sleep:300")
    with grpc.insecure_channel(launch.server.address) as channel:
        stub = theirs_grpc.DendenStub(channel)
        good = (("authorization", f"Bearer {launch.server.token}"),)
        assert stub.Status(theirs.StatusRequest(), metadata=good, timeout=60).active_agents == 1
        reply = stub.Send(_delegate(launch, root.record.agent_id, "echo:with token"), metadata=good, timeout=30)
        assert reply.status == theirs.OK and reply.delegate_result.text == "with token"


@pytest.mark.parametrize("metadata", [
    (),
    (("authorization", "Bearer "),),
    (("authorization", "Bearer not-the-token"),),
    (("x-denden-token", "anything"),),
])
def test_a_client_without_the_token_is_unauthenticated(tcp_launch: Launch, metadata) -> None:  # type: ignore[no-untyped-def]
    launch = tcp_launch
    root = launch.start_root("sleep:300")
    with grpc.insecure_channel(launch.server.address) as channel:
        stub = theirs_grpc.DendenStub(channel)
        for call in (lambda: stub.Status(theirs.StatusRequest(), metadata=metadata, timeout=60),
                     lambda: stub.Send(_delegate(launch, root.record.agent_id, "echo:x"), metadata=metadata, timeout=60)):
            with pytest.raises(grpc.RpcError) as caught:
                call()
            assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
            assert launch.server.token not in (caught.value.details() or "")
    assert len(launch.session.agents) == 1  # nothing was delegated


def test_another_runs_token_is_refused(project, started) -> None:  # type: ignore[no-untyped-def]
    project.denden = {"transport": "tcp"}
    first, second = started(), started()
    with grpc.insecure_channel(second.server.address) as channel, pytest.raises(grpc.RpcError) as caught:
        theirs_grpc.DendenStub(channel).Status(
            theirs.StatusRequest(), metadata=(("authorization", f"Bearer {first.server.token}"),), timeout=60)
    assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED


def test_an_unknown_transport_is_a_usage_error(project) -> None:  # type: ignore[no-untyped-def]
    project.denden = {"transport": "carrier-pigeon"}
    project.build()
    with pytest.raises(UsageError, match=r"strawpot.toml:\d+: denden.transport must be one of unix, tcp, not 'carrier-pigeon'"):
        load_settings(Project(project.root))


# -- errors disclose no ids -----------------------------------------------------------------------------


def test_a_wrong_run_id_is_refused_without_naming_the_real_one(short_project, started) -> None:  # type: ignore[no-untyped-def]
    launch = started()
    root = launch.start_root("sleep:300")
    request = _delegate(launch, root.record.agent_id, "echo:x")
    request.trace.run_id = "run_guess"
    with grpc.insecure_channel(launch.server.address) as channel:
        reply = theirs_grpc.DendenStub(channel).Send(request, timeout=60)
    assert reply.status == theirs.ERROR and reply.error.code == "INVALID_REQUEST"
    assert "not the run this server serves" in reply.error.message
    assert launch.session.run_id not in reply.error.message
    assert root.record.agent_id not in reply.error.message


def test_cancel_of_an_unknown_agent_does_not_name_the_run(short_project, started) -> None:  # type: ignore[no-untyped-def]
    launch = started()
    root = launch.start_root("sleep:300")
    with grpc.insecure_channel(launch.server.address) as channel:
        reply = theirs_grpc.DendenStub(channel).Send(
            _request(launch, root.record.agent_id, cancel=theirs.CancelPayload(agent_id="nobody-1")), timeout=60)
    assert reply.status == theirs.ERROR and reply.error.code == "ERR_UNKNOWN_AGENT"
    assert launch.session.run_id not in reply.error.message
