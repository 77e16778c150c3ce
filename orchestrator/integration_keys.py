"""Each integration's capability key: the unguessable path prefix of the API URL it alone is given.

`strawpot ui` serves the chat adapters' API under `/i/{key}/…` and gives an integration `STRAWPOT_API_URL =
{ui}/i/{key}`: a request whose prefix is no integration's key is a 404 and starts nothing. Keys live in
`{data}/integrations/keys.json` (0600, in a 0700 folder), minted on first use, so a restarted UI gives a
restarted adapter the same URL.
"""

from __future__ import annotations

import hmac
import json
import os
import re
import secrets
from pathlib import Path

from strawpot.model.fs import atomic_write

KEYS_FILE = "keys.json"
KEY_RE = re.compile(r"[A-Za-z0-9_-]{43}")  # secrets.token_urlsafe(32)
PREFIX = "/i"  # the API's mount: {ui}/i/{key}/api/…, {ui}/i/{key}/ws/…


def integrations_dir(data: Path) -> Path:
    """Where strawpot keeps what belongs to integrations (keys, each one's data folder and log), 0700."""
    folder = data / "integrations"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(folder, 0o700)
    return folder


def _read(data: Path) -> dict[str, str]:
    try:
        raw = json.loads((integrations_dir(data) / KEYS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(raw, dict):
        return {}
    return {str(name): key for name, key in raw.items() if isinstance(key, str) and KEY_RE.fullmatch(key)}


def key_for(data: Path, name: str) -> str:
    """The capability key of integration `name`, minted (and kept) the first time it is asked for."""
    keys = _read(data)
    if name not in keys:
        keys[name] = secrets.token_urlsafe(32)
        atomic_write(integrations_dir(data) / KEYS_FILE, json.dumps(keys, indent=2, sort_keys=True) + "\n",
                     mode=0o600)
    return keys[name]


def name_for_key(data: Path, key: str) -> str | None:
    """The integration `key` belongs to, or None; compared in constant time."""
    if not KEY_RE.fullmatch(key):
        return None
    found = None
    for name, known in _read(data).items():
        if hmac.compare_digest(known, key):
            found = name
    return found


def api_url(base: str, key: str) -> str:
    """The `STRAWPOT_API_URL` an integration is given: the UI's origin (`http://127.0.0.1:PORT`) and its prefix."""
    return f"{base.rstrip('/')}{PREFIX}/{key}"
