"""The registry a command talks to, built once from the merged settings: its URL, where that choice came from, the
token it may send there and its time limits (the one value `strawpot.hub.open_client` takes)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from strawpot.config_files import Project, load_settings
from strawpot.model.errors import UsageError

if TYPE_CHECKING:
    from strawpot.model.settings import Settings

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


@dataclass(frozen=True)
class Registry:
    """The registry a command talks to, where that choice came from, the token it may send there and its time
    limits: everything a client needs, so that nothing below the command reads the settings again.

    `origin` is the settings layer that chose it, "flag" (--registry), "env" (STRAWPOT_REGISTRY_URL),
    "project" ([registry].url in strawpot.toml), "global" (the global config file) or "default" (the public
    StrawHub), or "lock" (where strawpot.lock says its packages came from, when no layer names one). "project"
    and "lock" come from files a project carries, which whoever wrote the project controls.
    """

    url: str
    origin: str
    timeouts: Timeouts
    token: str | None = field(default=None, repr=False)  # STRAWPOT_TOKEN if meant for it, else the stored one
    withheld: str | None = None  # why STRAWPOT_TOKEN, though set, is not sent here (None: sent, or not set)

    def with_token(self, token: str) -> Registry:
        """The same registry with a token given on the spot (`strawpot login` checks one before storing it)."""
        return replace(self, token=token, withheld=None)


def choose_registry(project: Project | None, explicit: str | None = None, lock_source: str | None = None,
                    *, settings: Settings | None = None) -> Registry:
    """The registry of the settings layer (flag > STRAWPOT_REGISTRY_URL > strawpot.toml > config file), else
    the source strawpot.lock records, else the public StrawHub; with where the choice came from."""
    settings = settings or load_settings(project, {"registry.url": ("--registry", explicit)})
    layer = settings.origin("registry.url").layer
    if layer == "default" and lock_source:
        return registry_at(registry_root(lock_source), "lock", settings)
    url = registry_root(str(settings.get("registry.url")))
    _check_url(url, str(settings.origin("registry.url")))
    return registry_at(url, layer, settings)


API_PATH = "/api/v1"


def registry_root(url: str) -> str:
    """A registry's root URL as locks record it: no trailing `/`, and no trailing `/api/v1` (the API's own
    path, which the client adds: `http://host/api/v1` names the registry at `http://host`)."""
    url = url.strip().rstrip("/")
    return url[: -len(API_PATH)].rstrip("/") if url.lower().endswith(API_PATH) else url


def registry_at(url: str, origin: str, settings: Settings) -> Registry:
    """`url` (chosen by `origin`) with the token the settings allow to go there and their time limits."""
    homes = token_registries(url, origin, settings)
    meant = any(same_registry(home, url) for home in homes)
    env = settings.tokens.env
    withheld = None
    if env and not meant:
        named_by = _ORIGINS.get(origin, origin)
        withheld = f"STRAWPOT_TOKEN is set but not sent to {url} (named by {named_by}): it is meant for {', '.join(homes)}"
    token = env if env and meant else settings.tokens.stored.get(url)
    return Registry(url, origin, timeouts(settings), token, withheld)


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


def same_registry(a: str, b: str) -> bool:
    """Whether two registry URLs name the same registry (case, a trailing `/` or `/api/v1` aside)."""
    return registry_root(a).lower() == registry_root(b).lower()


def token_registries(url: str, origin: str, settings: Settings) -> list[str]:
    """The registries STRAWPOT_TOKEN is meant for: the one STRAWPOT_TOKEN_REGISTRY names, else every one
    the user chose outside the project (a flag, STRAWPOT_REGISTRY_URL, the config file's or the default)."""
    if settings.tokens.env_scope:
        return [settings.tokens.env_scope]
    user = settings.in_layer("registry.url", "global") or settings.in_layer("registry.url", "default")
    homes = [str(user.value).rstrip("/")] if user is not None else []
    if env := settings.in_layer("registry.url", "env"):
        homes.append(str(env.value).rstrip("/"))
    if origin == "flag":
        homes.append(url)
    return homes


_ORIGINS = {"flag": "--registry", "env": "STRAWPOT_REGISTRY_URL", "project": "strawpot.toml", "global": "the config file",
            "lock": "the source recorded in strawpot.lock", "default": "the default"}
