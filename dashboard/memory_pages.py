"""The memory page: browse the project's memory newest first, search it (the FTS `strawpot memory recall` uses), forget."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlencode

from jinja2 import Environment
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from orchestrator.memory import MemoryEntry, MemoryFailure
from orchestrator.memory_providers import open_memory
from strawpot.model.layout import Project
from strawpot.model.plural import count

PAGE_SIZE = 50
MAX_QUERY = 500  # characters of a search; more is no search anyone typed


def _page_number(raw: str) -> int:
    return int(raw) if raw.isdigit() and 0 < int(raw) < 1_000_000 else 1


def _address(query: str, page: int) -> str:
    params = {k: v for k, v in (("q", query), ("page", str(page) if page > 1 else "")) if v}
    return "/memory" + ("?" + urlencode(params) if params else "")


def routes(project_dir: Path, provider: str, env: Environment) -> list[BaseRoute]:
    """GET /memory (`q` searches, `page` pages) and POST /memory/forget; `provider` is `[memory] provider`."""
    project = Project.at(project_dir)

    def entries(query: str, page: int) -> tuple[list[MemoryEntry], bool, str]:
        """One page of entries, whether another follows, and the summary line."""
        memory = open_memory(provider, project)
        wanted = page * PAGE_SIZE + 1
        found = memory.recall(query, [], "", wanted) if query.strip() else memory.entries()
        shown = found[(page - 1) * PAGE_SIZE: page * PAGE_SIZE]
        matched = min(len(found), page * PAGE_SIZE)
        summary = (f"{count(len(found), 'entry')} remembered" if not query.strip()
                   else f"{count(matched, 'entry')} {'matches' if matched == 1 else 'match'}, best first")
        return shown, len(found) > page * PAGE_SIZE, summary

    async def browse(request: Request) -> Response:
        query = request.query_params.get("q", "")[:MAX_QUERY]
        page = _page_number(request.query_params.get("page", ""))
        context: dict[str, object] = {"query": query, "page": page, "error": "", "entries": [], "more": False,
                                      "summary": "", "here": _address(query, page),
                                      "previous": _address(query, page - 1), "next": _address(query, page + 1)}
        try:
            context["entries"], context["more"], context["summary"] = entries(query, page)
        except MemoryFailure as exc:
            context["error"] = str(exc)
        return HTMLResponse(env.get_template("memory.html").render(project=project_dir, **context))

    async def forget(request: Request) -> Response:
        form = request.state.form
        entry_id = str(form.get("entry", "")).strip()
        back = str(form.get("back", ""))
        if not entry_id:
            return PlainTextResponse("no memory entry named: the form sends `entry`", status_code=400)
        try:
            gone = open_memory(provider, project).forget(entry_id)
        except MemoryFailure as exc:
            return PlainTextResponse(str(exc), status_code=409)
        if not gone:
            return PlainTextResponse(f"no memory entry {entry_id!r} (forgotten already?)", status_code=404)
        # back only to a memory page of this UI, never to an address the form names
        return RedirectResponse(back if back.startswith("/memory") and "//" not in back else "/memory",
                                status_code=303)

    return [Route("/memory", browse), Route("/memory/forget", forget, methods=["POST"])]
