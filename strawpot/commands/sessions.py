"""`strawpot sessions [show RUN | answer RUN QUESTION TEXT] [--prune]`: list, show, answer a waiting question, prune."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import rich_click as click

from strawpot.commands._complete import complete_run_id
from strawpot.commands._options import json_option, print_json, project_option

if TYPE_CHECKING:
    from orchestrator.leftovers import Leftover
    from orchestrator.run_record import RunRecord

SECTION = "sessions"


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

    `show RUN_ID` prints one run in brief: its state, task and times, worktree and merge result, the lock it
    ran from, its agents as a tree, their questions, and the commands that take it further (`--json`: the
    whole record).
    `answer RUN_ID QUESTION TEXT` answers question QUESTION (a number `show` lists) of a run whose questions
    wait in its folder (`[session] ask = "run"`, as in runs `strawpot ui` starts). `--prune` removes the
    worktrees and `strawpot/<run id>` branches of ended runs that kept them (failed, interrupted, unmerged);
    one holding work no other branch has is removed only when you say yes on a terminal, or with `--force`
    (without a terminal it is kept and the command exits 2). `--dry-run` lists what would go.
    """
    from orchestrator.run_record import read_run
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
        _show(read_run(the_project.sessions_dir, run_id), as_json, the_project.sessions_dir)
        return
    if run_id:
        raise UsageError(f"unexpected argument {run_id!r}", hint="did you mean `strawpot sessions show RUN_ID`?")
    if prune:
        _prune(the_project.sessions_dir, the_project.dir, force=force, dry_run=dry_run, as_json=as_json)
        return
    if force or dry_run:
        raise UsageError("--force and --dry-run go with --prune", hint="`strawpot sessions --prune --dry-run`")
    from strawpot.commands._read_only import sessions

    sessions(project, as_json)


def _prune(sessions_root: Path, project_dir: Path, *, force: bool, dry_run: bool, as_json: bool) -> None:
    """Prune the leftovers git knows of, asking on a terminal about those holding unmerged work."""
    from orchestrator.run_control import UnmergedWorkKept, prune_runs
    from strawpot.commands._interactive import on_terminal
    from strawpot.model.display import terminal_safe

    asking = on_terminal() and not as_json
    try:
        pruned = prune_runs(sessions_root, project_dir, dry_run=dry_run, force=force,
                            confirm=_confirm if asking else None)
        kept = None
    except UnmergedWorkKept as exc:
        pruned, kept = exc.pruned, exc
    for line in pruned.recovered:
        click.echo(line, err=True)
    for left in pruned.refused:
        click.echo(terminal_safe(f"left alone: {left.run_id}: {left.refused}"), err=True)
    for line in pruned.warnings:
        click.echo(terminal_safe(line), err=True)
    if dry_run:
        _say("would remove", pruned.removed, "would_remove", as_json)
        return
    _say("removed", pruned.removed, "pruned", as_json, pruned.kept)
    if kept is not None:
        raise kept


def _confirm(with_work: list[Leftover]) -> bool:
    """Whether the user on the terminal says the leftovers holding unmerged work may go."""
    from strawpot.model.display import terminal_safe

    click.echo("these leftovers hold work no other branch has:", err=True)
    for left in with_work:
        click.echo(terminal_safe(f"  {left.describe()}"), err=True)
    return click.confirm("Delete them?", default=False, err=True)


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


def _show(record: RunRecord, as_json: bool, sessions_root: Path) -> None:
    from orchestrator import questions
    from orchestrator.orphans import owner_alive
    from strawpot.commands._run_summary import summary
    from strawpot.model.display import terminal_safe

    if as_json:
        print_json(record.to_dict())
        return
    lines = summary(record, questions.questions(sessions_root / record.run_id), owner_alive(record))
    click.echo(terminal_safe("\n".join(lines)))  # a record's text is anyone's: no escape sequence reaches the terminal


def _answer(sessions_root: Path, run_id: str | None, answer: tuple[str, ...]) -> None:
    from orchestrator.run_control import answer as answer_question
    from strawpot.model.errors import UsageError

    if not run_id or len(answer) != 2:
        raise UsageError("sessions answer needs RUN_ID QUESTION TEXT",
                         hint=f"`strawpot sessions show {run_id or 'RUN_ID'}` lists its questions")
    answer_question(sessions_root, run_id, answer[0], answer[1], "cli")
    click.echo(f"answered question {answer[0]} of run {run_id}", err=True)
