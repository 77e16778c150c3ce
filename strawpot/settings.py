"""Where things are: project, installed tree, cache, config file, registry URL and token."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from strawpot.model.errors import UsageError
from strawpot.model.fs import atomic_write
from strawpot.model.layout import Project as Project  # re-exported: commands find the layout here
from strawpot.model.layout import global_root as global_root
from strawpot.model.settings import DEFAULT_REGISTRY_URL as DEFAULT_REGISTRY_URL  # the schema's default

if TYPE_CHECKING:
    from strawpot.model.child_env import EnvPolicy
    from strawpot.model.settings import Settings, Source



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
    """The global config file as data, its settings checked by the settings layer and `[tokens]` by shape."""
    from strawpot.model.settings import layered

    source = _file_source(config_path(), "global")
    if source is None:
        return {}
    layered([source])  # a setting of the wrong type is one line naming file, line and key
    config = dict(source.data)
    tokens = config.get("tokens", {})
    if not isinstance(tokens, dict) or not all(isinstance(v, str) for v in tokens.values()):
        raise UsageError(f'{config_path()}: [tokens] must be a table of "registry URL" = "token" strings',
                         hint="fix or delete it, then `strawpot login` again")
    return config


def save_config(config: dict[str, Any]) -> None:
    import tomlkit

    atomic_write(config_path(), tomlkit.dumps(config), mode=0o600)


def save_config_value(keys: Sequence[str], value: str) -> Path:
    """Set one value of the global config (e.g. agents.NAME.env.VAR) keeping its comments and order; 0600, atomic."""
    from strawpot.model.config_edit import set_value

    path = config_path()
    set_value(path, ".".join(keys), value, is_global=True)
    return path


@dataclass(frozen=True)
class Registry:
    """The registry a command talks to, and where that choice came from.

    `origin` is the settings layer that chose it, "flag" (--registry), "env" (STRAWPOT_REGISTRY_URL),
    "project" ([registry].url in strawpot.toml), "global" (the global config file) or "default" (the public
    StrawHub), or "lock" (where strawpot.lock says its packages came from, when no layer names one). "project" and "lock" come from files a project
    carries, which whoever wrote the project controls.
    """

    url: str
    origin: str
    timeouts: Timeouts | None = None  # from the same settings (None: open_client reads them)


def choose_registry(project: Project | None, explicit: str | None = None, lock_source: str | None = None,
                    *, settings: Settings | None = None) -> Registry:
    """The registry of the settings layer (flag > STRAWPOT_REGISTRY_URL > strawpot.toml > config file), else
    the source strawpot.lock records, else the public StrawHub; with where the choice came from."""
    settings = settings or load_settings(project, {"registry.url": ("--registry", explicit)})
    layer = settings.origin("registry.url").layer
    if layer == "default" and lock_source:
        return Registry(lock_source.rstrip("/"), "lock", timeouts(settings))
    url = str(settings.get("registry.url")).rstrip("/")
    _check_url(url, str(settings.origin("registry.url")))
    return Registry(url, layer, timeouts(settings))


def _check_url(url: str, origin: str) -> None:
    """A URL that is not http(s)://host is a usage error (exit 2), not an unreachable registry (exit 6)."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:
        ok = False
    if not ok:
        raise UsageError(f"registry URL {url!r} (from {origin}) is not an http:// or https:// URL",
                         hint="e.g. --registry https://strawhub.dev or http://127.0.0.1:8080")


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


_ORIGINS = {"flag": "--registry", "env": "STRAWPOT_REGISTRY_URL", "project": "strawpot.toml", "global": "the config file",
            "lock": "the source recorded in strawpot.lock", "default": "the default"}


def registry_token(registry: Registry) -> str | None:
    """The token to send to `registry`: STRAWPOT_TOKEN if it is meant for that registry (see
    `token_registries`), else the token `strawpot login` stored for that URL. A read needs none: a withheld
    STRAWPOT_TOKEN is said only where a token is needed (`withheld_token`)."""
    env = os.environ.get("STRAWPOT_TOKEN")
    if env and any(_same_registry(home, registry.url) for home in token_registries(registry)):
        return env
    tokens = load_config().get("tokens", {})
    token = tokens.get(registry.url) if isinstance(tokens, dict) else None
    return token if isinstance(token, str) else None


def withheld_token(registry: Registry) -> str | None:
    """Why STRAWPOT_TOKEN, though set, is not sent to `registry`, or None when it is sent or not set."""
    if not os.environ.get("STRAWPOT_TOKEN"):
        return None
    homes = token_registries(registry)
    if any(_same_registry(home, registry.url) for home in homes):
        return None
    named_by = _ORIGINS.get(registry.origin, registry.origin)
    return f"STRAWPOT_TOKEN is set but not sent to {registry.url} (named by {named_by}): it is meant for {', '.join(homes)}"


def load_settings(
    project: Project | None = None,
    flags: Mapping[str, tuple[str, Any]] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Settings:
    """Every setting with its origin: defaults < global config < project strawpot.toml < STRAWPOT_* < flags.

    `flags` maps dotted keys to (the flag as typed, its value); a value of None was not given.
    """
    from strawpot.model.settings import SCHEMA, Source, layered

    environ = os.environ if environ is None else environ
    sources = [source for path, layer in ((config_path(), "global"),
                                          (project.manifest_path if project else None, "project"))
               if path is not None and (source := _file_source(path, layer)) is not None]
    env = {name: environ[var] for name, key in SCHEMA.items() if (var := key.env_var) and environ.get(var, "").strip()}
    sources.append(Source("env", "", env))
    sources += [Source("flag", flag, {name: value}) for name, (flag, value) in (flags or {}).items() if value is not None]
    return layered(sources)


def _file_source(path: Path, layer: str) -> Source | None:
    from strawpot.model.settings import Source, key_lines
    from strawpot.model.toml_text import not_utf8, parse_toml

    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(not_utf8(path, exc)) from None
    return Source(layer, str(path), parse_toml(text, path, hint="fix the file"), key_lines(text))


# The longest one network wait (connect, or one read) may take, at most the request timeout.
READ_TIMEOUT = 10.0


@dataclass(frozen=True)
class Timeouts:
    """How long registry work may take: `request` seconds for one request (retries and the whole body
    included), `deadline` seconds for everything one command asks of the registry."""

    request: float
    deadline: float

    @property
    def read(self) -> float:
        return min(READ_TIMEOUT, self.request)


def timeouts(settings: Settings) -> Timeouts:
    """`registry.timeout` and `registry.deadline` of the settings layer."""
    return Timeouts(settings.get("registry.timeout"), settings.get("registry.deadline"))


def env_policy(settings: Settings | None = None) -> EnvPolicy:
    """What package-provided code inherits: `[session] pass_env` and `hide_env`, and the tokens it never sees."""
    from strawpot.model.child_env import EnvPolicy, secret_values

    settings = settings or load_settings()
    tokens = load_config().get("tokens", {})
    return EnvPolicy(tuple(settings.get("session.pass_env")), tuple(settings.get("session.hide_env")),
                     secret_values(os.environ, tokens.values() if isinstance(tokens, dict) else ()))


def ask_wait(settings: Settings) -> float | None:
    """Seconds a question of a run without a terminal waits in the run folder (`[session] ask = "run"`), else None."""
    return float(settings.get("session.ask_timeout")) if settings.get("session.ask") == "run" else None
