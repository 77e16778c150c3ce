"""`strawpot verify`: check every installed file against the hashes in strawpot.lock, and its signers offline."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import rich_click as click

from strawpot.commands._options import project_options
from strawpot.model.plural import count

if TYPE_CHECKING:
    from strawpot.config_files import Project
    from strawpot.install.provenance_kept import Signers
    from strawpot.model.lockfile import Lockfile

SECTION = "packages"


@click.command()
@project_options
def command(is_global: bool, project: Path | None, as_json: bool) -> None:
    """Hash every installed file and compare it with strawpot.lock, the lock's agent tools with each agent's own
    AGENT.md, and each locked signer and log index with what installs kept in the cache folder (no network);
    exit 5 listing what differs."""
    from strawpot.install.queries import locked_project
    from strawpot.model.errors import IntegrityFailure
    from strawpot.model.installed import InstalledTree

    the_project, lock = locked_project(project, is_global)
    from strawpot.commands._install_output import note_stale_lock

    note_stale_lock(the_project, lock)
    from strawpot.install.tools import lock_tool_mismatches

    tree = InstalledTree(the_project.tree_root)
    problems = tree.verify(lock, deep=True) + lock_tool_mismatches(tree, lock)
    signers = _signers(the_project, lock)
    if as_json:
        from strawpot.commands._options import print_json

        print_json({"command": "verify", "ok": not problems, "packages": len(lock.packages),
                    "signers": signers.as_dict(), "problems": [
            {"kind": p.kind.value, "name": p.name, "path": p.path, "problem": p.problem, "source": p.source}
            for p in problems
        ]})
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
        from strawpot.console import err_console

        files = sum(len(p.files) for p in lock.packages)
        tree = InstalledTree(the_project.tree_root)
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
    from strawpot.config_files import cache_dir, load_settings
    from strawpot.install.provenance_kept import verify_signers

    log_key = load_settings(project, {}).get("install.log_key")
    return verify_signers(lock.packages, cache_dir(), log_key if isinstance(log_key, str) else None)
