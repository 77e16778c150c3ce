"""Where things are: project, installed tree, cache, config file, registry URL and token."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from strawpot.model.errors import UsageError
from strawpot.model.fs import atomic_write
from strawpot.model.layout import Project as Project  # re-exported: commands find the layout here
from strawpot.model.layout import global_root as global_root

DEFAULT_REGISTRY_URL = "https://strawhub.dev"


def config_path() -> Path:
    from platformdirs import user_config_dir

    return Path(os.environ.get("STRAWPOT_CONFIG_DIR") or user_config_dir("strawpot")) / "config.toml"


def cache_dir() -> Path:
    env = os.environ.get("STRAWPOT_CACHE_DIR")
    if env:
        return Path(env)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("strawpot"))


def load_config() -> dict[str, Any]:
    """The config file, its shape checked: `[registry] url` a string, `[tokens]` URL = "token" strings."""
    path = config_path()
    try:
        config = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: invalid config file: {exc}", hint="fix or delete it") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the config file: {exc.strerror or exc}") from None
    registry = config.get("registry", {})
    if not isinstance(registry, dict) or not isinstance(registry.get("url", ""), str):
        raise UsageError(f'{path}: [registry] must be a table with url = "https://..."', hint="fix or delete it")
    tokens = config.get("tokens", {})
    if not isinstance(tokens, dict) or not all(isinstance(v, str) for v in tokens.values()):
        raise UsageError(f'{path}: [tokens] must be a table of "registry URL" = "token" strings',
                         hint="fix or delete it, then `strawpot login` again")
    return config


def save_config(config: dict[str, Any]) -> None:
    import tomlkit

    atomic_write(config_path(), tomlkit.dumps(config), mode=0o600)


def save_config_value(keys: Sequence[str], value: str) -> Path:
    """Set one value of the global config (e.g. agents.NAME.env.VAR) keeping its comments and order; 0600, atomic."""
    import tomlkit
    from tomlkit.container import Container
    from tomlkit.items import Table

    path = config_path()
    try:
        doc = tomlkit.parse(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        doc = tomlkit.document()
    table: Container | Table = doc
    for i, key in enumerate(keys[:-1]):
        if key not in table:
            table[key] = tomlkit.table(is_super_table=i < len(keys) - 2)
        child = table[key]
        if not isinstance(child, Table):
            raise UsageError(f"{path}: {'.'.join(keys[:i + 1])} must be a table", hint="fix or delete it")
        table = child
    table[keys[-1]] = value
    atomic_write(path, tomlkit.dumps(doc), mode=0o600)
    return path


def registry_url(explicit: str | None = None, manifest_url: str | None = None) -> str:
    """Flag > STRAWPOT_REGISTRY_URL > [registry].url in strawpot.toml > config file > public StrawHub."""
    url = explicit or os.environ.get("STRAWPOT_REGISTRY_URL") or manifest_url
    if not url:
        url = load_config().get("registry", {}).get("url") or DEFAULT_REGISTRY_URL
    return str(url).rstrip("/")


def registry_token(url: str) -> str | None:
    """STRAWPOT_TOKEN wins; else the token `strawpot login` stored for this registry."""
    env = os.environ.get("STRAWPOT_TOKEN")
    if env:
        return env
    tokens = load_config().get("tokens", {})
    token = tokens.get(url) if isinstance(tokens, dict) else None
    return token if isinstance(token, str) else None
