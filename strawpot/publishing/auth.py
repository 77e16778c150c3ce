"""Which registry a publishing command talks to, and the token it sends there."""

from __future__ import annotations

from pathlib import Path

from strawpot.model.errors import StrawpotError, UsageError


def registry_for(explicit: str | None) -> str:
    """--registry > STRAWPOT_REGISTRY_URL > [registry].url of ./strawpot.toml > config file > StrawHub."""
    from strawpot.model.layout import MANIFEST_NAME
    from strawpot.model.manifest import Manifest
    from strawpot.settings import registry_url

    manifest_url = None
    if not explicit:
        try:
            manifest_url = Manifest.load(Path.cwd() / MANIFEST_NAME).registry_url
        except UsageError:
            manifest_url = None  # a broken manifest is not this command's business
    url = registry_url(explicit, manifest_url)
    if not url.startswith(("http://", "https://")):
        raise UsageError(f"registry URL {url!r} must start with http:// or https://")
    return url


def login_hint(url: str) -> str:
    return (
        f"log in with `strawpot login --registry {url}` or set STRAWPOT_TOKEN; "
        "for a local registry, create a token with `strawpot registry token create --user NAME --data DIR`"
    )


def require_token(url: str) -> str:
    """The token for `url` (STRAWPOT_TOKEN, else the stored one), or an error saying how to get one."""
    from strawpot.settings import registry_token

    token = registry_token(url)
    if not token:
        raise StrawpotError(f"no token for the registry {url}", hint=login_hint(url))
    return token


def store_token(url: str, token: str) -> None:
    """Keep `token` for `url` in the config file (`[tokens]`, mode 0600, written atomically)."""
    from strawpot.settings import load_config, save_config

    config = load_config()
    tokens = config.get("tokens")
    if not isinstance(tokens, dict):
        tokens = {}
    tokens[url] = token
    config["tokens"] = tokens
    save_config(config)


def forget_token(url: str) -> bool:
    """Remove the stored token for `url`; False when there was none."""
    from strawpot.settings import load_config, save_config

    config = load_config()
    tokens = config.get("tokens")
    if not isinstance(tokens, dict) or url not in tokens:
        return False
    del tokens[url]
    save_config(config)
    return True
