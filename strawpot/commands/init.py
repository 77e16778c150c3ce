"""`strawpot init`: a commented strawpot.toml, optionally with the packages a strawhub lockfile or tree installed."""

from __future__ import annotations

import json
from pathlib import Path

import rich_click as click

from strawpot.model import plural
from strawpot.model.errors import UsageError
from strawpot.model.kinds import KIND_ORDER, Kind

SECTION = "packages"

_HEADER = """\
# strawpot.toml: what this project needs. `strawpot add KIND SLUG` adds to it; `strawpot install` locks and
# installs it (strawpot.lock records the exact versions: commit both files).
#
# A requirement is `slug = "specifier"` (`^1.2`, `~1.2.3`, `>=1,<2`, `*`) under its kind's table.
# Settings live in tables of their own ([registry], [orchestrator], [scripts] ...): `strawpot config show
# --origin` lists every one with its value and where it came from.
"""
_ALWAYS_NOTE = """\
# Staged into every agent's workspace, and on its PATH, by `[session] always_stage`: agents delegate, ask,
# remember and recall with `denden`, as the roles published on StrawHub expect. Remove a line to go without.
"""


@click.command()
@click.option("--project", "-p", "project", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Folder to create strawpot.toml in (default: the current folder).")
@click.option("--from-lock", "from_lock", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
              help="Take the requirements from a strawhub (0.1.x) JSON lockfile: its direct installs, as ^VERSION.")
@click.option("--from-tree", "from_tree", type=click.Path(file_okay=False, exists=True, path_type=Path), default=None,
              help="Take them from a folder strawhub installed into (a .strawpot): its lockfile's direct installs, "
                   "and every installed package the lockfile lacks that no other installed package depends on "
                   "(without a lockfile: every such package), as ^VERSION.")
@click.option("--from-strawhub", is_flag=True,
              help="--from-tree on the project's .strawpot when strawhub installed there, else on $STRAWPOT_HOME "
                   "(strawhub's --global root).")
@click.option("--workspace", is_flag=True,
              help="Make this folder a workspace of the packages in it: `[workspace] members` globs for the folders "
                   "that hold SKILL.md, ROLE.md... (for `publish --workspace`, path dependencies, `workspace list`).")
def command(project: Path | None, from_lock: Path | None, from_tree: Path | None, from_strawhub: bool,
            workspace: bool) -> None:
    """Create a commented strawpot.toml here (refused if one exists)."""
    from strawpot.model.folders import home_dir
    from strawpot.model.fs import atomic_write
    from strawpot.model.gitignore import added_note, ignore_tree
    from strawpot.model.layout import MANIFEST_NAME, TREE_DIR
    from strawpot.model.strawhub_install import requirements_from_lock, requirements_from_root

    folder = (project or Path.cwd()).resolve()
    target = folder / MANIFEST_NAME
    if target.exists():
        raise UsageError(f"{target} already exists", hint="edit it, or add packages with `strawpot add KIND SLUG`")
    if sum(bool(x) for x in (from_lock, from_tree, from_strawhub)) > 1:
        raise UsageError("give one of --from-lock FILE, --from-tree DIR and --from-strawhub")
    if from_strawhub:
        from_tree = folder / TREE_DIR if (folder / TREE_DIR).is_dir() else home_dir()
    requirements: dict[Kind, dict[str, str]] = {}
    if from_lock is not None:
        requirements = requirements_from_lock(from_lock)
    elif from_tree is not None:
        requirements = requirements_from_root(from_tree)
    text = _HEADER
    if workspace:
        text += _workspace_table(folder)
    always = [name for name in _always_staged() if name not in requirements.get(Kind.SKILL, {})]
    for kind in KIND_ORDER:
        entries = requirements.get(kind, {})
        text += f"\n[{kind.plural}]\n" + "".join(f"{slug} = {json.dumps(spec)}\n" for slug, spec in entries.items())
        if kind is Kind.SKILL and always:
            text += (_ALWAYS_NOTE + "".join(f"{slug} = \"*\"\n" for slug in always))
    atomic_write(target, text)
    count = sum(len(v) for v in requirements.values())
    source = from_lock or from_tree
    came = f" with {plural.count(count, 'requirement')} from {source}" if source is not None else ""
    click.echo(f"Created {target}{came}", err=True)
    if (ignored := ignore_tree(folder)) is not None:
        click.echo(added_note(ignored), err=True)


def _always_staged() -> list[str]:
    """`[session] always_stage` as the global config and environment set it (the project has no file yet)."""
    from strawpot.config_files import load_settings

    return list(load_settings(None).get("session.always_stage"))


def _workspace_table(folder: Path) -> str:
    """`[workspace]` naming every folder below `folder` that holds a package, one glob per parent folder, with
    the other folders those globs would catch excluded; checked as `workspace list` checks it."""
    import os

    from strawpot.model.workspace import load_workspace

    mains = {kind.main_file for kind in KIND_ORDER}
    packages: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in ("node_modules", "__pycache__"))
        if here != folder and mains & set(filenames):
            packages.append(here)
            dirnames[:] = []  # a package's own folders are its files, not packages
    if not packages:
        raise UsageError(f"no package folders (holding SKILL.md, ROLE.md, AGENT.md...) below {folder}",
                         hint="run `strawpot init --workspace` in the repository that holds the packages")
    parents = sorted({p.parent for p in packages})
    members = [(parent / "*").relative_to(folder).as_posix() for parent in parents]
    exclude = sorted(
        d.relative_to(folder).as_posix() for parent in parents for d in parent.iterdir()
        if d.is_dir() and not d.name.startswith(".") and d not in packages
    )
    table = "\n[workspace]  # the packages of this repository: `strawpot workspace list`\n"
    table += "members = [" + ", ".join(json.dumps(m) for m in members) + "]\n"
    if exclude:
        table += "exclude = [" + ", ".join(json.dumps(x) for x in exclude) + "]\n"
    import tomllib

    load_workspace(folder, tomllib.loads(table))  # duplicate slugs, invalid packages: refused before writing
    return table
