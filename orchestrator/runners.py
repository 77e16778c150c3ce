"""Where a whole session runs (`[session] runner`): `local`, in this process as always, or `ray`, on a Ray worker."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from orchestrator.launch import Ended, Launch
from orchestrator.run_request import RunRequest
from strawpot.model.errors import MissingToolError
from strawpot.model.settings import Settings

RAY_EXTRA = "strawpot[ray]"


class Runner(Protocol):
    """Takes a verified run and brings back how it ended: the run folder, the merge-back and what `start` prints are
    the same whichever runner ran it. Another kind (a Kubernetes Job) is one more class beside these."""

    name: str

    def run(self, request: RunRequest, started: Callable[[str], None]) -> Ended:
        """Run the session to its end; `started` is told where it runs once it has begun (one phrase)."""


class LocalRunner:
    """Today's behaviour: the Denden server and every agent in this process's machine."""

    name = "local"

    def run(self, request: RunRequest, started: Callable[[str], None]) -> Ended:
        launch = Launch.start(request.prepared, task=request.task, asker=request.asker, run_id=request.run_id,
                              tmux=request.tmux, observer=request.observer, warn=request.warn,
                              env_policy=request.env_policy)
        started(f"Denden on {launch.server.address}")
        return launch.run_to_end(request.task, attach=request.attach)


def runner_for(settings: Settings) -> Runner:
    """The runner `[session] runner` (`start --runner`) names; exit 7 naming the extra when Ray is not installed."""
    if settings.get("session.runner") != "ray":
        return LocalRunner()
    from orchestrator import ray_import

    if not ray_import.installed():
        raise MissingToolError(f"--runner ray needs Ray, which is not installed: pip install '{RAY_EXTRA}'")
    from orchestrator.ray_runner import RayRunner

    ray_import.load_soon()  # after our own imports (theirs overlap Ray's: grpc), while `start` verifies the tree
    return RayRunner(settings)
