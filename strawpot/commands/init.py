"""`strawpot init`: a commented strawpot.toml, optionally with the packages a strawhub lockfile installed."""

from __future__ import annotations

import json
from pathlib import Path

import rich_click as click

from strawpot.model.errors import UsageError
from strawpot.model.kinds import KIND_ORDER, Kind

SECTION = "packages"

_HEADER = """\
# strawpot.toml: what this project needs. `strawpot add KIND SLUG` adds to it; `strawpot install` locks and
# installs it (strawpot.lock records the exact versions: commit both files).
#
# A requirement is `slug = "specifier"` (`^1.2`, `~1.2.3`, `>=1,<2`, `*`) under its kind's table.
# Settings live in tables of their own ([registry], [orchestrator], [scripts] ...): see docs/config.md.
"""


@click.command()
@click.option("--project", "-p", "project", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Folder to create strawpot.toml in (default: the current folder).")
@click.option("--from-lock", "from_lock", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
              help="Take the requirements from a strawhub (0.1.x) JSON lockfile: its direct installs, as ^VERSION.")
@click.option("--from-strawhub", is_flag=True,
              help="Take them from the lockfile the strawhub client keeps at $STRAWPOT_HOME/strawpot.lock.")
def command(project: Path | None, from_lock: Path | None, from_strawhub: bool) -> None:
    """Create a commented strawpot.toml here (refused if one exists)."""
    from strawpot.model.fs import atomic_write
    from strawpot.model.layout import MANIFEST_NAME, global_root

    folder = (project or Path.cwd()).resolve()
    target = folder / MANIFEST_NAME
    if target.exists():
        raise UsageError(f"{target} already exists", hint="edit it, or add packages with `strawpot add KIND SLUG`")
    if from_lock and from_strawhub:
        raise UsageError("give --from-lock FILE or --from-strawhub, not both")
    source = from_lock or (global_root() / "strawpot.lock" if from_strawhub else None)
    requirements = _strawhub_requirements(source) if source is not None else {}
    text = _HEADER
    for kind in KIND_ORDER:
        entries = requirements.get(kind, {})
        text += f"\n[{kind.plural}]\n" + "".join(f"{slug} = {json.dumps(spec)}\n" for slug, spec in entries.items())
    atomic_write(target, text)
    count = sum(len(v) for v in requirements.values())
    came = f" with {count} requirement(s) from {source}" if source is not None else ""
    click.echo(f"Created {target}{came}", err=True)


def _strawhub_requirements(path: Path) -> dict[Kind, dict[str, str]]:
    """The direct installs of a strawhub JSON lockfile as {kind: {slug: "^version"}}; refused whole if malformed."""
    from resolver import InvalidVersion, Version
    from strawpot.model.package import slug_error

    if not path.is_file():
        raise UsageError(f"{path}: no strawhub lockfile there", hint="give its path with --from-lock FILE")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"{path}: not a strawhub JSON lockfile: {exc}") from None
    direct = data.get("directInstalls") if isinstance(data, dict) else None
    if not isinstance(direct, list):
        raise UsageError(f"{path}: not a strawhub JSON lockfile (no \"directInstalls\" list)")
    found: dict[Kind, dict[str, str]] = {}
    for index, entry in enumerate(direct):
        where = f"{path}: directInstalls[{index}]"
        if not isinstance(entry, dict):
            raise UsageError(f"{where} is not an object")
        try:
            kind = Kind.parse(str(entry.get("kind")))
        except ValueError as exc:
            raise UsageError(f"{where}: {exc}") from None
        slug, version = entry.get("slug"), entry.get("version")
        if not isinstance(slug, str) or (err := slug_error(slug)):
            raise UsageError(f"{where}: {err if isinstance(slug, str) else 'slug is not a string'}")
        try:
            Version.parse(str(version))
        except InvalidVersion:
            raise UsageError(f"{where}: version {str(version)[:40]!r} is not a version") from None
        found.setdefault(kind, {})[slug] = f"^{version}"
    return found
