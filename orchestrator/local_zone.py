"""The local time zone as an IANA name (from TZ or /etc/localtime), for a schedule added without --timezone."""

from __future__ import annotations

import os
import re
import zoneinfo
from collections.abc import Mapping
from pathlib import Path

from strawpot.model.errors import UsageError

LOCALTIME = Path("/etc/localtime")
# POSIX TZ "std offset" with no daylight-saving part: `UTC0`, `JST-9`, `<+0530>-5:30` (the offset is west of UTC)
_FIXED = re.compile(r"(?:[A-Za-z]{3,}|<[A-Za-z0-9+-]{3,}>)([+-]?)(\d{1,2})(?::(\d{1,2}))?(?::(\d{1,2}))?")
_SKIPPED = frozenset({"posix", "right"})  # the same zones again, and zones counting leap seconds


def local_timezone(environ: Mapping[str, str] | None = None) -> str:
    """The IANA name of the zone this process's local time is in, as the C library reads TZ.

    TZ unset: /etc/localtime (UTC when there is none); empty: UTC; `:/path` or `/path`: that zone file; a zone
    name (`:` before it or not); a fixed POSIX offset (`UTC0` is UTC, `JST-9` is Etc/GMT-9). Anything else
    (a POSIX rule with daylight saving, an offset in minutes) raises a one-line UsageError asking for --timezone.
    """
    tz = (os.environ if environ is None else environ).get("TZ")
    if tz is None:
        return _zone_of_file(LOCALTIME, "/etc/localtime", missing_ok=True)
    spec = tz.removeprefix(":")
    if not spec:
        return "UTC"  # an empty TZ is UTC to the C library
    if spec.startswith("/"):
        return _zone_of_file(Path(spec), f"TZ={tz!r}")
    if _known(spec):
        return spec
    if (fixed := _FIXED.fullmatch(spec)) is not None:
        return _fixed_zone(tz, *fixed.groups())
    raise _unknown(f"TZ={tz!r} is neither a zone name nor a fixed offset (a POSIX rule with daylight saving "
                   "cannot be stored)")


def _unknown(why: str) -> UsageError:
    return UsageError(f"cannot tell the local time zone: {why}; pass --timezone with an IANA name "
                      "(e.g. --timezone Europe/Paris)")


def _known(name: str) -> bool:
    """Whether `name` is a zone of the tz database (`zoneinfo` reads it)."""
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        return False
    return True


def _fixed_zone(tz: str, sign: str, hours: str, minutes: str | None, seconds: str | None) -> str:
    """The tz database's name of a fixed POSIX offset: UTC, or Etc/GMT±H (whose sign is POSIX's: west is +)."""
    if int(minutes or 0) or int(seconds or 0):
        raise _unknown(f"TZ={tz!r} is an offset of hours and minutes, which no IANA name holds")
    hour = int(hours)
    if hour == 0:
        return "UTC"
    name = f"Etc/GMT{'-' if sign == '-' else '+'}{hour}"
    if not _known(name):
        raise _unknown(f"TZ={tz!r} is an offset the tz database has no zone for")
    return name


def _zone_of_file(path: Path, said: str, *, missing_ok: bool = False) -> str:
    """The name of the zone file `path` is: where its links lead under a zoneinfo folder, else the zone of the
    tz database holding the same bytes (a copied /etc/localtime)."""
    try:
        real = path.resolve(strict=True)
        data = real.read_bytes()
    except FileNotFoundError:
        if missing_ok:
            return "UTC"  # no /etc/localtime: the C library's local time is UTC
        raise _unknown(f"{said} names {path}, which does not exist") from None
    except (OSError, RuntimeError) as exc:  # a link loop, a folder, no permission
        raise _unknown(f"{said}: cannot read {path} ({getattr(exc, 'strerror', None) or exc})") from None
    parts = real.parts
    if "zoneinfo" in parts:
        name = "/".join(parts[len(parts) - parts[::-1].index("zoneinfo"):])
        if _known(name):
            return name
    if not data.startswith(b"TZif"):
        raise _unknown(f"{said}: {path} is not a zone file")
    if (found := _same_zone(data)) is not None:
        return found
    raise _unknown(f"{said}: {path} matches no zone of the tz database")


def _same_zone(data: bytes) -> str | None:
    """The name of a zone file of the tz database with exactly these bytes: one named Area/City first."""
    found: list[str] = []
    for root in map(Path, zoneinfo.TZPATH):
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d not in _SKIPPED or Path(folder) != root)
            for file in files:
                path = Path(folder, file)
                try:
                    same = path.stat().st_size == len(data) and path.read_bytes() == data
                except OSError:
                    continue
                if same and _known(name := path.relative_to(root).as_posix()):
                    found.append(name)
        if found:
            return min(found, key=lambda name: ("/" not in name or name.startswith("Etc/"), name))
    return None
