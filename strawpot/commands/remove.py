"""`strawpot remove KIND SLUG...`: `strawpot uninstall` under the name uv users type."""

from __future__ import annotations

from strawpot.commands._alias import alias_with_packages
from strawpot.commands.uninstall import command as uninstall

SECTION = "packages"

command = alias_with_packages(
    uninstall, "remove", "uninstall", "Remove packages from strawpot.toml (alias of uninstall).")
