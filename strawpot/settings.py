"""Where things are: project, installed tree, cache, config file, registry URL and token."""

from __future__ import annotations

import math
import os
import sys
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Registry:
    """The registry a command talks to, and where that choice came from.

    `origin` is "flag" (--registry), "env" (STRAWPOT_REGISTRY_URL), "project" ([registry].url in
    strawpot.toml), "config" (the global config file), "lock" (where strawpot.lock says its packages
    came from) or "default" (the public StrawHub). "project" and "lock" come from files a project
    carries, which whoever wrote the project controls.
    """

    url: str
    origin: str

    @property
    def from_project(self) -> bool:
        return self.origin in ("project", "lock")


def choose_registry(explicit: str | None = None, manifest_url: str | None = None,
                    lock_source: str | None = None) -> Registry:
    """Flag > STRAWPOT_REGISTRY_URL > [registry].url in strawpot.toml > config file > the lock's source > StrawHub."""
    env = os.environ.get("STRAWPOT_REGISTRY_URL")
    config_url = None if explicit or env or manifest_url else _config_registry()
    for url, origin in ((explicit, "flag"), (env, "env"), (manifest_url, "project"), (config_url, "config"),
                        (lock_source, "lock")):
        if url:
            return Registry(str(url).rstrip("/"), origin)
    return Registry(DEFAULT_REGISTRY_URL, "default")


def _config_registry() -> str | None:
    url = load_config().get("registry", {}).get("url")
    return str(url).rstrip("/") if url else None


def _same_registry(a: str, b: str) -> bool:
    return a.strip().rstrip("/").lower() == b.strip().rstrip("/").lower()


def token_registries(chosen: Registry) -> list[str]:
    """The registries STRAWPOT_TOKEN is meant for: the one STRAWPOT_TOKEN_REGISTRY names, else every one
    the user chose outside the project (a flag, STRAWPOT_REGISTRY_URL, the config file's or the default)."""
    scope = os.environ.get("STRAWPOT_TOKEN_REGISTRY")
    if scope:
        return [scope.rstrip("/")]
    homes = [_config_registry() or DEFAULT_REGISTRY_URL]
    if env := os.environ.get("STRAWPOT_REGISTRY_URL"):
        homes.append(env.rstrip("/"))
    if chosen.origin == "flag":
        homes.append(chosen.url)
    return homes


_warned: set[str] = set()
_ORIGINS = {"flag": "--registry", "env": "STRAWPOT_REGISTRY_URL", "project": "strawpot.toml", "config": "the config file",
            "lock": "the source recorded in strawpot.lock", "default": "the default"}


def registry_token(registry: Registry) -> str | None:
    """The token to send to `registry`: STRAWPOT_TOKEN if it is meant for that registry (see
    `token_registries`), else the token `strawpot login` stored for that URL. STRAWPOT_TOKEN withheld
    from a registry a project file named is said once on stderr."""
    env = os.environ.get("STRAWPOT_TOKEN")
    if env:
        if any(_same_registry(home, registry.url) for home in token_registries(registry)):
            return env
        if registry.url not in _warned:
            _warned.add(registry.url)
            named_by = _ORIGINS.get(registry.origin, registry.origin)
            sys.stderr.write(
                f"warning: STRAWPOT_TOKEN is not sent to {registry.url} (named by {named_by}): it is meant for "
                f"{', '.join(token_registries(registry))}; to send it there, set STRAWPOT_TOKEN_REGISTRY={registry.url}\n"
            )
    tokens = load_config().get("tokens", {})
    token = tokens.get(registry.url) if isinstance(tokens, dict) else None
    return token if isinstance(token, str) else None


DEFAULT_REQUEST_TIMEOUT = 120.0
DEFAULT_REGISTRY_DEADLINE = 600.0
# The longest one network wait (connect, or one read) may take, at most the request timeout.
READ_TIMEOUT = 10.0


@dataclass(frozen=True)
class Timeouts:
    """How long registry work may take: `request` seconds for one request (retries and the whole body
    included), `deadline` seconds for everything one command asks of the registry."""

    request: float = DEFAULT_REQUEST_TIMEOUT
    deadline: float = DEFAULT_REGISTRY_DEADLINE

    @property
    def read(self) -> float:
        return min(READ_TIMEOUT, self.request)


_TIMEOUT_KEYS = (("request", "timeout", "STRAWPOT_HTTP_TIMEOUT"), ("deadline", "deadline", "STRAWPOT_REGISTRY_DEADLINE"))


def timeouts(project_registry: Mapping[str, Any] | None = None) -> Timeouts:
    """Defaults < `[registry] timeout/deadline` of the config file < of strawpot.toml < STRAWPOT_HTTP_TIMEOUT /
    STRAWPOT_REGISTRY_DEADLINE. Seconds, a positive number; anything else is a usage error naming its source."""
    values: dict[str, float] = {}
    config = load_config().get("registry", {})
    layers: list[tuple[str, Mapping[str, Any]]] = [(f"[registry] in {config_path()}", config)]
    if project_registry:
        layers.append(("[registry] in strawpot.toml", project_registry))
    for field_name, key, env_name in _TIMEOUT_KEYS:
        for where, table in layers:
            if key in table:
                values[field_name] = _seconds(table[key], f"{where}: {key}")
        if env_name in os.environ:
            values[field_name] = _seconds(os.environ[env_name], env_name)
    return Timeouts(**values)


def _seconds(raw: object, where: str) -> float:
    try:
        value = float(raw) if isinstance(raw, int | float | str) and not isinstance(raw, bool) else math.nan
    except ValueError:
        value = math.nan
    if not (value > 0 and math.isfinite(value)):
        raise UsageError(f"{where} must be a number of seconds above 0, not {raw!r}")
    return value
