"""The registry a command talks to, the token it may send there, and its time limits (strawpot/registry_choice.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from strawpot.config_files import load_settings
from strawpot.model.errors import UsageError
from strawpot.model.layout import Project
from strawpot.model.settings import DEFAULT_REGISTRY_URL
from strawpot.registry_choice import Timeouts, choose_registry, registry_at, timeouts

A, B = "http://a.test", "http://b.test"


@pytest.fixture(autouse=True)
def clean(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in ("STRAWPOT_REGISTRY_URL", "STRAWPOT_TOKEN", "STRAWPOT_TOKEN_REGISTRY", "STRAWPOT_HTTP_TIMEOUT",
                 "STRAWPOT_REGISTRY_DEADLINE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("STRAWPOT_CONFIG_DIR", str(tmp_path))
    return tmp_path / "config.toml"


@pytest.mark.parametrize(
    ("explicit", "env", "manifest", "config", "lock", "expected"),
    [
        (A, B, B, B, B, (A, "flag")),
        (None, A + "/", B, B, B, (A, "env")),
        (None, None, A, B, B, (A, "project")),
        (None, None, None, A, B, (A, "global")),
        (None, None, None, None, A, (A, "lock")),
        (None, None, None, None, None, (DEFAULT_REGISTRY_URL, "default")),
    ],
)
def test_the_registry_and_where_it_came_from(monkeypatch: pytest.MonkeyPatch, clean: Path, explicit: str | None,
                                             env: str | None, manifest: str | None, config: str | None,
                                             lock: str | None, expected: tuple[str, str]) -> None:
    if env:
        monkeypatch.setenv("STRAWPOT_REGISTRY_URL", env)
    if config:
        clean.write_text(f'[registry]\nurl = "{config}"\n')
    project = clean.parent / "project"
    project.mkdir()
    if manifest:
        (project / "strawpot.toml").write_text(f'[registry]\nurl = "{manifest}"\n')
    chosen = choose_registry(Project(project), explicit, lock)
    assert (chosen.url, chosen.origin) == expected


@pytest.mark.parametrize(
    ("registry", "config", "env_url", "scope", "sent"),
    [
        ((A, "global"), A, None, None, True),
        ((DEFAULT_REGISTRY_URL, "default"), None, None, None, True),
        ((B, "project"), A, None, None, False),
        ((B, "lock"), None, None, None, False),
        ((A, "project"), A, None, None, True),  # the project names the user's own registry
        ((B, "flag"), A, None, None, True),
        ((B, "env"), A, B, None, True),
        ((B, "project"), A, None, B + "/", True),  # STRAWPOT_TOKEN_REGISTRY names it
        ((A, "global"), A, None, B, False),  # ... and then only it
        ((B, "flag"), A, None, A, False),
    ],
)
def test_strawpot_token_goes_only_where_it_is_meant_for(monkeypatch: pytest.MonkeyPatch, clean: Path,
                                                         capsys: pytest.CaptureFixture[str], registry: tuple[str, str],
                                                         config: str | None, env_url: str | None, scope: str | None,
                                                         sent: bool) -> None:
    monkeypatch.setenv("STRAWPOT_TOKEN", "sh_env")
    if config:
        clean.write_text(f'[registry]\nurl = "{config}"\n')
    if env_url:
        monkeypatch.setenv("STRAWPOT_REGISTRY_URL", env_url)
    if scope:
        monkeypatch.setenv("STRAWPOT_TOKEN_REGISTRY", scope)
    chosen = registry_at(*registry, load_settings(None))
    assert chosen.token == ("sh_env" if sent else None)
    assert capsys.readouterr().err == ""  # a read needs no token: a withheld one is said where one is needed
    assert (chosen.withheld is None) is sent


def test_a_stored_token_belongs_to_its_url(monkeypatch: pytest.MonkeyPatch, clean: Path) -> None:
    clean.write_text(f'[registry]\nurl = "{A}"\n[tokens]\n"{B}" = "sh_b"\n')
    assert registry_at(B, "project", load_settings(None)).token == "sh_b"
    assert registry_at(A, "global", load_settings(None)).token is None
    monkeypatch.setenv("STRAWPOT_TOKEN", "sh_env")
    assert registry_at(B, "project", load_settings(None)).token == "sh_b"  # the env token is withheld; B's own is sent
    assert registry_at(A, "global", load_settings(None)).token == "sh_env"


@pytest.mark.parametrize(
    ("environ", "stored", "expected"),
    [
        ({"STRAWPOT_TOKEN": "sh_env"}, "sh_stored", "sh_env"),  # STRAWPOT_TOKEN, meant for this registry, first
        ({}, "sh_stored", "sh_stored"),  # else what `strawpot login` stored for the URL
        ({"STRAWPOT_TOKEN": "sh_env", "STRAWPOT_TOKEN_REGISTRY": B}, "sh_stored", "sh_stored"),  # meant elsewhere
        ({"STRAWPOT_TOKEN": "sh_env", "STRAWPOT_TOKEN_REGISTRY": A + "/"}, None, "sh_env"),
        ({}, None, None),
    ],
)
def test_the_token_is_read_from_the_settings_the_registry_was_chosen_with(
        clean: Path, tmp_path: Path, environ: dict[str, str], stored: str | None, expected: str | None) -> None:
    """The environment given to the settings layer decides, not the process's own (which has no token here)."""
    clean.write_text(f'[registry]\nurl = "{A}"\n' + (f'[tokens]\n"{A}" = "{stored}"\n' if stored else ""))
    project = tmp_path / "p"
    project.mkdir()
    (project / "strawpot.toml").write_text(f'[tokens]\n"{A}" = "sh_project"\n')  # a project never holds one
    settings = load_settings(Project(project), environ=environ)
    chosen = choose_registry(Project(project), settings=settings)
    assert (chosen.url, chosen.origin) == (A, "global")
    assert chosen.token == expected
    assert (chosen.withheld is None) is ("STRAWPOT_TOKEN" not in environ or expected == "sh_env")


def test_time_limits_by_layer(monkeypatch: pytest.MonkeyPatch, clean: Path) -> None:
    project = clean.parent / "project"
    project.mkdir()
    assert timeouts(load_settings(Project(project))) == Timeouts(120.0, 600.0)
    assert timeouts(load_settings(Project(project))).read == 10.0
    clean.write_text("[registry]\ntimeout = 30\ndeadline = 100\n")
    assert timeouts(load_settings(Project(project))) == Timeouts(30.0, 100.0)
    (project / "strawpot.toml").write_text("[registry]\ntimeout = 5\n")
    assert timeouts(load_settings(Project(project))) == Timeouts(5.0, 100.0)
    assert timeouts(load_settings(Project(project))).read == 5.0
    monkeypatch.setenv("STRAWPOT_HTTP_TIMEOUT", "2.5")
    monkeypatch.setenv("STRAWPOT_REGISTRY_DEADLINE", "9")
    assert timeouts(load_settings(Project(project))) == Timeouts(2.5, 9.0)


@pytest.mark.parametrize(("bad", "message"), [
    ("0", "must be at least 0.001"), ("-3", "must be at least 0.001"), ("nan", "must be a finite number"),
    ("inf", "must be a finite number"), ("soon", "must be a number, not 'soon'"),
])
def test_a_time_limit_that_is_not_a_positive_number_is_a_usage_error(monkeypatch: pytest.MonkeyPatch, bad: str,
                                                                     message: str) -> None:
    monkeypatch.setenv("STRAWPOT_HTTP_TIMEOUT", bad)
    with pytest.raises(UsageError, match=f"STRAWPOT_HTTP_TIMEOUT: registry.timeout {message}"):
        load_settings(None)


@pytest.mark.parametrize("bad", ["true", '"x"', "[1]", "{a = 1}"])
def test_a_bad_time_limit_in_a_file_names_its_file_and_line(clean: Path, bad: str) -> None:
    project = clean.parent / "project"
    project.mkdir()
    (project / "strawpot.toml").write_text(f"[registry]\ndeadline = {bad}\n")
    with pytest.raises(UsageError, match=r"strawpot.toml:2: registry.deadline must be a number"):
        load_settings(Project(project))
