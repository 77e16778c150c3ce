"""`strawpot registry serve|token create`: run the embedded reference registry and mint its tokens."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import rich_click as click

if TYPE_CHECKING:
    from registry_server import SQLiteStorage

SECTION = "registry"
DEFAULT_DATA = Path("registry-data")

data_option = click.option(
    "--data", "data_dir", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_DATA, show_default=True,
    help="Data folder: SQLite database and blob store (created on first use).",
)


@click.group()
def command() -> None:
    """Run the reference registry (StrawHub API v1 + extensions) on SQLite and a blob folder."""


@command.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8787, show_default=True, type=click.IntRange(0, 65535),
              help="Port to listen on (0 picks a free one).")
@data_option
@click.option("--rate-limit", default=200.0, show_default=True, type=click.FloatRange(min=0),
              help="Requests per second per client address (bursts of twice that); 0 turns limiting off.")
@click.option("--quiet", "-q", is_flag=True, help="No access log (one line per request on stderr).")
def serve(host: str, port: int, data_dir: Path, rate_limit: float, quiet: bool) -> None:
    """Serve the registry until interrupted (Ctrl-C stops it cleanly, exit 0); prints its URL on stderr once
    listening, then one line per request unless --quiet."""
    from registry_server.server import serve as run
    from strawpot.model.errors import StrawpotError

    _check_listen(host, port)  # before the data folder is created: a busy port leaves nothing behind
    _open_storage(data_dir).close()
    try:
        run(host, port, data_dir, rate_limit=rate_limit, access_log=not quiet)
    except KeyboardInterrupt:  # uvicorn shut down gracefully, then re-raised the signal it caught
        click.echo("registry stopped", err=True)
    except SystemExit as exc:  # uvicorn exits 3 when it cannot start; 3 means "resolution conflict" here
        if exc.code in (0, None):
            raise
        raise StrawpotError(f"the registry could not start on {host}:{port} (see the message above)") from None


def _check_listen(host: str, port: int) -> None:
    """Fail with one line if `host:port` cannot be listened on (unknown host, port in use, no permission)."""
    import socket

    from strawpot.model.errors import StrawpotError, UsageError

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise UsageError(f"--host {host!r}: {exc.strerror}") from None
    family, kind, proto, _name, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
        try:
            probe.bind(address)
        except OSError as exc:
            raise StrawpotError(
                f"cannot listen on {host}:{port}: {exc.strerror}",
                hint="pick another --port (0 picks a free one), or stop what is using it",
            ) from None


def _open_storage(data_dir: Path) -> SQLiteStorage:
    import sqlite3

    from registry_server import SQLiteStorage
    from strawpot.model.errors import UsageError

    try:
        return SQLiteStorage(data_dir)
    except (OSError, sqlite3.Error) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise UsageError(f"--data {data_dir}: cannot use it as the registry's data folder: {reason}") from None


@command.group()
def token() -> None:
    """Manage API tokens (stored only as their SHA-256)."""


@token.command("create")
@click.option("--user", "handle", required=True, help="User handle; the user is created if needed.")
@click.option("--admin", is_flag=True, help="Give the user the admin role.")
@data_option
def create(handle: str, admin: bool, data_dir: Path) -> None:
    """Create a token for USER and print it once (it cannot be shown again)."""
    from registry_server import create_token
    from strawpot.model.errors import UsageError
    from strawpot.model.package import slug_error

    if err := slug_error(handle):
        raise UsageError(f"--user: {err.replace('slug', 'handle')}")
    storage = _open_storage(data_dir)
    try:
        click.echo(create_token(storage, handle, admin=admin))
    finally:
        storage.close()


@token.command("list")
@data_option
def list_tokens(data_dir: Path) -> None:
    """List the stored tokens: an id (the start of the token's SHA-256), the user, when it was made."""
    import datetime

    storage = _open_storage(data_dir)
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
@data_option
def revoke(token_id: str, data_dir: Path) -> None:
    """Revoke a token by the id `registry token list` shows (or by the token itself); requests with it get 401."""
    from registry_server.auth import hash_token
    from strawpot.model.errors import UsageError

    storage = _open_storage(data_dir)
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
