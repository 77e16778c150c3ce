"""The state-changing routes of a project: start a session, cancel a run or an agent's subtree, prune leftovers.

POST only; the guard (dashboard.security) has checked the secret cookie, the CSRF token and the Origin. Cancel
and prune call the run-control functions `strawpot cancel` and `strawpot sessions --prune` call; a session is
started as the strawpot command a user would type (it outlives the page, and its verified-lock checks apply).
"""

from __future__ import annotations

import asyncio
import subprocess
import tempfile
import threading
from collections.abc import Callable
from typing import IO, Any

from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from dashboard.launcher import detach, error_line
from dashboard.site import Site
from dashboard.steer import refusal
from orchestrator.run_control import cancel_run, prune_runs
from orchestrator.run_record import RunNotFound
from strawpot.model.errors import StrawpotError


def start_options(form: Any) -> list[str] | None:
    """`strawpot start`'s options from the start form, or None when the form is not a valid session.

    Params are NAME=VALUE, one a line; `start` itself checks them against what the agents declare (exit 2).
    """
    role, task = str(form.get("role", "")).strip(), str(form.get("task", "")).strip()
    runtime, isolation = str(form.get("runtime", "")).strip(), str(form.get("isolation", "")).strip()
    params = [line.strip() for line in str(form.get("params", "")).splitlines() if line.strip()]
    if not task or isolation not in ("", "none", "worktree") or any("=" not in p for p in params):
        return None
    return ["--task", task, *(["--role", role] if role else []), *(["--runtime", runtime] if runtime else []),
            *(arg for p in params for arg in ("--param", p)), *(["--isolation", isolation] if isolation else [])]


def _report_failure(site: Site, key: str, process: subprocess.Popen[bytes], errors: IO[bytes]) -> None:
    """Wait for a started session; if it failed, keep its last error line for the project page to show."""
    with errors:
        code = process.wait()
        if code == 0:
            return
        errors.seek(0)
        site.failed_starts[key] = error_line(errors.read().decode("utf-8", "replace"), code)


async def _in_thread(call: Callable[..., object], *args: Any) -> Response | None:
    """Call a run-control function in a thread (a whole-run cancel waits for the end, and the live feeds must
    keep flowing); its refusal as a response, or None when it went through."""
    try:
        await asyncio.to_thread(call, *args)
    except RunNotFound as exc:
        return PlainTextResponse(f"no run {exc.run_id!r}", status_code=404)
    except StrawpotError as exc:
        return PlainTextResponse(refusal(exc), status_code=409)
    return None


def routes(site: Site) -> list[Route]:
    """Under a project's `/p/{project}` prefix."""

    def gone(request: Request) -> Response | None:
        project = site.project(request)
        if project.missing:
            return PlainTextResponse(f"project {project.dir} is missing: nothing to act on", status_code=409)
        return None

    async def cancel(request: Request) -> Response:
        project = site.project(request)
        run_id = request.path_params["run_id"]
        if (refused := gone(request)) is not None:
            return refused
        agent = str(request.state.form.get("agent", "")).strip()
        refused = await _in_thread(cancel_run, project.sessions_root, run_id, agent or None)
        return refused or RedirectResponse(f"{project.base}/runs/{run_id}", status_code=303)

    async def prune(request: Request) -> Response:
        project = site.project(request)
        if (refused := gone(request)) is not None:
            return refused
        # nobody to ask on the page: what holds unmerged work stays (UnmergedWorkKept), and the page says so
        refused = await _in_thread(prune_runs, project.sessions_root, project.dir)
        return refused or RedirectResponse(f"{project.base}/", status_code=303)

    async def start(request: Request) -> Response:
        project = site.project(request)
        if (refused := gone(request)) is not None:
            return refused
        options = start_options(request.state.form)
        if options is None:
            return PlainTextResponse("a session needs a task, isolation none or worktree, and params as NAME=VALUE "
                                     "(one a line)", status_code=400)
        # Exactly what a user would type in the project folder, so the verified-lock checks apply; the run
        # records itself under .strawpot/sessions/, where the project page finds it, and its agents' questions
        # wait there for an answer from the run page (detach sets `[session] ask = "run"`).
        site.failed_starts.pop(project.key, None)
        errors = tempfile.TemporaryFile()  # noqa: SIM115 -- closed by _report_failure once the start ends
        process = detach([*site.command, "start", "--headless", *options], project.dir, stderr=errors)
        threading.Thread(target=_report_failure, args=(site, project.key, process, errors), daemon=True).start()
        return RedirectResponse(f"{project.base}/", status_code=303)

    return [
        Route("/prune", prune, methods=["POST"]),
        Route("/start", start, methods=["POST"]),
        Route("/runs/{run_id}/cancel", cancel, methods=["POST"]),
    ]
