"""The memory page: browse a project's memory newest first, search it (the FTS `strawpot memory recall` uses), forget."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from dashboard.site import ProjectView, Site, page_number
from orchestrator.memory import MemoryEntry, MemoryFailure, MemoryProvider
from orchestrator.memory_providers import open_memory
from strawpot.model.errors import StrawpotError
from strawpot.model.layout import Project
from strawpot.model.plural import count

PAGE_SIZE = 50
MAX_QUERY = 500  # characters of a search; more is no search anyone typed


def _address(project: ProjectView, query: str, page: int) -> str:
    params = {k: v for k, v in (("q", query), ("page", str(page) if page > 1 else "")) if v}
    return f"{project.base}/memory" + ("?" + urlencode(params) if params else "")


def routes(site: Site) -> list[BaseRoute]:
    """GET /memory (`q` searches, `page` pages) and POST /memory/forget, under a project's `/p/{project}` prefix."""

    def memory_of(project: ProjectView) -> MemoryProvider:
        """The project's `[memory] provider`, read from its settings now (a changed strawpot.toml counts)."""
        try:
            provider = str(site.settings(project.dir).get("memory.provider"))
        except StrawpotError as exc:
            raise MemoryFailure(exc.args[0] if exc.args else str(exc)) from None
        return open_memory(provider, Project(project.dir))

    def entries(project: ProjectView, query: str, page: int) -> tuple[list[MemoryEntry], bool, str]:
        """One page of entries, whether another follows, and the summary line."""
        memory = memory_of(project)
        wanted = page * PAGE_SIZE + 1
        found = memory.recall(query, [], "", wanted) if query.strip() else memory.entries()
        shown = found[(page - 1) * PAGE_SIZE: page * PAGE_SIZE]
        matched = min(len(found), page * PAGE_SIZE)
        summary = (f"{count(len(found), 'entry')} remembered" if not query.strip()
                   else f"{count(matched, 'entry')} {'matches' if matched == 1 else 'match'}, best first")
        return shown, len(found) > page * PAGE_SIZE, summary

    async def browse(request: Request) -> Response:
        project = site.project(request)
        query = request.query_params.get("q", "")[:MAX_QUERY]
        page = page_number(request)
        context: dict[str, Any] = {"query": query, "page": page, "error": "", "entries": [], "more": False,
                                      "summary": "", "here": _address(project, query, page),
                                      "previous": _address(project, query, page - 1),
                                      "next": _address(project, query, page + 1)}
        if project.missing:
            context["error"] = f"project {project.dir} is missing: no memory to show"
        else:
            try:
                context["entries"], context["more"], context["summary"] = entries(project, query, page)
            except MemoryFailure as exc:
                context["error"] = str(exc)
        return site.render("memory.html", project=project, **context)

    async def forget(request: Request) -> Response:
        project = site.project(request)
        form = request.state.form
        entry_id = str(form.get("entry", "")).strip()
        back = str(form.get("back", ""))
        if not entry_id:
            return PlainTextResponse("no memory entry named: the form sends `entry`", status_code=400)
        if project.missing:
            return PlainTextResponse(f"project {project.dir} is missing: nothing to act on", status_code=409)
        try:
            gone = memory_of(project).forget(entry_id)
        except MemoryFailure as exc:
            return PlainTextResponse(str(exc), status_code=409)
        if not gone:
            return PlainTextResponse(f"no memory entry {entry_id!r} (forgotten already?)", status_code=404)
        # back only to this project's memory page, never to an address the form names
        home = f"{project.base}/memory"
        return RedirectResponse(back if back.startswith(home) and "//" not in back else home, status_code=303)

    return [Route("/memory", browse), Route("/memory/forget", forget, methods=["POST"])]
