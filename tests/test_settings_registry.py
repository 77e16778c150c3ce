"""The registry a command talks to, the token it may send there, and its time limits (strawpot/settings.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from strawpot import settings
from strawpot.model.errors import UsageError
from strawpot.settings import DEFAULT_REGISTRY_URL, Registry, choose_registry, registry_token, timeouts

A, B = "http://a.test", "http://b.test"


@pytest.fixture(autouse=True)
def clean(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in ("STRAWPOT_REGISTRY_URL", "STRAWPOT_TOKEN", "STRAWPOT_TOKEN_REGISTRY", "STRAWPOT_HTTP_TIMEOUT",
                 "STRAWPOT_REGISTRY_DEADLINE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("STRAWPOT_CONFIG_DIR", str(tmp_path))
    monkeypatch.setattr(settings, "_warned", set())
    return tmp_path / "config.toml"


@pytest.mark.parametrize(
    ("explicit", "env", "manifest", "config", "lock", "expected"),
    [
        (A, B, B, B, B, Registry(A, "flag")),
        (None, A + "/", B, B, B, Registry(A, "env")),
        (None, None, A, B, B, Registry(A, "project")),
        (None, None, None, A, B, Registry(A, "config")),
        (None, None, None, None, A, Registry(A, "lock")),
        (None, None, None, None, None, Registry(DEFAULT_REGISTRY_URL, "default")),
    ],
)
def test_the_registry_and_where_it_came_from(monkeypatch: pytest.MonkeyPatch, clean: Path, explicit: str | None,
                                             env: str | None, manifest: str | None, config: str | None,
                                             lock: str | None, expected: Registry) -> None:
    if env:
        monkeypatch.setenv("STRAWPOT_REGISTRY_URL", env)
    if config:
        clean.write_text(f'[registry]\nurl = "{config}"\n')
    assert choose_registry(explicit, manifest, lock) == expected


@pytest.mark.parametrize(
    ("registry", "config", "env_url", "scope", "sent"),
    [
        (Registry(A, "config"), A, None, None, True),
        (Registry(DEFAULT_REGISTRY_URL, "default"), None, None, None, True),
        (Registry(B, "project"), A, None, None, False),
        (Registry(B, "lock"), None, None, None, False),
        (Registry(A, "project"), A, None, None, True),  # the project names the user's own registry
        (Registry(B, "flag"), A, None, None, True),
        (Registry(B, "env"), A, B, None, True),
        (Registry(B, "project"), A, None, B + "/", True),  # STRAWPOT_TOKEN_REGISTRY names it
        (Registry(A, "config"), A, None, B, False),  # ... and then only it
        (Registry(B, "flag"), A, None, A, False),
    ],
)
def test_strawpot_token_goes_only_where_it_is_meant_for(monkeypatch: pytest.MonkeyPatch, clean: Path,
                                                         capsys: pytest.CaptureFixture[str], registry: Registry,
                                                         config: str | None, env_url: str | None, scope: str | None,
                                                         sent: bool) -> None:
    monkeypatch.setenv("STRAWPOT_TOKEN", "sh_env")
    if config:
        clean.write_text(f'[registry]\nurl = "{config}"\n')
    if env_url:
        monkeypatch.setenv("STRAWPOT_REGISTRY_URL", env_url)
    if scope:
        monkeypatch.setenv("STRAWPOT_TOKEN_REGISTRY", scope)
    assert registry_token(registry) == ("sh_env" if sent else None)
    assert registry_token(registry) == ("sh_env" if sent else None)
    warnings = capsys.readouterr().err.count("warning: STRAWPOT_TOKEN is not sent to")
    assert warnings == (0 if sent else 1)  # said once, however often the token is asked for


def test_a_stored_token_belongs_to_its_url(monkeypatch: pytest.MonkeyPatch, clean: Path) -> None:
    clean.write_text(f'[registry]\nurl = "{A}"\n[tokens]\n"{B}" = "sh_b"\n')
    assert registry_token(Registry(B, "project")) == "sh_b"
    assert registry_token(Registry(A, "config")) is None
    monkeypatch.setenv("STRAWPOT_TOKEN", "sh_env")
    assert registry_token(Registry(B, "project")) == "sh_b"  # the env token is withheld; B's own is sent
    assert registry_token(Registry(A, "config")) == "sh_env"


def test_time_limits_by_layer(monkeypatch: pytest.MonkeyPatch, clean: Path) -> None:
    assert timeouts() == settings.Timeouts(120.0, 600.0)
    assert timeouts().read == 10.0
    clean.write_text("[registry]\ntimeout = 30\ndeadline = 100\n")
    assert timeouts() == settings.Timeouts(30.0, 100.0)
    assert timeouts({"timeout": 5}) == settings.Timeouts(5.0, 100.0)
    assert timeouts({"timeout": 5}).read == 5.0
    monkeypatch.setenv("STRAWPOT_HTTP_TIMEOUT", "2.5")
    monkeypatch.setenv("STRAWPOT_REGISTRY_DEADLINE", "9")
    assert timeouts({"timeout": 5, "deadline": 50}) == settings.Timeouts(2.5, 9.0)


@pytest.mark.parametrize("bad", ["0", "-3", "nan", "inf", "soon", ""])
def test_a_time_limit_that_is_not_a_positive_number_is_a_usage_error(monkeypatch: pytest.MonkeyPatch, bad: str) -> None:
    monkeypatch.setenv("STRAWPOT_HTTP_TIMEOUT", bad)
    with pytest.raises(UsageError, match="STRAWPOT_HTTP_TIMEOUT must be a number of seconds above 0"):
        timeouts()


@pytest.mark.parametrize("bad", [True, "x", [1], {"a": 1}])
def test_a_bad_time_limit_in_a_file_names_its_file(bad: object) -> None:
    with pytest.raises(UsageError, match=r"\[registry\] in strawpot.toml: deadline must be"):
        timeouts({"deadline": bad})
