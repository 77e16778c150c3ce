"""Which registry a command talks to, where that choice came from, the token it may send there and its time limits."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from strawpot.config_files import Project, load_settings
from strawpot.model.errors import UsageError

if TYPE_CHECKING:
    from strawpot.model.settings import Settings


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
    # the settings it was chosen from, which also say which token may go there (None: read them when asked)
    settings: Settings | None = field(default=None, compare=False, repr=False)


def choose_registry(project: Project | None, explicit: str | None = None, lock_source: str | None = None,
                    *, settings: Settings | None = None) -> Registry:
    """The registry of the settings layer (flag > STRAWPOT_REGISTRY_URL > strawpot.toml > config file), else
    the source strawpot.lock records, else the public StrawHub; with where the choice came from."""
    settings = settings or load_settings(project, {"registry.url": ("--registry", explicit)})
    layer = settings.origin("registry.url").layer
    if layer == "default" and lock_source:
        return Registry(lock_source.rstrip("/"), "lock", timeouts(settings), settings)
    url = str(settings.get("registry.url")).rstrip("/")
    _check_url(url, str(settings.origin("registry.url")))
    return Registry(url, layer, timeouts(settings), settings)


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


def _same_registry(a: str, b: str) -> bool:
    return a.strip().rstrip("/").lower() == b.strip().rstrip("/").lower()


def _settings(registry: Registry) -> Settings:
    return registry.settings if registry.settings is not None else load_settings()


def token_registries(chosen: Registry) -> list[str]:
    """The registries STRAWPOT_TOKEN is meant for: the one STRAWPOT_TOKEN_REGISTRY names, else every one
    the user chose outside the project (a flag, STRAWPOT_REGISTRY_URL, the config file's or the default)."""
    settings = _settings(chosen)
    if settings.tokens.env_scope:
        return [settings.tokens.env_scope]
    user = settings.in_layer("registry.url", "global") or settings.in_layer("registry.url", "default")
    homes = [str(user.value).rstrip("/")] if user is not None else []
    if env := settings.in_layer("registry.url", "env"):
        homes.append(str(env.value).rstrip("/"))
    if chosen.origin == "flag":
        homes.append(chosen.url)
    return homes


_ORIGINS = {"flag": "--registry", "env": "STRAWPOT_REGISTRY_URL", "project": "strawpot.toml", "global": "the config file",
            "lock": "the source recorded in strawpot.lock", "default": "the default"}


def registry_token(registry: Registry) -> str | None:
    """The token to send to `registry`: STRAWPOT_TOKEN if it is meant for that registry (see
    `token_registries`), else the token `strawpot login` stored for that URL. A read needs none: a withheld
    STRAWPOT_TOKEN is said only where a token is needed (`withheld_token`)."""
    tokens = _settings(registry).tokens
    if tokens.env and any(_same_registry(home, registry.url) for home in token_registries(registry)):
        return tokens.env
    return tokens.stored.get(registry.url)


def withheld_token(registry: Registry) -> str | None:
    """Why STRAWPOT_TOKEN, though set, is not sent to `registry`, or None when it is sent or not set."""
    if not _settings(registry).tokens.env:
        return None
    homes = token_registries(registry)
    if any(_same_registry(home, registry.url) for home in homes):
        return None
    named_by = _ORIGINS.get(registry.origin, registry.origin)
    return f"STRAWPOT_TOKEN is set but not sent to {registry.url} (named by {named_by}): it is meant for {', '.join(homes)}"


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
