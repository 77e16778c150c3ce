"""`strawpot schedule list` over a schedules.json another hand wrote: its text reaches the terminal inert, and one
unreadable entry is listed with what is wrong and how to fix or remove it while the others are listed (exit 0)."""

from __future__ import annotations

import json
from pathlib import Path

from tests._cli import strawpot_here

GOOD = {"name": "triage", "cron": "0 9 * * *", "project": "/srv/app", "role": "triager", "task": "triage issues",
        "params": {}, "timezone": "UTC", "overlap": "skip", "created": None}


def _env(tmp_path: Path) -> dict[str, str]:
    return {"STRAWPOT_DATA_DIR": str(tmp_path / "data"), "STRAWPOT_CONFIG_DIR": str(tmp_path / "config"),
            "HOME": str(tmp_path), "NO_COLOR": "1"}


def _store(tmp_path: Path, *entries: object) -> Path:
    file = tmp_path / "data" / "schedules.json"
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(json.dumps({"schedules": list(entries)}), encoding="utf-8")
    return file


def test_a_stored_schedules_escape_sequences_are_shown_inert_on_one_line(tmp_path: Path) -> None:
    hostile = {**GOOD, "role": "\x1b]0;owned\x07\x1b[31mred-role", "task": "first\nsecond\x1b[2J",
               "project": "/srv/\x1b[1mapp", "timezone": "UTC\x1b[5m"}
    _store(tmp_path, hostile)
    listed = strawpot_here("schedule", "list", cwd=tmp_path, extra_env=_env(tmp_path))
    assert listed.returncode == 0, listed.stderr
    assert "\x1b" not in listed.stdout and "\x07" not in listed.stdout, repr(listed.stdout)
    [line] = listed.stdout.splitlines()  # the task's newline does not start a line of its own
    assert "red-role: first\\nsecond" in line and "in /srv/app" in line, line


def test_one_unreadable_entry_is_marked_with_its_fix_while_the_others_are_listed(tmp_path: Path) -> None:
    env = _env(tmp_path)
    file = _store(tmp_path, GOOD, {k: v for k, v in GOOD.items() if k != "cron"} | {"name": "nightly"}, 1)
    listed = strawpot_here("schedule", "list", cwd=tmp_path, extra_env=env)
    assert listed.returncode == 0, listed.stderr
    assert "Traceback" not in listed.stderr
    triage, nightly, third = listed.stdout.splitlines()
    assert triage.startswith("triage ") and "triager: triage issues" in triage
    assert nightly == (f"nightly    cannot read schedule nightly: no 'cron' field; fix it in {file}, or "
                       "`strawpot schedule remove nightly`")
    assert third == f"(entry 3)  cannot read entry 3: 1 is not a table of fields; fix or delete entry 3 of {file}"
    report = json.loads(strawpot_here("schedule", "list", "--json", cwd=tmp_path, extra_env=env).stdout)
    assert [row["name"] for row in report["schedules"]] == ["triage"]
    assert [(u["position"], u["name"], u["problem"]) for u in report["unreadable"]] == [
        (2, "nightly", "no 'cron' field"), (3, None, "1 is not a table of fields")]

    fired = strawpot_here("schedule", "run", "nightly", cwd=tmp_path, extra_env=env)  # named, but cannot be read
    assert fired.returncode == 2 and "cannot read schedule nightly: no 'cron' field" in fired.stderr, fired.stderr
    history = strawpot_here("schedule", "history", "nightly", cwd=tmp_path, extra_env=env)  # its history stays readable
    assert history.returncode == 0 and "has not fired yet" in history.stderr, history.stderr
    added = strawpot_here("schedule", "add", "later", "--cron", "0 10 * * *", "--role", "r", "--task", "t",
                          "--timezone", "UTC", cwd=tmp_path, extra_env=env)
    assert added.returncode == 0, added.stderr
    removed = strawpot_here("schedule", "remove", "nightly", cwd=tmp_path, extra_env=env)  # as the line says
    assert removed.returncode == 0, removed.stderr
    kept = json.loads(file.read_text())["schedules"]
    assert [e["name"] if isinstance(e, dict) else e for e in kept] == ["later", "triage", 1]  # the rest as it was


def test_a_file_that_is_no_list_of_schedules_is_still_one_line_exit_2(tmp_path: Path) -> None:
    file = tmp_path / "data" / "schedules.json"
    file.parent.mkdir(parents=True)
    for text in ("[]", '{"schedules": 3}', "{not json"):
        file.write_text(text)
        listed = strawpot_here("schedule", "list", cwd=tmp_path, extra_env=_env(tmp_path))
        assert listed.returncode == 2 and "Traceback" not in listed.stderr, listed.stderr
        assert f"cannot read {file}" in listed.stderr and "fix or remove the file" in listed.stderr
