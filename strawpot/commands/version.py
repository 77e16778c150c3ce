"""`strawpot version [PATH] [--bump major|minor|patch] [--set V] [--workspace]`: show or change a package's version."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import rich_click as click

from strawpot.commands._options import json_option, registry_option

if TYPE_CHECKING:
    from strawpot.model.workspace import Member

SECTION = "publishing"


@click.command()
@click.argument("path", required=False, type=click.Path(path_type=Path))
@click.option("--bump", type=click.Choice(["major", "minor", "patch"]), default=None,
              help="Raise the version: 1.4.2 → 2.0.0, 1.5.0 or 1.4.3.")
@click.option("--set", "new_version", metavar="V", default=None, help="Set this exact version.")
@click.option("--workspace", is_flag=True,
              help="Every member; with --bump, those whose files differ from their version on the registry.")
@registry_option
@json_option
def command(path: Path | None, bump: str | None, new_version: str | None, workspace: bool, registry: str | None,
            as_json: bool) -> None:
    """Print the version of the package in PATH (default: this folder), or change it in place.

    Only the `version:` line(s) of the main file's frontmatter change (`metadata.version`, and a top-level
    `version:` if there is one); every other byte stays. With `--workspace --bump`, a member is bumped when
    its version is already on the registry with other files, so the next `publish --workspace` has a new
    version to send; members that are unchanged or not yet published keep theirs.
    """
    from strawpot.model.errors import UsageError

    if bump and new_version:
        raise UsageError("give --bump or --set, not both")
    if workspace and path is not None:
        raise UsageError("give PATH or --workspace, not both")
    members = _members(path, workspace)
    targets: dict[tuple[Any, str], str] = {}
    if workspace and bump:
        # a bumped member changes what its dependents upload (their `^VERSION` pins): bump until nothing more changes
        current = members
        while changed := [m for m in _changed_on_registry(current, registry) if m.key not in targets]:
            for member in changed:
                targets[member.key] = _next(member.package.version, bump, None, member.rel)
                _write_version(member, targets[member.key])
            current = _members(path, workspace)
    elif bump or new_version:
        for member in members:
            targets[member.key] = _next(member.package.version, bump, new_version, member.rel)
            _write_version(member, targets[member.key])
    rows = [{"kind": m.kind.value, "name": m.slug, "path": m.rel, "version": targets.get(m.key, m.package.version),
             "previous": m.package.version if m.key in targets else None} for m in members]
    _report(rows, as_json)


def _members(path: Path | None, workspace: bool) -> list[Member]:
    from strawpot.model.layout import Project
    from strawpot.model.workspace import load_workspace
    from strawpot.publishing.many import load_members

    if workspace:
        return list(load_workspace(Project.at(None).dir).members)
    return load_members([path or Path(".")])


def _next(current: str | None, bump: str | None, exact: str | None, where: str) -> str:
    from resolver import InvalidVersion, Version
    from strawpot.model.errors import UsageError

    if exact is not None:
        try:
            return str(Version.parse(exact.strip()))
        except InvalidVersion as exc:
            raise UsageError(f"--set: {exc}") from None
    if current is None:
        raise UsageError(f"{where}: has no version to bump", hint="set one with `strawpot version --set 1.0.0`")
    v = Version.parse(current)
    if bump == "major":
        return f"{v.major + 1}.0.0"
    if bump == "minor":
        return f"{v.major}.{v.minor + 1}.0"
    return f"{v.major}.{v.minor}.{v.patch if v.prerelease else v.patch + 1}"


def _write_version(member: Member, version: str) -> None:
    from strawpot.model.fs import atomic_write
    from strawpot.publishing.prepare import set_frontmatter_version

    main = member.dir / member.kind.main_file
    text = main.read_bytes().decode("utf-8")
    atomic_write(main, set_frontmatter_version(text, version).encode("utf-8"))


def _changed_on_registry(members: list[Member], registry: str | None) -> list[Member]:
    """The members whose version the registry holds with other files than they would upload now."""
    from strawpot.hub import hub_errors, open_client
    from strawpot.publishing.auth import registry_for
    from strawpot.publishing.many import differing_files, prepare_all

    uploads = prepare_all(members, None)
    chosen = registry_for(registry)
    with open_client(chosen) as client, hub_errors(chosen.url):
        return [m for m, u in zip(members, uploads, strict=True) if differing_files(u, client)]


def _report(rows: list[dict[str, Any]], as_json: bool) -> None:
    from strawpot.commands._options import print_json
    from strawpot.console import out_console

    if as_json:
        print_json({"packages": rows})
        return
    for r in rows:
        change = f"{r['previous']} -> {r['version']}" if r["previous"] else (r["version"] or "(no version)")
        out_console.print(f"{r['kind']} {r['name']} {change}", markup=False, highlight=False)
