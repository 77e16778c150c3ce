"""`strawpot schedule add|list|remove|history` as a user runs them (main() in this process, as tests/_cli.py runs it), a data folder of its own."""

from __future__ import annotations

import json
from pathlib import Path

from tests.commands.test_hostile_cli import assert_clean_failure, run


def test_add_list_history_remove_round_trip(tmp_path: Path) -> None:
    env = {"STRAWPOT_DATA_DIR": str(tmp_path / "data")}
    added = run("schedule", "add", "triage", "--cron", "0 9 * * 1-5", "--role", "issue-triager", "--task",
                "triage new issues", "--param", "repo=acme/app", "--timezone", "Europe/Paris", cwd=tmp_path, env=env)
    assert added.returncode == 0, added.stderr
    listed = json.loads(run("schedule", "list", "--json", cwd=tmp_path, env=env).stdout)
    assert listed["command"] == "schedule list"
    [row] = listed["schedules"]
    assert row["name"] == "triage" and row["params"] == {"repo": "acme/app"} and row["overlap"] == "skip"
    assert row["project"] == str(tmp_path.resolve()) and row["next_fire"].endswith(("+01:00", "+02:00"))
    said = run("schedule", "list", cwd=tmp_path, env=env).stdout.splitlines()
    assert said == [f"triage  0 9 * * 1-5 (Europe/Paris)  next {row['next_fire']}  in {tmp_path.resolve()}  "
                    "issue-triager: triage new issues"]
    history = json.loads(run("schedule", "history", "triage", "--json", cwd=tmp_path, env=env).stdout)
    assert history["runs"] == []
    assert run("schedule", "remove", "triage", cwd=tmp_path, env=env).returncode == 0
    assert json.loads(run("schedule", "list", "--json", cwd=tmp_path, env=env).stdout)["schedules"] == []


def test_bad_cron_is_refused_at_add_with_one_line_exit_2(tmp_path: Path) -> None:
    env = {"STRAWPOT_DATA_DIR": str(tmp_path / "data")}
    for cron, needle in (("0 0 30 2 *", "Bad day-of-month"), ("every monday", "invalid cron expression")):
        result = run("schedule", "add", "x", "--cron", cron, "--role", "r", "--task", "t", cwd=tmp_path, env=env)
        assert_clean_failure(result, 2, needle)
        assert len(result.stderr.strip().splitlines()) <= 2  # error line (+ optional hint)
    assert not (tmp_path / "data" / "schedules.json").exists()
    assert_clean_failure(run("schedule", "remove", "nope", cwd=tmp_path, env=env), 2, "no schedule named 'nope'")


def test_an_unreadable_history_is_one_line_exit_2(tmp_path: Path) -> None:
    env = {"STRAWPOT_DATA_DIR": str(tmp_path / "data")}
    (tmp_path / "data" / "schedule-history").mkdir(parents=True)
    (tmp_path / "data" / "schedule-history" / "triage.json").write_text("{not json")
    result = run("schedule", "history", "triage", cwd=tmp_path, env=env)
    assert_clean_failure(result, 2, "cannot read the history of 'triage'", "fix or remove")
    assert_clean_failure(run("schedule", "history", "../x", cwd=tmp_path, env=env), 2, "no schedule named '../x'")


def test_a_schedules_file_edited_into_another_shape_is_one_line_exit_2(tmp_path: Path) -> None:
    env = {"STRAWPOT_DATA_DIR": str(tmp_path / "data")}
    (tmp_path / "data" / "schedule-history").mkdir(parents=True)
    # a file that is no list of schedules (one unreadable entry among others: tests/commands/test_schedule_list_entries.py)
    for text in ("[]", '{"schedules": 3}', '{"schedules": {"name": "a"}}', "{not json"):
        (tmp_path / "data" / "schedules.json").write_text(text)
        for args in (("list",), ("run", "a"), ("remove", "a")):
            assert_clean_failure(run("schedule", *args, cwd=tmp_path, env=env), 2, "cannot read", "fix or remove")
    (tmp_path / "data" / "schedules.json").unlink()
    for text in ('{"runs": [{"schedule": "a"}]}', '{"runs": [{"schedule": "a", "fired_at": "soon", "outcome": "x"}]}',
                 '{"runs": 3}'):
        (tmp_path / "data" / "schedule-history" / "a.json").write_text(text)
        assert_clean_failure(run("schedule", "history", "a", cwd=tmp_path, env=env), 2,
                             "cannot read the history of 'a'", "fix or remove")


def test_a_name_with_a_newline_or_a_six_field_cron_is_refused_and_a_stored_one_is_flagged_and_removable(
        tmp_path: Path) -> None:
    env = {"STRAWPOT_DATA_DIR": str(tmp_path / "data")}
    add = ("--cron", "0 9 * * *", "--role", "r", "--task", "t")
    assert_clean_failure(run("schedule", "add", "triage\n", *add, cwd=tmp_path, env=env), 2,
                         "invalid schedule name 'triage\\n'")
    assert_clean_failure(run("schedule", "add", "x", "--cron", "* * * * * *", "--role", "r", "--task", "t",
                             cwd=tmp_path, env=env), 2, "use five fields (minute hour day-of-month month day-of-week)")
    assert not (tmp_path / "data" / "schedules.json").exists()
    # Stored by an older strawpot (or by hand): each is flagged in the list, and removable by the name it shows.
    assert run("schedule", "add", "triage", *add, "--timezone", "UTC", cwd=tmp_path, env=env).returncode == 0
    raw = json.loads((tmp_path / "data" / "schedules.json").read_text())
    raw["schedules"] = [{**raw["schedules"][0], "name": "triage\n"},
                        {**raw["schedules"][0], "name": "tick", "cron": "* * * * * *"}]
    (tmp_path / "data" / "schedules.json").write_text(json.dumps(raw))
    listed = run("schedule", "list", cwd=tmp_path, env=env)
    assert listed.returncode == 0 and listed.stdout.splitlines() == [
        f"tick      * * * * * * (UTC)  does not fire: invalid cron expression '* * * * * *': use five fields "
        f"(minute hour day-of-month month day-of-week), not 6  in {tmp_path.resolve()}  r: t",
        f"triage\\n  0 9 * * * (UTC)  does not fire: invalid schedule name 'triage\\n': use lowercase letters, "
        f"digits, '.', '_' or '-'  in {tmp_path.resolve()}  r: t"]
    rows = json.loads(run("schedule", "list", "--json", cwd=tmp_path, env=env).stdout)["schedules"]
    assert [(r["name"], r["next_fire"], r["problem"].split(":")[0]) for r in rows] == [
        ("tick", None, "invalid cron expression '* * * * * *'"), ("triage\n", None, "invalid schedule name 'triage\\n'")]
    assert_clean_failure(run("schedule", "remove", "triage", cwd=tmp_path, env=env), 2, "no schedule named 'triage'")
    removed = run("schedule", "remove", "triage\\n", cwd=tmp_path, env=env)  # as `list` shows it
    assert removed.returncode == 0 and removed.stderr == "Removed schedule triage\\n\n", removed.stderr
    assert [r["name"] for r in json.loads(run("schedule", "list", "--json", cwd=tmp_path, env=env).stdout)[
        "schedules"]] == ["tick"]


def test_add_notify_is_stored_and_listed_and_a_bad_target_is_exit_2(tmp_path: Path) -> None:
    env = {"STRAWPOT_DATA_DIR": str(tmp_path / "data")}
    base = ("schedule", "add", "nightly", "--cron", "0 2 * * *", "--role", "r", "--task", "t")
    assert_clean_failure(run(*base, "--notify", "Strawpot Telegram", cwd=tmp_path, env=env), 2, "invalid --notify")
    assert not (tmp_path / "data" / "schedules.json").exists()
    added = run(*base, "--notify", "strawpot-telegram:-100123", cwd=tmp_path, env=env)
    assert added.returncode == 0, added.stderr
    [row] = json.loads(run("schedule", "list", "--json", cwd=tmp_path, env=env).stdout)["schedules"]
    assert row["notify"] == "strawpot-telegram:-100123"


def test_a_schedules_runner_is_stored_listed_and_a_hand_edited_one_fails_its_fire_alone(tmp_path: Path) -> None:
    env = {"STRAWPOT_DATA_DIR": str(tmp_path / "data")}
    for name, extra in (("remote", ["--runner", "ray"]), ("default", [])):
        added = run("schedule", "add", name, "--cron", "0 9 * * *", "--role", "r", "--task", "t", *extra,
                    cwd=tmp_path, env=env)
        assert added.returncode == 0, added.stderr
    rows = json.loads(run("schedule", "list", "--json", cwd=tmp_path, env=env).stdout)["schedules"]
    assert {row["name"]: row["runner"] for row in rows} == {"default": None, "remote": "ray"}
    said = run("schedule", "list", cwd=tmp_path, env=env).stdout.splitlines()  # the project's runner: said nothing
    assert [line.split("  ", 3)[-1] for line in said] == [f"in {tmp_path.resolve()}  r: t",
                                                          f"in {tmp_path.resolve()}  runner ray  r: t"]
    file = tmp_path / "data" / "schedules.json"
    file.write_text(file.read_text().replace('"runner": "ray"', '"runner": "k8s"'))
    (tmp_path / "strawpot.lock").write_text("")  # the precheck looks for a lock before it looks at the runner
    fired = run("schedule", "run", "remote", cwd=tmp_path, env=env)
    assert_clean_failure(fired, 2, "unknown runner 'k8s' in remote: use one of local, ray")
