"""`strawpot config show --origin` and `config set`: five layers, each value's origin, edits that keep the file."""

from __future__ import annotations

import json
from pathlib import Path

from tests.commands.test_hostile_cli import assert_clean_failure, run


def _project(tmp_path: Path) -> None:
    (tmp_path / ".config").mkdir()
    (tmp_path / ".config" / "config.toml").write_text('[registry]\ntimeout = 12\n[agents.coder.env]\nKEY = "s3cret"\n')
    (tmp_path / "strawpot.toml").write_text('# mine\n[skills]\nalpha = "^1"\n\n[policy]  # limits\nmax_depth = 2\n')


def test_show_origin_names_all_five_layers(tmp_path: Path) -> None:
    _project(tmp_path)
    result = run("config", "show", "--origin", "--registry", "http://flag.example", cwd=tmp_path,
                 env={"STRAWPOT_SCRIPTS_TIMEOUT": "45"})
    assert result.returncode == 0, result.stderr
    lines = {line.split(" = ")[0].strip(): line for line in result.stdout.splitlines()}
    assert lines["policy.kill_grace"].endswith("= 3  (default)")
    assert lines["registry.timeout"].endswith(f"= 12  (global config {tmp_path}/.config/config.toml:2)")
    assert lines["policy.max_depth"].endswith(f"= 2  (project {tmp_path}/strawpot.toml:6)")
    assert lines["scripts.timeout"].endswith("= 45  (env STRAWPOT_SCRIPTS_TIMEOUT)")
    assert lines["registry.url"].endswith("= http://flag.example  (flag --registry)")
    assert "s3cret" not in result.stdout and lines["agents.coder.env.KEY"].split(" = ")[1].startswith("(set)")


def test_show_json_lists_every_setting_with_its_layer(tmp_path: Path) -> None:
    _project(tmp_path)
    report = json.loads(run("config", "--json", cwd=tmp_path).stdout)
    assert report["command"] == "config show" and report["schema_version"] == 2
    rows = {row["key"]: row for row in report["settings"]}
    assert rows["policy.max_depth"]["value"] == 2 and rows["policy.max_depth"]["layer"] == "project"
    assert rows["registry.url"]["layer"] == "env"  # the test harness sets STRAWPOT_REGISTRY_URL
    assert report["registry_url_from"] == "env STRAWPOT_REGISTRY_URL"
    assert rows["agents.coder.env.KEY"]["value"] == "(set)"


def test_an_unknown_key_warns_and_a_wrong_type_is_exit_2(tmp_path: Path) -> None:
    _project(tmp_path)
    (tmp_path / "strawpot.toml").write_text("[policy]\nmax_dept = 4\n")
    result = run("config", cwd=tmp_path)
    assert result.returncode == 0
    assert f"warning: {tmp_path}/strawpot.toml:2: unknown setting 'policy.max_dept' (did you mean" in result.stderr
    (tmp_path / "strawpot.toml").write_text('[policy]\nmax_depth = "deep"\n')
    assert_clean_failure(run("config", cwd=tmp_path), 2, f"{tmp_path}/strawpot.toml:2: policy.max_depth must be a whole number")


def test_set_edits_the_right_file_and_keeps_comments_and_mode(tmp_path: Path) -> None:
    _project(tmp_path)
    manifest = tmp_path / "strawpot.toml"
    manifest.chmod(0o644)
    assert run("config", "set", "policy.max_depth", "5", cwd=tmp_path).returncode == 0
    assert run("config", "set", "agents.coder.model", "big", cwd=tmp_path).returncode == 0
    assert manifest.read_text() == (
        '# mine\n[skills]\nalpha = "^1"\n\n[policy]  # limits\nmax_depth = 5\n\n[agents.coder]\nmodel = "big"\n'
    )
    assert manifest.stat().st_mode & 0o777 == 0o644
    assert run("config", "set", "--global", "agents.coder.env.OTHER", "x", cwd=tmp_path).returncode == 0
    config = tmp_path / ".config" / "config.toml"
    assert 'OTHER = "x"' in config.read_text() and config.stat().st_mode & 0o777 == 0o600
    assert_clean_failure(run("config", "set", "agents.coder.env.OTHER", "x", cwd=tmp_path), 2, "global config only")
    assert_clean_failure(run("config", "set", "policy.max_depth", "deep", cwd=tmp_path), 2, "must be a whole number")
    assert_clean_failure(run("config", "set", "polcy.max_depth", "1", cwd=tmp_path), 2, "did you mean 'policy.max_depth'")
    assert "max_depth = 5" in manifest.read_text()  # refusals wrote nothing


def test_the_token_shows_as_set_with_its_origin_never_its_value(tmp_path: Path) -> None:
    _project(tmp_path)
    url = "http://127.0.0.1:9"  # the harness's STRAWPOT_REGISTRY_URL
    def token_line(env: dict[str, str] | None = None) -> str:
        shown = run("config", "show", "--origin", cwd=tmp_path, env=env).stdout.splitlines()
        return next(line for line in shown if line.startswith("registry.token "))
    assert token_line().endswith("= (not set)")
    from_env = token_line({"STRAWPOT_TOKEN": "sh_secret_value"})
    assert from_env.endswith("= (set)  (env STRAWPOT_TOKEN)") and "sh_secret_value" not in from_env
    with (tmp_path / ".config" / "config.toml").open("a") as fh:
        fh.write(f'[tokens]\n"{url}" = "sh_stored"\n')
    assert token_line().endswith(f"= (set)  (global config {tmp_path}/.config/config.toml)")


def test_an_integrations_token_is_set_in_the_global_config_only_and_shown_as_set(tmp_path: Path) -> None:
    _project(tmp_path)
    key = "integrations.telegram.env.STRAWPOT_BOT_TOKEN"
    assert run("config", "set", "--global", key, "123:secret", cwd=tmp_path).returncode == 0
    assert run("config", "set", "--global", "ui.integrations", "telegram", cwd=tmp_path).returncode == 0
    config = tmp_path / ".config" / "config.toml"
    assert config.read_text().endswith('[integrations.telegram.env]\nSTRAWPOT_BOT_TOKEN = "123:secret"\n\n'
                                       '[ui]\nintegrations = ["telegram"]\n')
    shown = run("config", "show", cwd=tmp_path).stdout
    assert f"{key} = (set)" in shown and "123:secret" not in shown
    assert_clean_failure(run("config", "set", key, "x", cwd=tmp_path), 2, "global config only")
