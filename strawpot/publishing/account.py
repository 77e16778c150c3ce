"""The registry calls behind login, whoami and yank, with hub errors mapped to exit codes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from strawpot.model.errors import StrawpotError, UsageError

if TYPE_CHECKING:
    from strawpot.registry_choice import Registry


def check_token(registry: Registry) -> dict[str, Any]:
    """The `whoami` answer for the registry's token, or an error saying the registry refused it."""
    import hub_client as hc
    from strawpot.hub import hub_errors, open_client, refuse_non_registry
    from strawpot.publishing.auth import login_hint

    url = registry.url
    with open_client(registry) as client, hub_errors(url):
        try:
            user = client.whoami()
        except hc.NotFound:
            refuse_non_registry(client)
            raise
        except hc.AuthError as exc:
            raise StrawpotError(
                f"the registry {url} refused the token (HTTP {exc.status}): {exc.message}", hint=login_hint(url)
            ) from None
    if not isinstance(user.get("handle"), str) or not user["handle"]:
        raise StrawpotError(f"the registry {url} answered whoami without a user handle: {str(user)[:200]!r}")
    return user


def yank(registry: Registry, kind: str, slug: str, version: str, *, yanked: bool) -> dict[str, Any]:
    """Yank (or restore) one version; the server's answer `{kind, slug, version, yanked}`."""
    import hub_client as hc
    from resolver import InvalidVersion, Version
    from strawpot.hub import hub_errors, open_client, refuse_non_registry
    from strawpot.model.kinds import Kind
    from strawpot.model.package import slug_error

    try:
        kind_value = Kind.parse(kind)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if err := slug_error(slug):
        raise UsageError(err)
    try:
        version = str(Version.parse(version))
    except InvalidVersion as exc:
        raise UsageError(str(exc)) from None
    what = f"{kind_value.value} {slug} {version}"
    url = registry.url
    with open_client(registry) as client, hub_errors(url):
        try:
            result = client.yank(kind_value.value, slug, version, yanked)
        except hc.NotFound as exc:
            refuse_non_registry(client)
            raise UsageError(f"{what} is not on {url}: {exc.message}") from None
        except hc.AuthError as exc:
            raise StrawpotError(
                f"the registry {url} refused to {'yank' if yanked else 'restore'} {what} (HTTP {exc.status}): {exc.message}"
            ) from None
    if result.get("yanked") is not yanked:
        raise StrawpotError(
            f"the registry {url} did not confirm that {what} is {'yanked' if yanked else 'restored'}: "
            f"it answered {str(result)[:200]!r}"
        )
    # what we asked for is what is reported: the server's echo must not rename the package on screen
    return {**result, "kind": kind_value.value, "slug": slug, "version": version, "yanked": yanked}
