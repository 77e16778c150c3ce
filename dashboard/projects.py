"""The home page (projects you have used) and a project's page: its locked packages, verified, and its runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from dashboard.runindex import PAGE_SIZE
from dashboard.site import ProjectView, Site, page_number
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


def routes(site: Site) -> tuple[list[Route], list[Route]]:
    """(the home page at the root, the project page under its `/p/{project}` prefix)."""

    async def home(request: Request) -> Response:
        used, problem = site.projects()
        views = [(site.view(p.path), p.last_used) for p in used]
        return site.render("home.html", projects=views, problem=problem, home=site.home)

    async def project_page(request: Request) -> Response:
        project = site.project(request)
        page = page_number(request) - 1  # the runs list counts pages from 0
        context: dict[str, Any] = {"project": project, "page": page, "page_size": PAGE_SIZE,
                                   "failed_start": site.failed_starts.get(project.key, "")}
        if project.missing:
            return site.render("project.html", runs=[], total=0, packages=[], extra=[], lock_problem="", **context)
        runs, total = site.runs.page(project.sessions_root, page)
        packages, extra, lock_problem = locked_packages(project)
        return site.render("project.html", runs=runs, total=total, packages=packages, extra=extra,
                           lock_problem=lock_problem, **context)

    return [Route("/", home)], [Route("/", project_page)]
