"""The two transports a registry may be spoken to over answer alike: the same requests, sent to a live
`strawpot registry serve` through StdlibTransport (the default) and through httpx's own transport, over
http:// and over https:// (a TLS relay in front of it), give the same results, errors included."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hub_client import Cache, HubClient, HubError
from hub_client._stdlib import StdlibTransport
from tests._live_registry import LiveRegistry, start_registry
from tests._loopback_servers import scripted_server, tls_relay

SKILL = "---\nname: {slug}\ndescription: parity skill {slug}\nversion: {version}\n{deps}---\n# {slug}\n\nBody.\n"


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveRegistry]:
    from strawpot.publishing.prepare import prepare_upload

    tmp = tmp_path_factory.mktemp("parity")
    with start_registry(tmp) as reg, HubClient(reg.url, token=reg.token) as client:
        for slug, version, deps in (("leaf", "1.0.0", ""), ("leaf", "1.1.0", ""),
                                    ("trunk", "2.0.0", "metadata:\n  strawpot:\n    dependencies:\n      - leaf\n")):
            folder = tmp / f"{slug}-{version}"
            folder.mkdir()
            (folder / "SKILL.md").write_text(SKILL.format(slug=slug, version=version, deps=deps), encoding="utf-8")
            (folder / "notes.md").write_bytes(b"x" * 70_000)  # more than one read's worth
            upload = prepare_upload(folder)
            client.publish(upload.kind.value, upload.fields, [(f.path, f.data) for f in upload.files])
        yield reg


def _without_counts(value: Any) -> Any:
    """A display answer without its download counters (the first run's downloads change the second's)."""
    if isinstance(value, dict):
        return {k: _without_counts(v) for k, v in value.items() if "download" not in k.lower()}
    if isinstance(value, list):
        return [_without_counts(v) for v in value]
    return value


def _outcome(work: Callable[[], Any]) -> Any:
    try:
        return work()
    except HubError as exc:
        return (type(exc).__name__, str(exc))


def _session(client: HubClient, token_client: HubClient, cache: Cache) -> dict[str, Any]:
    """Every kind of request the client makes, and what came of each."""
    seen: dict[str, Any] = {}
    seen["versions"] = client.package_versions("skill", "leaf")
    seen["revalidated"] = client.package_versions("skill", "leaf")  # If-None-Match: 304 from the cache
    seen["closure"] = client.closure([("skill", "trunk")])
    seen["unknown"] = _outcome(lambda: client.package_versions("skill", "nope"))
    seen["detail"] = _without_counts(client.detail("skill", "trunk"))
    seen["search"] = _without_counts(client.search("leaf"))
    seen["list"] = _without_counts(client.list_packages("skill"))
    seen["file"] = client.fetch_file("skill", "leaf", "notes.md", "1.1.0")
    seen["missing file"] = _outcome(lambda: client.fetch_file("skill", "leaf", "absent.md", "1.1.0"))
    items = [("skill", "leaf", v.version, v.sha256 or "", v.size) for v in seen["versions"].versions]
    seen["bundle"] = sorted(client.fetch_archive_bundle(items[:1]))
    path = client.fetch_archive(*items[-1])
    seen["archive"] = hashlib.sha256(path.read_bytes()).hexdigest()
    seen["whoami"] = token_client.whoami()
    seen["no token"] = _outcome(client.whoami)
    seen["has batch"] = client.has_batch()
    client.settle_writes()
    files = [p.relative_to(cache.root).parts for p in cache.root.rglob("*") if p.is_file()]
    # metadata is kept per registry URL, which the TLS relay changes
    seen["cache"] = sorted("/".join((*parts[:1], "REGISTRY", *parts[2:]) if parts[0].startswith("metadata") else parts)
                           for parts in files)
    return seen


def _through(url: str, wire: Any, live: LiveRegistry, root: Path) -> dict[str, Any]:
    cache = Cache(root / "cache")
    with HubClient(url, cache=cache, **wire.client()) as client, \
            HubClient(url, token=live.token, **wire.client()) as token_client:
        return _session(client, token_client, cache)


@pytest.fixture(scope="module")
def reference(live: LiveRegistry, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """What the default transport over plain HTTP gets: every wire must get the same."""
    cache = Cache(tmp_path_factory.mktemp("reference") / "cache")
    with HubClient(live.url, cache=cache) as client, HubClient(live.url, token=live.token) as token_client:
        return _session(client, token_client, cache)


def test_every_wire_gives_the_same_answers(live: LiveRegistry, reference: dict[str, Any], wire: Any,
                                           tmp_path: Path) -> None:
    if wire.tls:
        with tls_relay(live.url) as url:
            seen = _through(url, wire, live, tmp_path)
    else:
        seen = _through(live.url, wire, live, tmp_path)
    assert seen == reference
    assert reference["unknown"][0] == "NotFound" and reference["no token"][0] == "AuthError"
    assert reference["closure"] is not None and reference["bundle"] and reference["has batch"] is True


def test_http_and_https_urls_go_through_one_transport() -> None:
    with HubClient("http://127.0.0.1:9") as plain, HubClient("https://hub.example") as tls:
        assert isinstance(plain._http._transport, StdlibTransport)
        assert isinstance(tls._http._transport, StdlibTransport)


@pytest.mark.parametrize("variable", ["HTTP_PROXY", "http_proxy", "ALL_PROXY"])
def test_a_proxy_the_environment_names_carries_the_requests(monkeypatch: pytest.MonkeyPatch, variable: str) -> None:
    # The registry's host does not resolve: only a client that goes through the proxy gets an answer.
    registry = "http://registry.invalid"
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    with scripted_server({f"{registry}/api/v1/search": (200, b'{"results": [], "count": 0}')}) as proxy:
        monkeypatch.setenv(variable, proxy)
        with HubClient(registry, retries=0) as client:
            assert client.search("anything") == {"results": [], "count": 0}
        monkeypatch.setenv("NO_PROXY", "registry.invalid")  # and a host NO_PROXY names is spoken to directly
        with HubClient(registry, retries=0) as client, pytest.raises(HubError):
            client.search("anything")
    monkeypatch.delenv(variable)
    monkeypatch.delenv("NO_PROXY")
    with HubClient(registry) as client:
        assert isinstance(client._http._transport, StdlibTransport)  # no proxy named: the direct transport
