"""The settings layer: five layers, one value each with its origin; bad values and unknown keys said clearly."""

from __future__ import annotations

from pathlib import Path

import pytest

from strawpot.config_files import load_settings
from strawpot.model.errors import UsageError
from strawpot.model.kinds import Kind
from strawpot.model.settings import SCHEMA, Origin, Source, key_lines, layered


def _file(layer: str, path: str, text: str) -> Source:
    import tomllib

    return Source(layer, path, tomllib.loads(text), key_lines(text))


def test_each_layer_overrides_the_one_below_and_says_so() -> None:
    settings = layered([
        _file("global", "/g/config.toml", '[policy]\nmax_depth = 1\nagent_timeout = 5\n[registry]\nurl = "http://g"\n'),
        _file("project", "/p/strawpot.toml", '[skills]\na = "*"\n\n[policy]\nmax_depth = 2\n'),
        Source("env", "", {"policy.agent_timeout": "7.5"}),
        Source("flag", "--registry", {"registry.url": "http://flag"}),
    ])
    assert settings.get("policy.max_depth") == 2
    assert settings.origin("policy.max_depth") == Origin("project", "/p/strawpot.toml:5")
    assert settings.get("policy.agent_timeout") == 7.5
    assert str(settings.origin("policy.agent_timeout")) == "env STRAWPOT_POLICY_AGENT_TIMEOUT"
    assert settings.get("registry.url") == "http://flag" and str(settings.origin("registry.url")) == "flag --registry"
    assert settings.get("policy.kill_grace") == 3.0 and str(settings.origin("policy.kill_grace")) == "default"
    assert settings.warnings == []


def test_an_unknown_key_is_a_warning_with_file_and_line() -> None:
    settings = layered([_file("project", "/p/strawpot.toml", '[policy]\nmax_depth = 2\nmax_dept = 4\n[sesion]\nx = 1\n')])
    assert settings.warnings == [
        "/p/strawpot.toml:3: unknown setting 'policy.max_dept' (did you mean 'policy.max_depth'?)",
        "/p/strawpot.toml:5: unknown setting 'sesion.x'",
    ]


@pytest.mark.parametrize(("text", "message"), [
    ("[policy]\nmax_depth = \"3\"\n", "/p/strawpot.toml:2: policy.max_depth must be a whole number, not '3'"),
    ("[policy]\nmax_depth = true\n", "policy.max_depth must be a whole number, not True"),
    ("[policy]\nmax_depth = -1\n", "policy.max_depth must be at least 0, not -1"),
    ("[denden]\ntransport = \"udp\"\n", "denden.transport must be one of unix, tcp, not 'udp'"),
    ("[scripts]\ntrusted = \"agent:x\"\n", "scripts.trusted must be a list of strings, not 'agent:x'"),
    ("policy = 3\n", "/p/strawpot.toml:1: [policy] must be a table"),
])
def test_a_wrong_type_names_file_line_and_key(text: str, message: str) -> None:
    with pytest.raises(UsageError) as info:
        layered([_file("project", "/p/strawpot.toml", text)])
    assert message in info.value.message


def test_env_values_are_parsed_by_type() -> None:
    settings = layered([Source("env", "", {"policy.max_depth": " 4 ", "scripts.timeout": "12"})])
    assert settings.get("policy.max_depth") == 4 and settings.get("scripts.timeout") == 12.0
    with pytest.raises(UsageError, match="STRAWPOT_POLICY_MAX_DEPTH: policy.max_depth must be a whole number"):
        layered([Source("env", "", {"policy.max_depth": "four"})])


def test_agent_params_layer_and_agent_env_is_global_only() -> None:
    settings = layered([
        _file("global", "/g", '[agents.coder]\nmodel = "a"\nturbo = true\n[agents.coder.env]\nKEY = "s"\n'),
        _file("project", "/p", '[agents]\nother = "^1"\n[agents.coder]\nversion = "^1"\nmodel = "b"\n'),
    ])
    assert settings.agent("coder") == {"model": "b", "turbo": True}  # `version` is the requirement's
    assert settings.env_for(Kind.AGENT, "coder") == {"KEY": "s"}
    assert settings.agent("other") == {}
    with pytest.raises(UsageError, match=r"/p:2: \[agents.coder.env\]: environment values do not belong in the project"):
        layered([_file("project", "/p", '[agents.coder]\nenv = { LEAK = "x" }\n')])


def test_requirement_tables_are_not_settings() -> None:
    settings = layered([_file("project", "/p", '[skills]\na = "*"\n[roles.r]\nversion = "*"\ndefault_agent = "x"\n')])
    assert settings.warnings == []


def test_every_key_has_a_default_of_its_type() -> None:
    from strawpot.model.settings import check

    for key in SCHEMA.values():
        if key.default is not None:
            check(key, list(key.default) if isinstance(key.default, tuple) else key.default, "default")


def test_key_lines_follow_tables_and_dotted_keys() -> None:
    text = '# c\n[a]\nx = 1\n"q.k" = 2\n[b.c]  # note\ny.z = 3\n[[arr]]\nw = 4\n'
    assert key_lines(text) == {"a": 2, "a.x": 3, "a.q.k": 4, "b.c": 5, "b.c.y.z": 6, "arr": 7, "arr.w": 8}


def test_load_settings_reads_the_files_and_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from strawpot.model.layout import Project

    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "config.toml").write_text("[scripts]\ntimeout = 10\n")
    (tmp_path / "strawpot.toml").write_text("[scripts]\ntrusted = [\"agent:x\"]\n")
    monkeypatch.setenv("STRAWPOT_CONFIG_DIR", str(tmp_path / "cfg"))
    settings = load_settings(Project.at(tmp_path), environ={"STRAWPOT_DENDEN_TRANSPORT": "tcp"})
    assert settings.get("scripts.timeout") == 10.0 and settings.get("scripts.trusted") == ("agent:x",)
    assert settings.get("denden.transport") == "tcp"
    (tmp_path / "strawpot.toml").write_text("[scripts\n")
    with pytest.raises(UsageError, match=r"strawpot.toml:1:9: invalid TOML: Expected"):
        load_settings(Project.at(tmp_path), environ={})


def test_docs_list_every_setting() -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "config.md").read_text(encoding="utf-8")
    for name, key in SCHEMA.items():
        assert f"| `{name}` |" in text, name
        assert (key.env_var or "—") in text, name


def test_skill_env_comes_from_the_global_config_and_is_checked() -> None:
    settings = layered([_file("global", "/g", '[skills.s.env]\nY = "2"\n[agents.a.env]\nX = "1"\n')])
    assert settings.saved_env() == {(Kind.AGENT, "a"): {"X": "1"}, (Kind.SKILL, "s"): {"Y": "2"}}
    with pytest.raises(UsageError, match=r'/g:2: \[agents.a.env\] must be a table of NAME = "value" strings'):
        layered([_file("global", "/g", "[agents.a]\nenv = { X = 1 }\n")])


def test_an_integrations_env_and_the_ones_the_ui_starts_come_from_the_users_own_layers() -> None:
    text = ('[ui]\nintegrations = ["telegram"]\n\n[integrations.telegram.env]\nSTRAWPOT_BOT_TOKEN = "123:abc"\n')
    settings = layered([_file("global", "/g", text)])
    assert settings.get("ui.integrations") == ("telegram",)
    assert settings.env_for(Kind.INTEGRATION, "telegram") == {"STRAWPOT_BOT_TOKEN": "123:abc"}
    with pytest.raises(UsageError, match=r"/p:3: \[integrations.telegram.env\]: environment values do not belong "
                                         r"in the project file"):
        layered([_file("project", "/p", '[integrations.telegram]\nversion = "*"\n[integrations.telegram.env]\nT = "x"\n')])
    with pytest.raises(UsageError, match=r"ui.integrations must be a list like"):
        layered([_file("global", "/g", '[ui]\nintegrations = ["Not A Slug"]\n')])
