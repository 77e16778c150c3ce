"""A project's page, live: questions waiting for an answer at its top, the start form, its runs, its locked packages."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from dashboard.live import event_stream
from dashboard.pickers import Pickers, pickers
from dashboard.runindex import PAGE_SIZE, RunRow
from dashboard.site import ProjectView, Site, page_number
from orchestrator.questions import Question, questions
from strawpot.model.errors import StrawpotError
from strawpot.model.installed import InstalledTree, Mismatch
from strawpot.model.layout import Project
from strawpot.model.lockfile import Lockfile


@dataclass(frozen=True)
class PackageRow:
    kind: str
    name: str
    version: str
    problems: tuple[str, ...]


def locked_packages(project: ProjectView) -> tuple[list[PackageRow], list[str], str]:
    """The lock's packages with what `start` would find wrong with each (the same InstalledTree.verify it
    runs), problems of packages the lock does not list, and a line when there is no readable lock."""
    layout = Project(project.dir)
    try:
        lock = Lockfile.load(layout.lock_path)
    except StrawpotError as exc:
        return [], [], exc.args[0] if exc.args else str(exc)
    problems: dict[tuple[str, str], list[Mismatch]] = {}
    for m in InstalledTree(layout.tree_root).verify(lock, deep=True):
        problems.setdefault((m.kind.value, m.name), []).append(m)
    rows = [PackageRow(p.kind.value, p.name, p.version,
                       tuple(str(m) for m in problems.pop((p.kind.value, p.name), [])))
            for p in lock.packages]
    return rows, [str(m) for found in problems.values() for m in found], ""


def waiting(project: ProjectView, running: list[RunRow]) -> list[tuple[str, Question]]:
    """The open questions of the project's running runs, (run id, question), the oldest first."""
    found = [(row.run_id, q) for row in running if row.open_questions and row.going
             for q in questions(project.sessions_root / row.run_id) if q.is_open]
    return sorted(found, key=lambda item: item[1].asked_at)


def routes(site: Site) -> list[Route]:
    """The project page and its event stream, under its `/p/{project}` prefix."""

    def start_pickers(project: ProjectView) -> Pickers:
        try:
            settings = site.settings(project.dir)
        except StrawpotError as exc:
            return Pickers(problem=exc.message)
        return pickers(project.dir, settings)

    def live(project: ProjectView, page: int) -> dict[str, Any]:
        """What the live part of the page shows now."""
        runs, total = site.runs.page(project.sessions_root, page)
        return {"project": project, "page": page, "page_size": PAGE_SIZE, "runs": runs, "total": total,
                "failed_start": site.failed_starts.get(project.key, ""),
                "waiting": waiting(project, site.runs.running(project.sessions_root))}

    async def project_page(request: Request) -> Response:
        project = site.project(request)
        page = page_number(request) - 1  # the runs list counts pages from 0
        if project.missing:
            return site.render("project.html", project=project)
        packages, extra, lock_problem = locked_packages(project)
        return site.render("project.html", packages=packages, extra=extra, lock_problem=lock_problem,
                           pick=start_pickers(project), **live(project, page))

    async def events(request: Request) -> Response:
        project = site.project(request)
        page = page_number(request) - 1

        def look() -> tuple[object, Any]:
            now = live(project, page)
            key = (now["runs"], now["total"], now["failed_start"], [(r, q.ask_id) for r, q in now["waiting"]])
            return key, lambda: parts(now)

        def parts(now: dict[str, Any]) -> dict[str, Any]:
            render = site.env.get_template
            return {"html": {"runs-body": render("runs_rows.html").render(**now),
                             "runs-count": render("runs_count.html").render(**now),
                             "start-error": render("start_error.html").render(**now)},
                    "hidden": {"runs": not now["runs"], "no-runs": bool(now["runs"]), "waiting": not now["waiting"]},
                    "items": {"waiting-list": [
                        {"id": f"wait-{run_id}-{q.ask_id}",
                         "html": render("waiting_item.html").render(project=project, run_id=run_id, q=q)}
                        for run_id, q in now["waiting"]]}}

        return event_stream(request, look)

    return [Route("/", project_page), Route("/events", events)]
