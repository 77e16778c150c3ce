"""`strawpot why KIND SLUG`: the chains of dependencies from strawpot.toml to a locked package."""

from __future__ import annotations

from pathlib import Path

import rich_click as click

from strawpot.commands._complete import complete_kind
from strawpot.commands._options import project_options

SECTION = "packages"


@click.command()
@click.argument("kind", shell_complete=complete_kind)
@click.argument("slug")
@project_options
def command(kind: str, slug: str, is_global: bool, project: Path | None, as_json: bool) -> None:
    """Show every path from a requirement in strawpot.toml to the package KIND SLUG (a step a role's `*` makes
    is marked (via *))."""
    from strawpot.commands._install_output import parse_kind
    from strawpot.install.queries import load_roots, locked_project, roots_of, why, wildcard_edges
    from strawpot.model.errors import UsageError

    the_kind = parse_kind(kind)
    the_project, lock = locked_project(project, is_global)
    from strawpot.commands._install_output import note_stale_lock

    note_stale_lock(the_project, lock)
    if lock.get(the_kind, slug) is None:
        raise UsageError(f"{the_kind.value} {slug} is not in {the_project.lock_path.name}")
    paths = why(lock, roots_of(lock, load_roots(the_project.manifest_path)), (the_kind, slug),
                wildcard_edges(lock, the_project.tree_root))
    if as_json:
        from strawpot.commands._options import print_json

        print_json({"command": "why", "package": {"kind": the_kind.value, "name": slug}, "paths": [
            [{"kind": p.kind.value, "name": p.name, "version": p.version, "spec": spec} for p, spec in path]
            for path in paths
        ]})
        return
    from strawpot.console import out_console

    for path in paths:
        steps = []
        for i, (pkg, spec) in enumerate(path):
            via = f" ({spec})" if i and spec not in ("*", "") else ""
            steps.append(f"{pkg.kind.value} {pkg.name} {pkg.version}{via}")
        suffix = "  (in strawpot.toml)" if len(path) == 1 else ""
        out_console.line(" → ".join(steps) + suffix, highlight=False)  # to a pipe without rich
