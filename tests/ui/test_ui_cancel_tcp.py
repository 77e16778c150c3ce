"""The UI's Cancel of a real run whose Denden server listens on TCP (`[denden] transport = "tcp"`)."""

from __future__ import annotations

import os
import subprocess

from tests.orchestrator.conftest import ProjectFixture
from tests.ui.test_ui_steer import STRAWPOT, _client, _ended, _p, _post, _session, _until, project  # noqa: F401


def test_the_ui_cancels_a_run_on_the_tcp_transport(project: ProjectFixture) -> None:  # noqa: F811
    project.denden = {"transport": "tcp"}
    project.build()
    run = subprocess.Popen([*STRAWPOT, "start", "--headless", "--task", "delegate:implementer:sleep:60"],
                           cwd=project.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=dict(os.environ))
    try:
        data = _until(lambda: (s := _session(project.root)) and len(s["agents"]) == 2 and s)
        assert data["denden_addr"].startswith("127.0.0.1:")
        response = _post(_client(project.root), f"{_p(project.root)}/runs/{data['run_id']}/cancel")
        assert response.status_code == 303, response.text
        _, err = run.communicate(timeout=30)
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
    assert run.returncode == 130, err
    ended = _ended(project.root)
    assert ended is not None and ended["state"] == "cancelled"
