"""`config set`: write one setting into strawpot.toml or the global config, keeping comments, order and mode."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.items import Table

from strawpot.model.errors import UsageError
from strawpot.model.fs import atomic_write, read_own_text
from strawpot.model.settings import SCHEMA, check, from_text
from strawpot.model.suggest import did_you_mean


def set_value(path: Path, key: str, text: str, *, is_global: bool) -> None:
    """Set dotted `key` to `text` (parsed by the key's type) in the TOML file at `path`."""
    parts = key.split(".")
    if key in SCHEMA:
        where = "strawpot config set"
        value: Any = check(SCHEMA[key], from_text(SCHEMA[key], text, where), where)
        value = list(value) if isinstance(value, tuple) else value
    elif len(parts) >= 3 and (parts[0] == "agents" or parts[:3:2] in (["skills", "env"], ["integrations", "env"])) and all(parts):
        if parts[2] == "env" and not is_global:
            raise UsageError(f"{key}: an agent's environment values are secrets and live in the global config only",
                             hint=f"run `strawpot config set --global {key} VALUE`")
        if parts[2] == "env" and len(parts) != 4:
            raise UsageError(f"{key}: name one variable, as agents.NAME.env.VAR")
        value = text if parts[2] == "env" else _toml_value(text)
    else:
        suggestion = did_you_mean(key, SCHEMA, show="'{}'")
        raise UsageError(f"unknown setting {key!r}" + (f" ({suggestion})" if suggestion else ""),
                         hint="`strawpot config show` lists every setting")
    document = _load(path)
    table: Any = document
    for depth, name in enumerate(parts[:-1]):
        current: Any = table.get(name)
        if isinstance(current, str) and depth == 1 and parts[0] == "agents":
            current = _requirement_table(current)  # `name = "^1"` keeps its version when it gains settings
            table[name] = current
        elif current is None:
            current = tomlkit.table()
            table[name] = current
        elif not isinstance(current, dict):
            raise UsageError(f"{path}: cannot set {key}: {name!r} there is not a table")
        table = current
    table[parts[-1]] = value
    mode = (path.stat().st_mode & 0o777) if path.exists() else None
    atomic_write(path, tomlkit.dumps(document), mode=0o600 if is_global else (mode or 0o644))


def _load(path: Path) -> tomlkit.TOMLDocument:
    try:
        return tomlkit.parse(read_own_text(path))
    except FileNotFoundError:
        return tomlkit.document()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read it: {exc}") from None
    except tomlkit.exceptions.ParseError as exc:
        raise UsageError(f"{path}: invalid TOML at line {exc.line}, column {exc.col}", hint="fix the file first") from None


def _requirement_table(spec: str) -> Table:
    table = tomlkit.table()
    table["version"] = spec
    return table


def _toml_value(text: str) -> Any:
    """An agent param as TOML reads it (`true`, `3`, `0.5`, `"x"`, `[1, 2]`), else the text itself."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text

