"""`strawpot add KIND SLUG[SPEC]...`: `strawpot install` with packages, under the name uv users type."""

from __future__ import annotations

from strawpot.commands._alias import alias_with_packages
from strawpot.commands.install import command as install

SECTION = "packages"

command = alias_with_packages(
    install, "add", "install", "Add packages to strawpot.toml and install them (alias of install).")
