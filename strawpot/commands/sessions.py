"""`strawpot sessions [show RUN | answer RUN QUESTION TEXT] [--prune]`: list, show, answer a waiting question, prune."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import rich_click as click

from strawpot.commands._complete import complete_run_id
from strawpot.commands._options import json_option, print_json, project_option

if TYPE_CHECKING:
    from orchestrator.leftovers import Leftover

SECTION = "sessions"


def _when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if ts else "-"


def _worktree(run: dict[str, Any]) -> str:
    isolation = run.get("isolation") or {}
    if not isinstance(isolation, dict) or isolation.get("kind", "none") == "none":
        return "-"
    return f"{isolation.get('branch', '')} ({isolation.get('state', '')})"


def _sandbox(run: dict[str, Any]) -> str:
    sandbox = run.get("sandbox") or {}
    if not isinstance(sandbox, dict) or sandbox.get("kind", "none") == "none":
        return "none"
    writable = ", ".join((sandbox.get("walls") or {}).get("writable", [])) or "-"
    return f"{sandbox['kind']} (network {sandbox.get('network')}; writable: {writable})"


@click.command()
@click.argument("action", required=False, type=click.Choice(["show", "answer"]))
@click.argument("run_id", required=False, shell_complete=complete_run_id)
@click.argument("answer", nargs=-1, metavar="[QUESTION TEXT]")
@click.option("--prune", is_flag=True, help="Remove the worktrees (and branches) that ended runs left behind.")
@click.option("--dry-run", is_flag=True, help="With --prune: list what would be removed, remove nothing.")
@click.option("--force", is_flag=True, help="With --prune: remove leftovers holding unmerged work without asking.")
@project_option
@json_option
def command(action: str | None, run_id: str | None, answer: tuple[str, ...], prune: bool, dry_run: bool,
            force: bool, project: Path | None, as_json: bool) -> None:
    """List the runs recorded under .strawpot/sessions/ (newest first), with their agents' states and worktrees.

    `show RUN_ID` prints one run: its agents, its worktree, its agents' questions and the inputs it ran from.
    `answer RUN_ID QUESTION TEXT` answers question QUESTION (a number `show` lists) of a run whose questions
    wait in its folder (`[session] ask = "run"`, as in runs `strawpot ui` starts). `--prune` removes the
    worktrees and `strawpot/<run id>` branches of ended runs that kept them (failed, interrupted, unmerged);
    one holding work no other branch has is removed only when you say yes on a terminal, or with `--force`
    (without a terminal it is kept and the command exits 2). `--dry-run` lists what would go.
    """
    from orchestrator.session import list_sessions, load_session
    from strawpot.model.errors import UsageError
    from strawpot.model.layout import Project

    the_project = Project.at(project)
    if action == "answer":
        _answer(the_project.sessions_dir, run_id, answer)
        return
    if answer:
        raise UsageError(f"unexpected argument {answer[0]!r}", hint="`strawpot sessions --help` shows the forms")
    if action == "show":
        if not run_id:
            raise UsageError("sessions show needs a RUN_ID", hint="`strawpot sessions` lists them")
        data = load_session(the_project.sessions_dir, run_id)
        if data is None:
            raise UsageError(f"no run {run_id!r} in {the_project.sessions_dir}", hint="`strawpot sessions` lists them")
        _show(data, as_json, the_project.sessions_dir)
        return
    if run_id:
        raise UsageError(f"unexpected argument {run_id!r}", hint="did you mean `strawpot sessions show RUN_ID`?")
    if prune:
        _prune(the_project.sessions_dir, the_project.dir, force=force, dry_run=dry_run, as_json=as_json)
        return
    if force or dry_run:
        raise UsageError("--force and --dry-run go with --prune", hint="`strawpot sessions --prune --dry-run`")
    _list(list_sessions(the_project.sessions_dir), as_json)


def _prune(sessions_root: Path, project_dir: Path, *, force: bool, dry_run: bool, as_json: bool) -> None:
    """Find the leftovers git knows of, ask about those holding unmerged work, remove the rest."""
    from orchestrator import leftovers
    from strawpot.commands._interactive import on_terminal
    from strawpot.model.display import terminal_safe
    from strawpot.model.errors import UsageError
    from strawpot.model.plural import count

    if not dry_run:
        for line in leftovers.recover(project_dir):
            click.echo(line, err=True)
    found = leftovers.find(sessions_root, project_dir)
    for left in found:
        if left.refused:
            click.echo(terminal_safe(f"left alone: {left.run_id}: {left.refused}"), err=True)
    removable = [left for left in found if not left.refused]
    if dry_run:
        _say("would remove", removable, "would_remove", as_json)
        return
    asking = on_terminal() and not as_json
    kept = [] if force else _held_back([left for left in removable if left.work], asking)
    pruned = [left for left in removable if left not in kept]
    for left in pruned:
        for line in leftovers.remove(left):
            click.echo(terminal_safe(line), err=True)
        leftovers.mark_removed(sessions_root, left.run_id)
    _say("removed", pruned, "pruned", as_json, kept)
    if kept and not asking:
        raise UsageError(f"kept {count(len(kept), 'leftover')} holding unmerged work: "
                         + "; ".join(left.describe() for left in kept),
                         hint="look at it with `git log strawpot/RUN_ID`; `strawpot sessions --prune --force` "
                              "deletes it (on a terminal you are asked)")


def _held_back(with_work: list[Leftover], asking: bool) -> list[Leftover]:
    """The leftovers holding unmerged work that stay: all of them, unless the user on a terminal says yes."""
    from strawpot.model.display import terminal_safe

    if not with_work or not asking:
        return with_work
    click.echo("these leftovers hold work no other branch has:", err=True)
    for left in with_work:
        click.echo(terminal_safe(f"  {left.describe()}"), err=True)
    return [] if click.confirm("Delete them?", default=False, err=True) else with_work


def _say(done: str, lefts: list[Leftover], key: str, as_json: bool, kept: list[Leftover] | None = None) -> None:
    from strawpot.model.display import terminal_safe

    if as_json:
        print_json({key: [_json(left) for left in lefts], **({"kept": [_json(k) for k in kept]} if kept is not None
                                                              else {})})
        return
    for left in lefts:
        click.echo(terminal_safe(f"{done} {left.describe()}"), err=True)
    if not lefts and not kept:
        click.echo("no leftover worktrees", err=True)


def _json(left: Leftover) -> dict[str, Any]:
    return {"run_id": left.run_id, "worktree": None if left.worktree is None else str(left.worktree),
            "branch": left.branch, "commits": left.commits,
            "changed_files": None if left.changed < 0 else left.changed}  # None: git could not tell


def _list(runs: list[dict[str, Any]], as_json: bool) -> None:
    from rich.markup import escape
    from rich.table import Table

    from strawpot.console import new_console
    from strawpot.model.display import terminal_safe

    if as_json:
        print_json({"sessions": [{k: v for k, v in r.items() if k != "agents"} | {"agents": len(r.get("agents", []))}
                                 for r in runs]})
        return
    if not runs:
        click.echo("no sessions yet (run `strawpot start`)", err=True)
        return
    table = Table("run", "started", "role", "state", "exit", "agents", "worktree", box=None)
    for r in runs:
        exit_code = r.get("exit_code")
        states = [str(a.get("state", "")) for a in r.get("agents", [])]
        agents = ", ".join(f"{n} {s}" for s in dict.fromkeys(states) if (n := states.count(s))) or "0"
        cells = (str(r.get("run_id")), _when(r.get("started_at")), str(r.get("role", "")), str(r.get("state", "")),
                 "-" if exit_code is None else str(exit_code), agents, _worktree(r))
        table.add_row(*(escape(terminal_safe(cell)) for cell in cells))  # a record's text is anyone's: inert
    new_console(stderr=False).print(table)


def _show(data: dict[str, Any], as_json: bool, sessions_root: Path) -> None:
    from strawpot.model.display import terminal_safe

    if as_json:
        print_json(data)
        return
    lines = [f"run {data.get('run_id')}: role {data.get('role')}, {data.get('state')} "
             f"(exit code {data.get('exit_code')}), started {_when(data.get('started_at'))}",
             f"worktree: {_worktree(data)}"]
    if data.get("merge_result"):
        lines.append(f"merge: {data['merge_result']}")
    lines.append(f"sandbox: {_sandbox(data)}")
    for agent in data.get("agents", []):
        session = f", session {agent['session_id']}" if agent.get("session_id") else ""
        lines.append(f"agent {agent.get('agent_id')}: role {agent.get('role')}, {agent.get('agent')}, "
                     f"{agent.get('state')}{session}")
        if agent.get("via_wildcard"):
            lines.append(f"  staged through `*`: {', '.join(map(str, agent['via_wildcard']))}")
        lines += [f"  sandbox denied: {line}" for line in agent.get("sandbox_denied") or []]
        if agent.get("always_staged"):
            lines.append(f"  staged for every agent ([session] always_stage): "
                         f"{', '.join(map(str, agent['always_staged']))}")
    lines += _question_lines(sessions_root / str(data.get("run_id")))
    inputs = data.get("inputs")
    if isinstance(inputs, dict):
        lines.append("inputs:")
        lines += ["  " + line for line in json.dumps(inputs, indent=2, sort_keys=True).splitlines()]
    click.echo(terminal_safe("\n".join(lines)))  # a record's text is anyone's: no escape sequence reaches the terminal


def _question_lines(run_dir: Path) -> list[str]:
    """The run's askUser questions kept in its folder, each with its answer or `open`."""
    from orchestrator import questions
    from strawpot.model.display import terminal_safe

    lines = []
    for q in questions.questions(run_dir):
        said = "open" if q.is_open else f"answered by {q.answered_by}: {q.answer if q.answer is not None else '-'}"
        lines.append(terminal_safe(f"question {q.ask_id} from {q.agent_id}: {q.question} ({said})"))
    return lines


def _answer(sessions_root: Path, run_id: str | None, answer: tuple[str, ...]) -> None:
    from orchestrator import questions
    from orchestrator.session import load_session
    from strawpot.model.errors import StrawpotError, UsageError

    hint = f"`strawpot sessions show {run_id or 'RUN_ID'}` lists its questions"
    if not run_id or len(answer) != 2:
        raise UsageError("sessions answer needs RUN_ID QUESTION TEXT", hint=hint)
    if load_session(sessions_root, run_id) is None:
        raise UsageError(f"no run {run_id!r} in {sessions_root}", hint="`strawpot sessions` lists them")
    try:
        questions.answer(sessions_root / run_id, answer[0], answer[1], "cli")
    except questions.AnswerRefused as exc:
        if exc.reason in ("unknown", "invalid"):
            raise UsageError(str(exc), hint=hint) from None
        raise StrawpotError(str(exc)) from None
    click.echo(f"answered question {answer[0]} of run {run_id}", err=True)
