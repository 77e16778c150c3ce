"""What the read-only commands do and print: their click commands and the early answer (no click) both call it."""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing is not imported on this path
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path
    from typing import Any

    from orchestrator.run_record import RunRecord
    from strawpot.install.provenance_kept import Signers
    from strawpot.model.installed import InstalledTree
    from strawpot.model.kinds import Kind
    from strawpot.model.layout import Project
    from strawpot.model.lockfile import Lockfile
    from strawpot.model.settings import Settings, Value

BROKEN_SHOWN = 5  # unreadable run records named one a line; the rest counted


def parse_kind(text: str) -> Kind:
    """A package kind as typed on a command line (`skill`, `skills`); a UsageError for anything else."""
    from strawpot.model.errors import UsageError
    from strawpot.model.kinds import Kind

    try:
        return Kind.parse(text)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def note_stale_lock(project: Project, lock: Lockfile) -> None:
    """Say on stderr when strawpot.toml changed since strawpot.lock was written (what is shown is the lock); the
    manifest's parse read back from the cache folder (see `Manifest.read`): a note, never a check."""
    from strawpot.install.queries import lock_is_behind

    if lock_is_behind(project, lock):
        from strawpot.console import err_console

        err_console.line(f"note: {project.manifest_path.name} changed since {project.lock_path.name} was written; "
                         "this shows the lock (update it with `strawpot lock` or `strawpot install`)")


def tree(is_global: bool = False, project: Path | None = None, as_json: bool = False) -> None:
    """`strawpot tree`: the locked dependency tree from the requirements in strawpot.toml."""
    from strawpot.install.queries import load_roots, locked_project, render_tree, roots_of, wildcard_edges
    from strawpot.install.queries import tree as tree_of

    the_project, lock = locked_project(project, is_global, remember=True)
    note_stale_lock(the_project, lock)
    nodes = tree_of(lock, roots_of(lock, load_roots(the_project.manifest_path)),
                    wildcard_edges(lock, the_project.tree_root))
    if as_json:
        from strawpot.commands._json_report import print_json

        print_json({"lock": str(the_project.lock_path), "roots": nodes}, command="tree")
        return
    from strawpot.console import out_console

    for line in render_tree(nodes):
        out_console.line(line, highlight=False)


def why(kind: str, slug: str, is_global: bool = False, project: Path | None = None, as_json: bool = False) -> None:
    """`strawpot why KIND SLUG`: every chain of dependencies from strawpot.toml to a locked package."""
    from strawpot.install.queries import load_roots, locked_project, roots_of, wildcard_edges
    from strawpot.install.queries import why as paths_to
    from strawpot.model.errors import UsageError

    the_kind = parse_kind(kind)
    the_project, lock = locked_project(project, is_global, remember=True)
    note_stale_lock(the_project, lock)
    if lock.get(the_kind, slug) is None:
        raise UsageError(f"{the_kind.value} {slug} is not in {the_project.lock_path.name}")
    paths = paths_to(lock, roots_of(lock, load_roots(the_project.manifest_path)), (the_kind, slug),
                     wildcard_edges(lock, the_project.tree_root))
    if as_json:
        from strawpot.commands._json_report import print_json

        print_json({"package": {"kind": the_kind.value, "name": slug}, "paths": [
            [{"kind": p.kind.value, "name": p.name, "version": p.version, "spec": spec} for p, spec in path]
            for path in paths
        ]}, command="why")
        return
    from strawpot.console import out_console

    for path in paths:
        steps = []
        for i, (pkg, spec) in enumerate(path):
            via = f" ({spec})" if i and spec not in ("*", "") else ""
            steps.append(f"{pkg.kind.value} {pkg.name} {pkg.version}{via}")
        suffix = "  (in strawpot.toml)" if len(path) == 1 else ""
        out_console.line(" → ".join(steps) + suffix, highlight=False)


def installed(kind: str | None = None, is_global: bool = False, project: Path | None = None,
              as_json: bool = False) -> None:
    """`strawpot list [KIND]`: the installed packages, their versions and whether they match strawpot.lock."""
    from strawpot.model.kinds import KIND_ORDER
    from strawpot.model.layout import Project

    kinds = [parse_kind(kind)] if kind else list(KIND_ORDER)
    the_project = Project.at(project, is_global=is_global)
    rows = installed_rows(the_project, kinds)
    if as_json:
        from strawpot.commands._json_report import print_json

        print_json({"remote": False, "packages": rows}, command="list")
        return
    if not rows:
        from strawpot.console import err_console

        err_console.line(f"No packages installed in {the_project.tree_root}")
        return
    columns = ("kind", "name", "version", "status")
    print_table(columns, [[str(row.get(c) or "") for c in columns] for row in rows], pad_edge=False)


def installed_rows(project: Project, kinds: list[Kind]) -> list[dict[str, object]]:
    """A row (kind, name, version, status against the lock) for each installed package of `kinds`."""
    from strawpot.model.installed import InstalledTree
    from strawpot.model.lockfile import Lockfile

    lock = Lockfile.load(project.lock_path, remember=True) if project.lock_path.exists() else None
    if lock is not None:

        note_stale_lock(project, lock)
    rows: list[dict[str, object]] = []
    for pkg in InstalledTree(project.tree_root).packages():
        if pkg.kind not in kinds:
            continue
        locked = lock.get(pkg.kind, pkg.name) if lock else None
        status = "not in lock" if locked is None else ("locked" if locked.version == pkg.version else f"lock has {locked.version}")
        rows.append({"kind": pkg.kind.value, "name": pkg.name, "version": pkg.version, "status": status})
    return rows


def sessions(project: Path | None = None, as_json: bool = False) -> None:
    """`strawpot sessions`: the runs recorded under .strawpot/sessions/, newest first."""
    from orchestrator.run_record import RunRecordBroken, list_runs
    from strawpot.model.layout import Project

    broken: list[RunRecordBroken] = []
    runs = list_runs(Project.at(project).sessions_dir, broken)
    _runs_table(runs, as_json)
    for exc in sorted(broken, key=lambda e: str(e.path))[:BROKEN_SHOWN]:
        sys.stderr.write(f"warning: left out {exc.path}: {exc.reason} (restore it, or remove the run's folder)\n")
    if len(broken) > BROKEN_SHOWN:
        sys.stderr.write(f"warning: left out {len(broken) - BROKEN_SHOWN} more unreadable run records\n")


def _runs_table(runs: list[RunRecord], as_json: bool) -> None:
    from strawpot.commands._run_summary import when, worktree

    if as_json:
        from strawpot.commands._json_report import print_json

        print_json({"sessions": [{k: v for k, v in r.to_dict().items() if k != "agents"} | {"agents": len(r.agents)}
                                 for r in runs]}, command="sessions")
        return
    if not runs:
        sys.stderr.write("no sessions yet (run `strawpot start`)\n")
        return
    rows = []
    for r in runs:
        states = [str(a.state) for a in r.agents]
        agents = ", ".join(f"{n} {s}" for s in dict.fromkeys(states) if (n := states.count(s))) or "0"
        rows.append([r.run_id, when(r.started_at), r.role, str(r.state), "-" if r.exit_code is None else str(r.exit_code),
                     agents, worktree(r.isolation)])
    print_table(("run", "started", "role", "state", "exit", "agents", "worktree"), rows, pad_edge=True)


def print_table(columns: Sequence[str], rows: list[list[str]], *, pad_edge: bool) -> None:
    """A table without borders on stdout: as plain text where rich would print plain text (a pipe or file and
    printable ASCII cells: `plain_table`), else by rich. Cells are anyone's text: made terminal-safe, never markup."""
    from strawpot.model.display import terminal_safe

    cells = [[terminal_safe(cell) for cell in row] for row in rows]
    lines = plain_table(columns, cells, pad_edge=pad_edge) if _plain_stdout() else None
    if lines is not None:
        sys.stdout.write("".join(line + "\n" for line in lines))
        return
    from rich.table import Table
    from rich.text import Text

    from strawpot.console import new_console

    table = Table(*columns, box=None, pad_edge=pad_edge)
    for row in cells:
        table.add_row(*(Text(cell) for cell in row))  # as it is: escape() would double a trailing backslash
    new_console(stderr=False).print(table)


PIPED_WIDTH = 1000  # strawpot.console's width for rich in a pipe: a wider table is rich's to fold


def plain_table(columns: Sequence[str], rows: list[list[str]], *, pad_edge: bool) -> list[str] | None:
    """The lines rich prints for `Table(*columns, box=None, pad_edge=pad_edge)` in a pipe, or None when they could
    differ (a cell that is not printable ASCII, whose width rich measures its own way; wider than a pipe's width).
    tests/commands/test_read_only_table.py holds the two equal."""
    grid = [list(columns), *rows]
    if not all(cell.isascii() and cell.isprintable() for row in grid for cell in row):
        return None
    widths = [max(len(row[i]) for row in grid) for i in range(len(columns))]
    edge = " " if pad_edge else ""
    if sum(widths) + 2 * (len(widths) - 1) + 2 * len(edge) > PIPED_WIDTH:
        return None
    return [edge + "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)) + edge for row in grid]


def _plain_stdout() -> bool:
    """Whether rich would print to stdout as to a file: not a terminal, no forced colour, no COLUMNS."""
    import os

    if os.environ.get("FORCE_COLOR") or os.environ.get("TTY_COMPATIBLE") == "1" or os.environ.get("COLUMNS"):
        return False
    try:
        return not sys.stdout.isatty()
    except (AttributeError, ValueError):
        return True


def verify(is_global: bool = False, project: Path | None = None, as_json: bool = False) -> None:
    """`strawpot verify`: every installed file against strawpot.lock, and the locked signers offline; exit 5 listing
    what differs."""
    from strawpot.install.queries import locked_project
    from strawpot.model.errors import IntegrityFailure
    from strawpot.model.installed import InstalledTree
    from strawpot.model.plural import count

    the_project, lock = locked_project(project, is_global)
    note_stale_lock(the_project, lock)
    tree = InstalledTree(the_project.tree_root)
    problems = tree.verify(lock, deep=True) + tree.tool_mismatches(lock)
    signers = _signers(the_project, lock)
    if as_json:
        from strawpot.commands._json_report import print_json

        print_json({"ok": not problems, "packages": len(lock.packages), "signers": signers.as_dict(), "problems": [
            {"kind": p.kind.value, "name": p.name, "path": p.path, "problem": p.problem, "source": p.source}
            for p in problems
        ]}, command="verify")
    elif problems:
        from strawpot.console import out_console

        for source, title in (("lock", "differs from strawpot.lock:"), ("record", "differs from its install record:")):
            found = [p for p in problems if p.source == source]
            if found:
                out_console.line(title)
            for problem in found:
                out_console.line(f"  {problem}", highlight=False)
    if problems:
        records = sum(1 for p in problems if p.source == "record")
        raise IntegrityFailure(
            f"{count(len(problems) - records, 'difference')} with {the_project.lock_path.name} and {records} "
            f"with install records in {the_project.tree_root}",
            hint="`strawpot sync` reinstalls the locked files and rebuilds what a trusted install script built",
        )
    if not as_json:
        _verified(lock, tree, signers)


def _verified(lock: Lockfile, tree: InstalledTree, signers: Signers) -> None:
    """The summary on stderr of a verify that found nothing to report."""
    from strawpot.console import err_console
    from strawpot.model.plural import count

    files = sum(len(p.files) for p in lock.packages)
    built = [r for p in lock.packages if (r := tree.record(p.kind, p.name)) is not None]
    outputs = sum(len(r.outputs) for r in built)
    matches = f"; {count(outputs, 'built file')} of {count(len(built), 'package')} " + (
        "matches its install record" if outputs == 1 else "match their install records") if built else ""
    err_console.line(f"ok: {count(len(lock.packages), 'package')}, {count(files, 'file')} match the lock{matches}")
    if signers.checked or signers.unsigned:
        err_console.line(f"signers: {count(signers.checked, 'signed version')} checked offline against the lock "
                         f"and the transparency log, {signers.unsigned} unsigned")
    if signers.not_kept:
        from rich.markup import escape

        from strawpot.install.provenance_checks import what

        names = escape(", ".join(what(p) for p in signers.not_kept))
        err_console.print(
            f"[yellow]warning:[/] cannot check the signer of {names} offline: no statement "
            "or log proof is kept in the cache folder (an install that resolves online keeps them)",
            highlight=False, soft_wrap=True)


def _signers(project: Project, lock: Lockfile) -> Signers:
    """The locked signers checked against the cache folder, by `[install] log_key` when set; exit 5 on a mismatch."""
    from strawpot.config_files import cache_dir, setting
    from strawpot.install.provenance_kept import verify_signers

    log_key = setting(project, "install.log_key")
    return verify_signers(lock.packages, cache_dir(), log_key if isinstance(log_key, str) else None)


def config_show(with_origin: bool = False, project: Path | None = None, registry: str | None = None,
                as_json: bool = False) -> None:
    """`strawpot config [show]`: every setting's effective value (and, with --origin, where it came from)."""
    from strawpot import config_files
    from strawpot.model.folders import home_dir
    from strawpot.registry_choice import choose_registry

    the_project = config_files.Project.at(project)
    effective = config_files.load_settings(the_project, {"registry.url": ("--registry", registry)})
    url = effective.get("registry.url")
    paths = {
        "project": str(the_project.dir), "manifest": str(the_project.manifest_path),
        "lock": str(the_project.lock_path), "tree": str(the_project.tree_root),
        "cache_dir": str(config_files.cache_dir()), "global_root": str(home_dir()),
        "config_file": str(config_files.config_path()),
    }
    secret = choose_registry(the_project, settings=effective).token
    token = "set" if secret else "not set"
    token_from = ("" if not secret else "env STRAWPOT_TOKEN" if secret == effective.tokens.env
                  else f"global config {config_files.config_path()}")
    for warning in effective.warnings:
        sys.stderr.write(f"warning: {warning}\n")
    if as_json:
        from strawpot.commands._json_report import print_json

        print_json({"registry_url": url, "registry_url_from": str(effective.origin("registry.url")), "token": token,
                    "settings": [_setting_json(v) for v in _setting_rows(effective)], "paths": paths},
                   command="config show")
        return
    from strawpot.console import out_console

    rows = [(v.key, _setting_text(v), str(v.origin)) for v in _setting_rows(effective)]
    rows += [(f"paths.{k}", v, "") for k, v in paths.items()] + [("registry.token", f"({token})", token_from)]
    width = max(len(key) for key, _, _ in rows)
    for key, value, origin in rows:
        shown = f"{key.ljust(width)} = {value}"
        out_console.line(f"{shown}  ({origin})" if with_origin and origin else shown, highlight=False)


def _setting_rows(effective: Settings) -> list[Value]:
    rows = sorted(effective.values.values(), key=lambda v: v.key)
    for agent in sorted(effective.agents):
        rows += [effective.agents[agent][k] for k in sorted(effective.agents[agent])]
    for key in sorted(effective.env_tables):
        rows += [effective.env_tables[key][k] for k in sorted(effective.env_tables[key])]
    return rows


def _setting_text(value: Value) -> str:
    if ".env." in value.key:
        return "(set)"  # secrets are never printed
    raw = value.value
    if raw is None:
        return "(not set)"
    if isinstance(raw, tuple):
        return "[" + ", ".join(raw) + "]"
    if isinstance(raw, bool):
        return "true" if raw else "false"
    return f"{raw:g}" if isinstance(raw, float) else str(raw)


def _setting_json(value: Value) -> dict[str, Any]:
    raw: Any = "(set)" if ".env." in value.key else value.value
    return {"key": value.key, "value": list(raw) if isinstance(raw, tuple) else raw,
            "layer": value.origin.layer, "origin": str(value.origin)}


BY_COMMAND: dict[str, Callable[..., None]] = {"tree": tree, "why": why, "list": installed, "verify": verify,
                                              "sessions": sessions, "config": config_show, "config show": config_show}
