"""The Ray tests' cluster (shared by the Ray tests, which run one after the other), project and `start --runner ray`."""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests._cli import strawpot
from tests.orchestrator._merge_scenario import IDENTITY, a_git_project
from tests.orchestrator.conftest import STUB_AGENT, ProjectFixture

MB = 1024 * 1024
NODES = ("node_a", "node_b")
RAYLET_WAIT = "RAY_raylet_start_wait_time_s"  # Ray reads its settings by these lowercase names


_running: list[Any] = []  # this process's test cluster while Ray tests run


@pytest.fixture
def cluster() -> Any:
    """A head (no CPU: it runs no session) and two worker nodes of three (logical) CPUs, so six sessions fit at once,
    each with a custom resource to pin a session to it; small object stores and no dashboard (the machine is small
    and shared). Starting one takes 10-20 s, so the Ray tests run one after the other (tests/conftest.py sorts them
    first, so one xdist worker takes them all) and share it; it stops after the last of them (`stop_unless_next`),
    its idle processes no burden on the rest of the suite. A test that adds a node of its own removes it."""
    if not _running:
        from ray.cluster_utils import Cluster

        # On a loaded machine (the suite on every core) a raylet can take longer than Ray's 60 s to come up.
        saved = os.environ.get(RAYLET_WAIT)
        os.environ[RAYLET_WAIT] = "180"
        try:
            made = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False,
                                                                 "object_store_memory": 80 * MB})
            made.workers = {name: made.add_node(num_cpus=3, resources={name: 1}, object_store_memory=80 * MB)
                            for name in NODES}
            made.wait_for_nodes()
        finally:
            if saved is None:
                os.environ.pop(RAYLET_WAIT, None)
            else:
                os.environ[RAYLET_WAIT] = saved
        _running.append(made)
        atexit.register(stop_unless_next, None)  # a test of another mark that used it: stopped as the worker ends
    return _running[0]


def stop_unless_next(following: pytest.Item | None) -> None:
    """After a Ray test: stop the cluster unless the next test of this process is a Ray test too."""
    if _running and (following is None or following.get_closest_marker("ray") is None):
        _running.pop().shutdown()


@pytest.fixture
def repo(project: ProjectFixture, env: dict[str, str], cluster: Any) -> ProjectFixture:
    """The built project as a git repository (.strawpot/ ignored), sessions sent to the test cluster."""
    return on_the_cluster(project, env, cluster)


def on_the_cluster(project: ProjectFixture, env: dict[str, str], cluster: Any,
                   agent: Path = STUB_AGENT) -> ProjectFixture:
    """`project` built with `agent`, made a git repository (.strawpot/ ignored); `env` sends its sessions to
    `cluster`."""
    project.build(agent)
    a_git_project(project.root, **{"notes.txt": "notes\n"})
    env.update(IDENTITY, STRAWPOT_RUNNER_RAY_ADDRESS=cluster.address, RAY_USAGE_STATS_ENABLED="0")
    return project


def start(root: Path, env: dict[str, str], task: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return strawpot("start", "--headless", "--runner", "ray", "--task", task, *extra, cwd=root, env=env, timeout=180)


def record(project: ProjectFixture) -> dict[str, Any]:
    """The one run's session.json."""
    [path] = project.sessions_dir.glob("*/session.json")
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def started_remotely(proc: subprocess.Popen[str]) -> str:
    """The first line `start` prints once the session runs on its node (read from its stderr)."""
    assert proc.stderr is not None
    line = proc.stderr.readline()
    assert " on Ray node " in line, line + proc.stderr.read()
    return line


def settled(project: ProjectFixture, within: float = 60) -> dict[str, Any]:
    """The local record once the remote session's agent runs (its agents come here as the run goes)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not any(project.sessions_dir.glob("*/session.json")):  # a scheduler's `start` is still on its way
            time.sleep(0.1)
            continue
        data = record(project)
        if data["denden_addr"] and data["runner"].get("node") and \
                any(agent["state"] == "running" for agent in data["agents"]):
            return data
        time.sleep(0.1)
    raise AssertionError("the remote session never started")
