"""Where things are: project, installed tree, cache, config file, registry URL and token."""

from __future__ import annotations

import os
import tomllib
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
    path = config_path()
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: invalid config file: {exc}", hint="fix or delete it") from None


def save_config(config: dict[str, Any]) -> None:
    import tomlkit

    atomic_write(config_path(), tomlkit.dumps(config), mode=0o600)


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
