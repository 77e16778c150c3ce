"""`strawpot schedule add` without --timezone under each form TZ takes: the local zone is stored by its IANA name,
and a TZ that names none is one line asking for --timezone."""

from __future__ import annotations

import json
import os
import shutil
import zoneinfo
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests._cli import strawpot

INSTANTS = [datetime(2026, month, 15, 12, tzinfo=UTC) for month in (1, 7)]  # winter and summer


def _zone_file(name: str) -> Path:
    found = next((Path(root, name) for root in zoneinfo.TZPATH if Path(root, name).is_file()), None)
    assert found is not None, f"no {name} in {zoneinfo.TZPATH}"
    return found


def _add(tmp_path: Path, tz: str | None) -> tuple[int, str, str | None]:
    """Add a schedule under TZ=`tz` (unset when None); the exit code, stderr, and the zone stored."""
    env = {"STRAWPOT_DATA_DIR": str(tmp_path / "data"), "STRAWPOT_CONFIG_DIR": str(tmp_path / "config"),
           "HOME": str(tmp_path), "NO_COLOR": "1"}
    environ = {k: v for k, v in os.environ.items() if k != "TZ"} | env | ({} if tz is None else {"TZ": tz})
    shutil.rmtree(tmp_path / "data", ignore_errors=True)
    done = strawpot("schedule", "add", "nightly", "--cron", "0 9 * * *", "--role", "r", "--task", "t",
                    cwd=tmp_path, env=environ)
    stored = tmp_path / "data" / "schedules.json"
    zone = json.loads(stored.read_text())["schedules"][0]["timezone"] if stored.is_file() else None
    return done.returncode, done.stderr, zone


def _same_zone(name: str, file: Path) -> bool:
    with file.open("rb") as fh:
        expected = zoneinfo.ZoneInfo.from_file(fh)
    return all(at.astimezone(zoneinfo.ZoneInfo(name)).utcoffset() == at.astimezone(expected).utcoffset()
               for at in INSTANTS)


@pytest.mark.parametrize(("tz", "zone"), [
    ("UTC0", "UTC"), ("ABC0", "UTC"), ("", "UTC"), ("JST-9", "Etc/GMT-9"), ("<-03>3", "Etc/GMT+3"),
    ("Europe/Paris", "Europe/Paris"), (":Europe/Paris", "Europe/Paris"), ("EST5EDT", "EST5EDT"),
])
def test_a_zone_name_or_a_fixed_posix_offset_is_stored_by_its_iana_name(tmp_path: Path, tz: str, zone: str) -> None:
    code, err, stored = _add(tmp_path, tz)
    assert (code, stored) == (0, zone), err


def test_a_zone_file_path_is_read_through_its_link_or_by_its_bytes(tmp_path: Path) -> None:
    tokyo = _zone_file("Asia/Tokyo")
    link = tmp_path / "linked-localtime"
    link.symlink_to(tokyo)
    copy = tmp_path / "copied-localtime"
    copy.write_bytes(tokyo.read_bytes())
    assert _add(tmp_path, f":{link}")[:3:2] == (0, "Asia/Tokyo")
    assert _add(tmp_path, str(link))[:3:2] == (0, "Asia/Tokyo")
    code, err, stored = _add(tmp_path, f":{copy}")  # a copy, as some containers have: the zone with its bytes
    assert code == 0 and stored is not None and _same_zone(stored, tokyo), err
    for tz in (":/etc/localtime", None):  # the machine's own, through TZ or by default
        code, err, stored = _add(tmp_path, tz)
        assert code == 0 and stored is not None, err
        assert _same_zone(stored, Path("/etc/localtime")), stored


@pytest.mark.parametrize("tz", ["CET-1CEST,M3.5.0,M10.5.0/3", "<+0530>-5:30", "Nowhere/Atlantis", ":/no/such/zone",
                                ":/etc/hostname"])
def test_a_tz_that_names_no_zone_is_one_line_asking_for_timezone(tmp_path: Path, tz: str) -> None:
    code, err, stored = _add(tmp_path, tz)
    assert code == 2 and stored is None, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert err.startswith("error: cannot tell the local time zone: ") and "pass --timezone" in err, err
