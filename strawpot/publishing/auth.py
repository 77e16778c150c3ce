"""Which registry a publishing command talks to, and the token it sends there."""

from __future__ import annotations

from typing import TYPE_CHECKING

from strawpot.model.errors import StrawpotError, UsageError

if TYPE_CHECKING:
    from strawpot.registry_choice import Registry


def registry_for(explicit: str | None) -> Registry:
    """--registry > STRAWPOT_REGISTRY_URL > [registry].url of ./strawpot.toml > config file > StrawHub."""
    from strawpot.model.layout import Project
    from strawpot.registry_choice import choose_registry

    chosen = choose_registry(Project.at(None), explicit)
    if not chosen.url.startswith(("http://", "https://")):
        raise UsageError(f"registry URL {chosen.url!r} must start with http:// or https://")
    return chosen


def login_hint(url: str) -> str:
    return (
        f"log in with `strawpot login --registry {url}` or set STRAWPOT_TOKEN; "
        "for a local registry, create a token with `strawpot registry token create --user NAME --data DIR`"
    )


def require_token(registry: Registry) -> str:
    """The token for `registry` (STRAWPOT_TOKEN when meant for it, else the stored one), or an error saying how to get one."""
    if registry.token:
        return registry.token
    if (why := registry.withheld) is not None:
        raise StrawpotError(f"no token for the registry {registry.url}: {why}",
                            hint=f"to send it there, set STRAWPOT_TOKEN_REGISTRY={registry.url}; or log in with "
                                 f"`strawpot login --registry {registry.url}`")
    raise StrawpotError(f"no token for the registry {registry.url}", hint=login_hint(registry.url))


def store_token(url: str, token: str) -> None:
    """Keep `token` for `url` in the config file (`[tokens]`, mode 0600, written atomically)."""
    from strawpot.config_files import load_config, save_config

    config = load_config()
    tokens = config.get("tokens")
    if not isinstance(tokens, dict):
        tokens = {}
    tokens[url] = token
    config["tokens"] = tokens
    save_config(config)


def forget_token(url: str) -> bool:
    """Remove the stored token for `url`; False when there was none."""
    from strawpot.config_files import load_config, save_config

    config = load_config()
    tokens = config.get("tokens")
    if not isinstance(tokens, dict) or url not in tokens:
        return False
    del tokens[url]
    save_config(config)
    return True
