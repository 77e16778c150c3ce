"""`strawpot validate PATH`: check a package the way the registry will, and summarise it."""

from __future__ import annotations

from pathlib import Path

import rich_click as click

from strawpot.commands._options import json_option
from strawpot.model.plural import count

SECTION = "publishing"


@click.command()
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--run-wrapper", is_flag=True, help="Also run an agent's wrapper `build` with sample arguments.")
@json_option
def command(path: Path, run_wrapper: bool, as_json: bool) -> None:
    """Validate the package at PATH and print a one-line summary, or every problem found."""
    from strawpot.console import err_console, out_console
    from strawpot.model.errors import UsageError
    from strawpot.model.package import Issue, PackageInvalid
    from strawpot.model.package_folder import load_package

    grammar: list[Issue] = []
    try:
        package = load_package(path)
        if grammar := package.published_form_issues():  # what the registry refuses at publish, said before it
            raise PackageInvalid(grammar, where=str(path))
    except PackageInvalid as exc:
        for issue in exc.issues:
            err_console.print(f"[red]✗[/] {issue}", markup=True, highlight=False, soft_wrap=True)
        hint = ("a registry started with `--allow-ranges` takes ranges; StrawHub does not"
                if grammar else None)
        raise UsageError(f"{exc.where or path}: {count(len(exc.issues), 'problem')} found", hint=hint) from None
    if as_json:
        from strawpot.commands._options import print_json

        wrapper = None
        if run_wrapper:
            from strawpot.publishing.wrapper_check import check_wrapper

            built = check_wrapper(package, path if path.is_dir() else path.parent)
            wrapper = {"wrapper": str(built.wrapper), "cmd": list(built.cmd), "cwd": str(built.cwd), "env": built.env}
        from strawpot.model.install_command import remote_note

        warnings = package.warnings()
        print_json({"ok": True, "summary": package.summary(), "install": dict(package.install),
                    "warning": warnings[0] if warnings else None, "warnings": warnings,
                    "install_note": remote_note(package.install), "wrapper_check": wrapper})
        return
    from strawpot.model.install_command import install_lines

    out_console.print(f"ok: {package.summary()}", markup=False)
    for line in install_lines(package.install):
        out_console.print(line, markup=False, highlight=False, soft_wrap=True)
    for warning in package.warnings():
        err_console.print(f"[yellow]warning:[/] {warning}", highlight=False, soft_wrap=True)
    if run_wrapper:
        from strawpot.publishing.wrapper_check import check_wrapper

        out = check_wrapper(package, path if path.is_dir() else path.parent)
        out_console.print(f"wrapper ok: {out.wrapper} build → cmd {out.cmd[0]!r} (+{len(out.cmd) - 1} args), "
                          f"cwd {out.cwd}" + (f", env {', '.join(sorted(out.env))}" if out.env else ""), markup=False)
