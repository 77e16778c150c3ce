"""`strawpot registry`: run the reference registry (or a mirror of another) and look after its storage."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import rich_click as click

from strawpot.model.plural import count

if TYPE_CHECKING:
    from registry_server.mirror.opening import UpstreamSpec
    from registry_server.storage.backends import StorageSpec
    from registry_server.storage.sql import SQLStorage
    from strawpot.model.settings import Settings

SECTION = "registry"
DEFAULT_DATA = Path("registry-data")
F = TypeVar("F", bound=Callable[..., Any])


def storage_options(func: F) -> F:
    """--data, --database, --blobs, --s3-endpoint: where the registry keeps its metadata and its files."""
    options = [
        click.option("--data", "data_dir", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_DATA,
                     show_default=True,
                     help="Data folder: SQLite database and blob store (created on first use) when --database "
                          "and --blobs are not given."),
        click.option("--database", metavar="URL", default=None,
                     help="PostgreSQL for metadata instead of SQLite: postgresql://USER[:PASSWORD]@HOST[:PORT]/DB "
                          "(or a password in ~/.pgpass / PGPASSWORD). Needs `pip install 'strawpot[postgres]'`."),
        click.option("--blobs", metavar="URL", default=None,
                     help="An S3 bucket for files instead of <data>/blobs: s3://BUCKET[/PREFIX] (credentials from "
                          "the usual AWS_* variables or files). Needs `pip install 'strawpot[s3]'`."),
        click.option("--s3-endpoint", metavar="URL", default=None,
                     help="The S3 server to use instead of AWS (MinIO, Ceph, a test server)."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _spec(data_dir: Path, database: str | None, blobs: str | None, s3_endpoint: str | None) -> StorageSpec:
    from registry_server.storage.backends import StorageSpec
    from strawpot.model.errors import UsageError

    if s3_endpoint and not blobs:
        raise UsageError("--s3-endpoint needs --blobs s3://BUCKET[/PREFIX]")
    return StorageSpec(data_dir, database, blobs, s3_endpoint)


@click.group()
def command() -> None:
    """Run the reference registry (StrawHub API v1 + extensions): SQLite and a blob folder by default,
    PostgreSQL and an S3 bucket for several workers or hosts."""


@command.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8787, show_default=True, type=click.IntRange(0, 65535),
              help="Port to listen on (0 picks a free one).")
@storage_options
@click.option("--rate-limit", default=200.0, show_default=True, type=click.FloatRange(min=0),
              help="Requests per second per client address (bursts of twice that); 0 turns limiting off.")
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1, 64),
              help="Server processes sharing the port (uvicorn's process manager).")
@click.option("--access-log", is_flag=True, help="One line per request on stderr (client, method, path, status).")
@click.option("--quiet", "-q", is_flag=True, hidden=True)  # the default since the access log became opt-in
@click.option("--public-url", metavar="URL", default=None,
              help="The address clients reach this registry at, shown in the pages' install hints "
                   "(default: [registry] public_url; without one the hint is left out, never taken from Host).")
@click.option("--allow-ranges/--no-allow-ranges", default=None,
              help="Take dependency ranges (^1.0, >=1) in published packages, which StrawHub refuses (default: "
                   "[registry] allow_ranges, off: only 'slug', 'slug==X.Y.Z' and '*').")
@click.option("--upstream", "upstreams", metavar="URL", multiple=True,
              help="Stand in front of this registry (a mirror; repeat for several, asked in order): names this "
                   "registry holds or reserves are served from it alone, any other is fetched from upstream and "
                   "cached (default: [registry] upstream).")
@click.option("--upstream-ttl", metavar="SECONDS", type=click.FloatRange(min=0), default=None,
              help="Seconds a mirror trusts a package's versions fetched from upstream before asking again; "
                   "archives are kept for good (default: [registry] upstream_ttl, 300).")
@click.option("--upstream-deadline", metavar="SECONDS", type=click.FloatRange(min=0.1), default=10.0,
              show_default=True,
              help="Seconds one request to upstream may take, a slow drip included; past it the cache answers "
                   "(or a 503 when it has nothing).")
@click.option("--require-signatures/--no-require-signatures", default=None,
              help="Refuse publishes without a signed statement (default: [registry] require_signatures, off).")
@click.option("--upstream-cache-max", metavar="SIZE", default=None,
              help="Most bytes of archives a mirror keeps from upstream, least recently used out first: 500M, 20G "
                   "(default: no bound).")
def serve(host: str, port: int, data_dir: Path, database: str | None, blobs: str | None, s3_endpoint: str | None,
          rate_limit: float, workers: int, access_log: bool, quiet: bool, public_url: str | None,
          allow_ranges: bool | None, upstreams: tuple[str, ...], upstream_ttl: float | None,
          upstream_deadline: float, upstream_cache_max: str | None, require_signatures: bool | None) -> None:
    """Serve the registry until interrupted (Ctrl-C stops it cleanly, exit 0); prints its URL on stderr once
    listening, then only problems (--access-log: a line per request too).

    Refuses (exit 2) a database whose schema is older or newer than this version's: run `registry migrate`."""
    from registry_server.server import serve as run
    from strawpot.commands._listen import bound_socket
    from strawpot.model.errors import StrawpotError

    spec = _spec(data_dir, database, blobs, s3_endpoint)
    public = _public_url(public_url)
    settings = _serve_settings(allow_ranges=allow_ranges, require_signatures=require_signatures)
    ranges = bool(settings.get("registry.allow_ranges"))
    upstream = _upstream(upstreams, upstream_ttl, upstream_deadline, upstream_cache_max, spec)
    bound_socket(host, port).close()  # before the data folder is created: a busy port leaves nothing behind
    _open_storage(spec).close()
    try:
        run(host, port, spec, rate_limit=rate_limit, workers=workers, access_log=access_log and not quiet,
            public_url=public, allow_ranges=ranges, upstream=upstream,
            require_signatures=bool(settings.get("registry.require_signatures")))
    except KeyboardInterrupt:  # uvicorn shut down gracefully, then re-raised the signal it caught
        click.echo("registry stopped", err=True)
    except SystemExit as exc:  # uvicorn exits 3 when it cannot start; 3 means "resolution conflict" here
        if exc.code in (0, None):
            raise
        raise StrawpotError(f"the registry could not start on {host}:{port} (see the message above)") from None


def _serve_settings(*, public_url: str | None = None, allow_ranges: bool | None = None,
                    upstream: tuple[str, ...] = (), upstream_ttl: float | None = None,
                    require_signatures: bool | None = None) -> Settings:
    """The settings `registry serve` reads (the global config, env and its flags; no project file)."""
    from strawpot.config_files import load_settings

    return load_settings(None, {"registry.public_url": ("--public-url", public_url),
                                "registry.allow_ranges": ("--allow-ranges", allow_ranges),
                                "registry.upstream": ("--upstream", upstream or None),
                                "registry.upstream_ttl": ("--upstream-ttl", upstream_ttl),
                                "registry.require_signatures": ("--require-signatures", require_signatures)})


def _upstream(urls: tuple[str, ...], ttl: float | None, deadline: float, cache_max: str | None,
              spec: StorageSpec) -> UpstreamSpec | None:
    """What `--upstream*` (or the settings) ask for; None when no upstream is named."""
    from urllib.parse import urlsplit

    from registry_server.mirror.opening import UpstreamSpec
    from strawpot.model.errors import UsageError

    settings = _serve_settings(upstream=urls, upstream_ttl=ttl)
    named = tuple(str(u).rstrip("/") for u in settings.get("registry.upstream") or ())
    for url in named:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
            raise UsageError(f"{settings.origin('registry.upstream')}: {url!r} is not an http(s)://HOST[:PORT] address")
    if not named:
        if cache_max is not None:
            raise UsageError("--upstream-cache-max needs --upstream URL")
        return None
    if spec.blobs is not None and not spec.blobs.rstrip("/").removeprefix("s3://").count("/"):
        raise UsageError(f"--blobs {spec.blobs}: a mirror needs a prefix (s3://BUCKET/PREFIX), so that its cache "
                         "(PREFIX-upstream) lives apart from the registry's own blobs")
    return UpstreamSpec(named, ttl=float(settings.get("registry.upstream_ttl")), deadline=deadline,
                        cache_max=_size(cache_max, "--upstream-cache-max"))


def _size(text: str | None, flag: str) -> int | None:
    import re

    from strawpot.model.errors import UsageError

    if text is None:
        return None
    match = re.fullmatch(r"(\d+)\s*([kmgt]?)b?", text.strip().lower())
    if match is None:
        raise UsageError(f"{flag}: {text!r} is not a size (bytes, or a number with K, M, G or T: 500M)")
    number, unit = match.groups()
    power: int = " kmgt".index(unit or " ")
    return int(number) << (10 * power)


def _public_url(flag: str | None) -> str | None:
    """`--public-url`, else the `registry.public_url` setting; a usage error unless it is an http(s) address."""
    from urllib.parse import urlsplit

    from strawpot.model.errors import UsageError

    settings = _serve_settings(public_url=flag)
    value = settings.get("registry.public_url")
    if not value:
        return None
    parts = urlsplit(str(value))
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise UsageError(f"{settings.origin('registry.public_url')}: {value!r} is not an http(s)://HOST[:PORT][/PATH] "
                         "address")
    return str(value).rstrip("/")


@command.command()
@storage_options
def migrate(data_dir: Path, database: str | None, blobs: str | None, s3_endpoint: str | None) -> None:
    """Create or upgrade the registry's schema (each step in one transaction: an interrupted run is re-run)."""
    from registry_server.storage import schema

    spec = _spec(data_dir, database, blobs, s3_endpoint)
    storage = _open_storage(spec, migrate=True)
    storage.close()
    click.echo(f"schema version {schema.LATEST}: {spec.describe()}")


@command.command()
@storage_options
@click.option("--dry-run", is_flag=True, help="List what would be removed, remove nothing.")
@click.option("--grace", default="1h", show_default=True, metavar="DURATION",
              help="Keep blobs younger than this (a publish in flight writes its blobs before its row): 90s, 30m, 1h, 2d.")
@click.option("--upstream-cache-max", metavar="SIZE", default=None,
              help="Also bound a mirror's cache of upstream archives to SIZE (500M, 20G), least recently used out "
                   "first; archives of packages a local package depends on stay.")
def gc(data_dir: Path, database: str | None, blobs: str | None, s3_endpoint: str | None, dry_run: bool,
       grace: str, upstream_cache_max: str | None) -> None:
    """Remove blobs that no version of a live package references (deleted packages' files included); report what a
    mirror's cache of upstream holds, and with --upstream-cache-max what it freed there."""
    from registry_server.gc import collect, parse_duration
    from registry_server.storage.base import StorageUnavailable
    from strawpot.model.errors import StrawpotError, UsageError

    try:
        seconds = parse_duration(grace)
    except ValueError as exc:
        raise UsageError(f"--grace: {exc}") from None
    limit = _size(upstream_cache_max, "--upstream-cache-max")
    spec = _spec(data_dir, database, blobs, s3_endpoint)
    storage = _open_storage(spec)
    try:
        report = collect(storage, grace=seconds, dry_run=dry_run)
        verb = "would remove" if dry_run else "removed"
        for sha in report.removed:
            click.echo(f"{verb} {sha}")
        click.echo(f"{verb} {count(len(report.removed), 'blob')}; kept {report.kept} ({report.young} younger than "
                   f"{grace})")
        _upstream_cache_gc(storage, spec, limit, verb)
    except StorageUnavailable as exc:  # refused or unreachable mid-way: one line, nothing more is removed
        raise StrawpotError(str(exc)) from None
    finally:
        storage.close()


def _upstream_cache_gc(storage: SQLStorage, spec: StorageSpec, limit: int | None, verb: str) -> None:
    """What a mirror's cache holds (nothing is said when it is empty), and what bounding it to `limit` frees."""
    from registry_server.mirror.evict import evict
    from registry_server.mirror.opening import cache_blobs
    from registry_server.mirror.tables import MirrorTables

    tables = MirrorTables(storage)
    held = tables.archives()
    if not held and limit is None:
        return
    dropped = [] if limit is None else evict(tables, cache_blobs(spec), limit, dry_run=verb != "removed")
    for archive in dropped:
        click.echo(f"{verb} upstream archive {archive.kind.value} {archive.slug} {archive.version} "
                   f"({archive.size} bytes)")
    freed = sum(a.size for a in dropped)
    left = sum(a.size for a in held) - freed
    click.echo(f"upstream cache: {verb} {count(len(dropped), 'archive')} ({freed} bytes freed); kept "
               f"{len(held) - len(dropped)} ({left} bytes)")


def _open_storage(spec: StorageSpec, *, migrate: bool = False) -> SQLStorage:
    """The storage, or one line and exit 2 (a bad address, a refused login, a missing bucket, a schema mismatch)."""
    import sqlite3

    from registry_server.storage.backends import open_storage
    from registry_server.storage.base import ConnectFailed, StorageUnavailable
    from registry_server.storage.s3 import BucketMissing
    from registry_server.storage.schema import SchemaMismatch
    from strawpot.model.errors import StrawpotError, UsageError

    try:
        return open_storage(spec, migrate=migrate)
    except (SchemaMismatch, ConnectFailed, BucketMissing, ValueError) as exc:
        raise UsageError(str(exc)) from None
    except StorageUnavailable as exc:
        raise StrawpotError(str(exc)) from None
    except (OSError, sqlite3.Error) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise UsageError(f"--data {spec.data_dir}: cannot use it as the registry's data folder: {reason}") from None


@command.command()
@click.argument("names", metavar="KIND:SLUG", nargs=-1, required=True)
@storage_options
def reserve(names: tuple[str, ...], data_dir: Path, database: str | None, blobs: str | None,
            s3_endpoint: str | None) -> None:
    """Reserve names for this registry's own packages (an admin's command: it reaches the storage): a mirror never
    serves a package of that name from upstream, and publishing it here is allowed. `KIND:SLUG`, e.g. skill:deploy."""
    from registry_server.mirror.tables import MirrorTables
    from strawpot.model.errors import UsageError
    from strawpot.model.kinds import Kind
    from strawpot.model.package import slug_error

    wanted = []
    for name in names:
        kind_text, sep, slug = name.partition(":")
        if not sep:
            raise UsageError(f"{name!r}: give KIND:SLUG, e.g. skill:deploy")
        try:
            kind = Kind.parse(kind_text)
        except ValueError as exc:
            raise UsageError(f"{name!r}: {exc} (give KIND:SLUG, e.g. skill:deploy)") from None
        if err := slug_error(slug):
            raise UsageError(f"{name!r}: {err}")
        wanted.append((kind, slug))
    storage = _open_storage(_spec(data_dir, database, blobs, s3_endpoint))
    try:
        tables = MirrorTables(storage)
        added = [f"{kind.value}:{slug}" for kind, slug in wanted if tables.reserve(kind, slug)]
    finally:
        storage.close()
    click.echo(f"reserved {count(len(added), 'name')}" + (f": {', '.join(added)}" if added else " (all were already)"))


@command.group()
def token() -> None:
    """Manage API tokens (stored only as their SHA-256)."""


@token.command("create")
@click.option("--user", "handle", required=True, help="User handle; the user is created if needed.")
@click.option("--admin", is_flag=True, help="Give the user the admin role.")
@storage_options
def create(handle: str, admin: bool, data_dir: Path, database: str | None, blobs: str | None,
           s3_endpoint: str | None) -> None:
    """Create a token for USER and print it once (it cannot be shown again)."""
    from registry_server import create_token
    from strawpot.model.errors import UsageError
    from strawpot.model.package import slug_error

    if err := slug_error(handle):
        raise UsageError(f"--user: {err.replace('slug', 'handle')}")
    storage = _open_storage(_spec(data_dir, database, blobs, s3_endpoint))
    try:
        click.echo(create_token(storage, handle, admin=admin))
    finally:
        storage.close()


@token.command("list")
@storage_options
def list_tokens(data_dir: Path, database: str | None, blobs: str | None, s3_endpoint: str | None) -> None:
    """List the stored tokens: an id (the start of the token's SHA-256), the user, when it was made."""
    import datetime

    storage = _open_storage(_spec(data_dir, database, blobs, s3_endpoint))
    try:
        tokens = storage.list_tokens()
    finally:
        storage.close()
    if not tokens:
        click.echo("No tokens", err=True)
    for info in tokens:
        made = datetime.datetime.fromtimestamp(info.created_at / 1000, tz=datetime.UTC).strftime("%Y-%m-%d %H:%M:%SZ")
        click.echo(f"{info.hash[:12]}  {info.handle}  {made}")


@token.command("revoke")
@click.argument("token_id", metavar="ID")
@storage_options
def revoke(token_id: str, data_dir: Path, database: str | None, blobs: str | None, s3_endpoint: str | None) -> None:
    """Revoke a token by the id `registry token list` shows (or by the token itself); requests with it get 401."""
    from registry_server.auth import hash_token
    from strawpot.model.errors import UsageError

    storage = _open_storage(_spec(data_dir, database, blobs, s3_endpoint))
    try:
        wanted = hash_token(token_id) if token_id.startswith("sh_") else token_id.lower()
        matches = [t for t in storage.list_tokens() if len(wanted) >= 8 and t.hash.startswith(wanted)]
        if len(matches) != 1:
            raise UsageError(f"{'no' if not matches else 'more than one'} token matches {token_id!r}",
                             hint="give the id `strawpot registry token list` shows (at least 8 characters)")
        storage.revoke_token(matches[0].hash)
    finally:
        storage.close()
    click.echo(f"Revoked token {matches[0].hash[:12]} of {matches[0].handle}", err=True)


@command.group()
def advisory() -> None:
    """Security advisories the registry publishes (`GET /api/v1/advisories`), which `strawpot audit` reports."""


@advisory.command("add")
@click.argument("package", metavar="KIND:SLUG")
@click.argument("affected", metavar="RANGE")
@click.option("--severity", required=True, type=click.Choice(["low", "moderate", "high", "critical"]),
              help="How bad it is; `strawpot audit --fail-on` compares against it.")
@click.option("--summary", required=True, metavar="TEXT", help="One line: what is wrong and what to do.")
@storage_options
def add_advisory(package: str, affected: str, severity: str, summary: str, data_dir: Path, database: str | None,
                 blobs: str | None, s3_endpoint: str | None) -> None:
    """Add an advisory against the versions of KIND:SLUG that RANGE names (a version specifier as in
    dependencies: '<1.2.3', '>=1.0,<1.4', '^0.3'); prints its id."""
    from registry_server.storage.base import Advisory
    from strawpot.model.advisory import MAX_SUMMARY, affected_set
    from strawpot.model.errors import UsageError
    from strawpot.model.kinds import Kind
    from strawpot.model.package import slug_error

    kind_text, _, slug = package.partition(":")
    try:
        kind = Kind.parse(kind_text)
    except ValueError as exc:
        raise UsageError(f"{package!r}: {exc}", hint="name the package as KIND:SLUG, e.g. skill:git-workflow") from None
    if err := slug_error(slug):
        raise UsageError(f"{package!r}: {err}", hint="name the package as KIND:SLUG, e.g. skill:git-workflow")
    try:
        affected_set(affected)
    except ValueError as exc:
        raise UsageError(f"RANGE {affected!r}: {exc}", hint="write a version specifier, e.g. '<1.2.3' or '>=1,<1.4'"
                         ) from None
    text = " ".join(summary.split())
    if not text or len(text) > MAX_SUMMARY:
        raise UsageError(f"--summary must be one line of 1 to {MAX_SUMMARY} characters")
    spec = _spec(data_dir, database, blobs, s3_endpoint)
    storage = _open_storage(spec)
    try:
        if storage.get_package(kind, slug) is None:
            raise UsageError(f"{kind.value} {slug} is not a package of this registry ({spec.describe()})",
                             hint="check the name with `strawpot search`")
        stored = storage.add_advisory(Advisory(kind, slug, affected.strip(), severity, text))
    finally:
        storage.close()
    click.echo(stored.id)
    click.echo(f"Added advisory {stored.id}: {kind.value} {slug} {stored.affected} ({severity})", err=True)
