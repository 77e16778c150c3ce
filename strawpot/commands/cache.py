"""`strawpot cache dir|clean|prune`: where the download cache is, and emptying it."""

from __future__ import annotations

import shutil
from pathlib import Path

import rich_click as click

SECTION = "other"

# Folders of the cache that hold what is had again on request: the registry's answers, the parses of strawpot.lock
# and strawpot.toml files that tree, why and list keep (strawpot.model.toml_text). Archives are kept by prune.
_REFETCHABLE = ("metadata-v1", "parsed-toml")


@click.group()
def command() -> None:
    """The download cache (archives by sha256, registry answers with their ETags); $STRAWPOT_CACHE_DIR moves it."""


@command.command("dir")
def show_dir() -> None:
    """Print the cache folder."""
    from strawpot.config_files import cache_dir

    click.echo(str(cache_dir()))


@command.command("clean")
def clean() -> None:
    """Remove everything in the cache (the next install downloads again)."""
    from strawpot.config_files import cache_dir

    root = cache_dir()
    size = _size(root)
    if root.exists():
        shutil.rmtree(root)
    click.echo(f"Removed {root} ({_human(size)})", err=True)


@command.command("prune")
def prune() -> None:
    """Remove cached registry answers and leftover temporary files; keep the verified archives (packs merged)."""
    from strawpot.config_files import cache_dir

    root = cache_dir()
    freed = 0
    for name in _REFETCHABLE:
        folder = root / name
        freed += _size(folder)
        if folder.exists():
            shutil.rmtree(folder)
    if root.exists():
        for leftover in root.rglob(".tmp-*"):
            freed += _size(leftover)
            leftover.unlink(missing_ok=True)
        from hub_client import Cache

        freed += Cache(root).merge_packs()  # archive packs are never changed, so they only accumulate
    click.echo(f"Pruned {root} ({_human(freed)} freed)", err=True)


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def _human(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB"):
        if value < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"
