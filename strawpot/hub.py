"""The one way commands open a registry client, and the one map from hub errors to exit codes."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from strawpot.model.errors import (
    IntegrityFailure,
    RegistryUnreachable,
    StrawpotError,
    UsageError,
)

if TYPE_CHECKING:
    import httpx

    from hub_client import HubClient
    from strawpot.registry_choice import Registry

# Requests one command keeps in flight to one registry. Over a 50 ms link a cold install of 100
# packages (about 200 requests) takes 2.0 s with 16, 1.5 s with 32 and 1.35 s with 48; on loopback
# they are all alike. 32 keeps a cold install of 100 packages inside the reference server's default
# per-client burst (400 requests), and is a polite number of connections to one host.
CONCURRENCY = 32


def open_client(
    registry: Registry,
    *,
    offline: bool = False,
    transport: httpx.BaseTransport | None = None,
    max_workers: int = CONCURRENCY,
) -> HubClient:
    """A HubClient on the chosen registry (its URL, token and time limits) with the shared download cache;
    `max_workers` requests at once at most. It reads no settings: `registry` was built from them once.

    http:// and https:// go over the standard library's http.client (see hub_client's StdlibTransport).
    """
    from hub_client import Cache, HubClient
    from strawpot import __version__
    from strawpot.config_files import cache_dir

    limits = registry.timeouts
    return HubClient(
        registry.url, token=registry.token, cache=Cache(cache_dir()), offline=offline, transport=transport,
        max_workers=max_workers,
        user_agent=f"strawpot/{__version__} (hub_client)",  # known here: no importlib.metadata lookup (~13 ms)
        timeout=limits.read, request_deadline=limits.request, deadline=limits.deadline,
    )


def refuse_non_registry(client: HubClient) -> None:
    """Raise a UsageError (exit 2) when the client's URL is not a StrawHub registry's root: its package list
    answers 404, or something that is not the API's JSON (a web page). Asked once a package was not found, so
    that a wrong registry path (`.../typo`) is said as such and not as a missing package."""
    import hub_client as hc

    url = client.base_url
    try:
        answer = client.list_packages("skill", limit=1)
    except hc.NotFound:
        why = "answers 404"
    except hc.ProtocolError:
        why = "does not answer with the registry API's JSON"
    except hc.HubError:
        return  # unreachable, refused, offline: not the question asked here
    else:
        if isinstance(answer, dict) and isinstance(answer.get("items"), list):
            return
        why = "does not answer with a package list"
    raise UsageError(f"{url} is not a StrawHub registry: GET {url}/api/v1/skills {why}",
                     hint="name the registry's root, the address of its web pages (e.g. http://127.0.0.1:8787, with no "
                          "path after it), with --registry, STRAWPOT_REGISTRY_URL or [registry] url")


@contextlib.contextmanager
def hub_errors(url: str, *, from_lock: bool = False) -> Iterator[None]:
    """Turn hub_client's exceptions into StrawpotErrors with exit codes and hints; `from_lock`: the registry is
    the one strawpot.lock names (no setting chose one), which may be gone since (a demo's, a moved one)."""
    import hub_client as hc

    try:
        yield
    except hc.DeadlineExceeded as exc:
        setting = (
            "STRAWPOT_HTTP_TIMEOUT or [registry] timeout" if exc.scope == "request"
            else "STRAWPOT_REGISTRY_DEADLINE or [registry] deadline"
        )
        raise RegistryUnreachable(
            f"registry timed out: {exc}", hint=f"the registry answers too slowly; raise the limit with {setting}"
        ) from None
    except hc.RegistryUnreachable as exc:
        raise RegistryUnreachable(
            # the client's "could not reach the registry at URL/path: reason", the registry named once
            f"registry unreachable at {str(exc).removeprefix('could not reach the registry at ')}",
            hint=(f"{url} is where strawpot.lock's packages came from (no setting names a registry); if it is gone "
                  "or moved, name the one to use with --registry, STRAWPOT_REGISTRY_URL or [registry] url")
            if from_lock else "check the URL (--registry, STRAWPOT_REGISTRY_URL or [registry].url) and your network",
        ) from None
    except hc.OfflineMiss as exc:
        raise RegistryUnreachable(f"offline and not in the cache: {exc}", hint="run once without --offline") from None
    except hc.IntegrityError as exc:
        raise IntegrityFailure(f"integrity failure: {exc}", hint="nothing was written; try again, or report the registry") from None
    except hc.AuthError as exc:
        raise StrawpotError(
            f"not authorised by {url}: {exc}",
            hint=f"log in with `strawpot login --registry {url}` or set STRAWPOT_TOKEN (STRAWPOT_TOKEN_REGISTRY={url} "
                 "sends it to a registry a project file names; a local registry: `strawpot registry token create`)",
        ) from None
    except hc.NotFound as exc:
        raise UsageError(f"not found on {url}: {exc}") from None
    except hc.RateLimited as exc:
        raise StrawpotError(f"rate limited by {url}; retry after {exc.retry_after} s") from None
    except hc.HubError as exc:
        raise StrawpotError(f"registry {url}: {exc}") from None
