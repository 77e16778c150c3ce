"""login / whoami / logout / yank against a live reference registry on loopback, as subprocesses."""

from __future__ import annotations

import io
import stat
import tomllib

import pytest


def test_login_whoami_logout_round_trip(env, registry) -> None:
    login = env.run("login", "--registry", registry.url, "--token-stdin", input=registry.token + "\n")
    assert login.returncode == 0, login.stderr
    assert f"logged in to {registry.url} as alice" in login.stdout
    assert stat.S_IMODE(env.config_file.stat().st_mode) == 0o600
    assert tomllib.loads(env.config_file.read_text())["tokens"] == {registry.url: registry.token}
    assert [p.name for p in env.config_file.parent.iterdir()] == ["config.toml"]  # no temp file left behind

    who = env.run("whoami", "--registry", registry.url)
    assert who.returncode == 0, who.stderr
    assert who.stdout.strip() == f"alice, user on {registry.url}"

    as_json = env.run("whoami", "--registry", registry.url, "--json")
    assert as_json.returncode == 0
    assert '"handle": "alice"' in as_json.stdout and '"schema_version": 2' in as_json.stdout

    out = env.run("logout", "--registry", registry.url)
    assert out.returncode == 0 and f"logged out of {registry.url}" in out.stdout
    assert tomllib.loads(env.config_file.read_text()).get("tokens") == {}
    assert stat.S_IMODE(env.config_file.stat().st_mode) == 0o600

    again = env.run("whoami", "--registry", registry.url)
    assert again.returncode == 1
    assert f"error: no token for the registry {registry.url}" in again.stderr
    assert "strawpot login" in again.stderr and "Traceback" not in again.stderr
    assert "no token was stored" in env.run("logout", "--registry", registry.url).stdout


def test_login_keeps_other_settings_and_other_registries(env, registry) -> None:
    env.config_file.write_text('[registry]\nurl = "http://elsewhere.test"\n\n[tokens]\n"http://elsewhere.test" = "sh_other"\n')
    assert env.run("login", "--registry", registry.url, "--token-stdin", input=registry.token).returncode == 0
    config = tomllib.loads(env.config_file.read_text())
    assert config["registry"] == {"url": "http://elsewhere.test"}
    assert config["tokens"] == {"http://elsewhere.test": "sh_other", registry.url: registry.token}
    assert env.run("logout", "--registry", registry.url).returncode == 0
    assert tomllib.loads(env.config_file.read_text())["tokens"] == {"http://elsewhere.test": "sh_other"}


def test_a_bad_token_is_refused_and_not_stored(env, registry) -> None:
    bad = env.run("login", "--registry", registry.url, "--token-stdin", input="sh_" + "0" * 40)
    assert bad.returncode == 1
    assert f"the registry {registry.url} refused the token (HTTP 401)" in bad.stderr
    assert not env.config_file.exists()
    empty = env.run("login", "--registry", registry.url, "--token-stdin", input="\n")
    assert empty.returncode == 2 and "no token given" in empty.stderr


def test_the_environment_token_overrides_the_stored_one(env, registry) -> None:
    bob = registry.token_for("bob", admin=True)
    assert env.run("login", "--registry", registry.url, "--token-stdin", input=registry.token).returncode == 0
    who = env.run("whoami", "--registry", registry.url, extra={"STRAWPOT_TOKEN": bob})
    assert who.returncode == 0 and who.stdout.startswith("bob, admin on ")
    assert env.run("whoami", "--registry", registry.url).stdout.startswith("alice, ")
    logout = env.run("logout", "--registry", registry.url, extra={"STRAWPOT_TOKEN": bob})
    assert "STRAWPOT_TOKEN is set and is still used" in logout.stderr


def test_the_registry_url_comes_from_the_environment(env, registry) -> None:
    extra = {"STRAWPOT_REGISTRY_URL": registry.url, "STRAWPOT_TOKEN": registry.token}
    who = env.run("whoami", extra=extra)
    assert who.returncode == 0 and who.stdout.strip() == f"alice, user on {registry.url}"


def test_login_with_the_hidden_prompt(registry, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import rich_click

    from strawpot.cli import main
    from strawpot.config_files import config_path
    from strawpot.registry_choice import choose_registry

    asked: list[dict[str, object]] = []

    def fake_prompt(text: str, **kwargs: object) -> str:
        asked.append({"text": text, **kwargs})
        return f"  {registry.token}  "

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(rich_click, "prompt", fake_prompt)
    monkeypatch.setattr("sys.stdin", Terminal())  # the hidden prompt is for a terminal; a pipe is read as is
    assert main(["login", "--registry", registry.url]) == 0
    assert asked and asked[0]["hide_input"] is True
    assert choose_registry(None, registry.url).token == registry.token
    assert stat.S_IMODE(config_path().stat().st_mode) == 0o600
    capsys.readouterr()


def test_whoami_unreachable_is_exit_6(env, closed_port_url: str) -> None:
    who = env.run("whoami", "--registry", closed_port_url, extra={"STRAWPOT_TOKEN": "sh_x"})
    assert who.returncode == 6 and "registry unreachable" in who.stderr and "Traceback" not in who.stderr


def test_yank_needs_the_owner_and_undo_restores(env, registry) -> None:
    pkg = env.root / "demo"
    pkg.mkdir()
    (pkg / "SKILL.md").write_text("---\nname: demo\ndescription: d\nversion: 1.0.0\n---\nbody\n")
    owner = {"STRAWPOT_TOKEN": registry.token, "STRAWPOT_REGISTRY_URL": registry.url}
    assert env.run("publish", str(pkg), extra=owner).returncode == 0

    mallory = {"STRAWPOT_TOKEN": registry.token_for("mallory"), "STRAWPOT_REGISTRY_URL": registry.url}
    refused = env.run("yank", "skill", "demo", "1.0.0", extra=mallory)
    assert refused.returncode == 1 and "refused to yank skill demo 1.0.0 (HTTP 403)" in refused.stderr

    yank = env.run("yank", "skill", "demo", "1.0.0", "--json", extra=owner)
    assert yank.returncode == 0, yank.stderr
    assert '"yanked": true' in yank.stdout
    versions = _versions(registry.url, "skills", "demo")
    assert versions == {"1.0.0": True}

    undo = env.run("yank", "skills", "demo", "1.0.0", "--undo", extra=owner)
    assert undo.returncode == 0 and undo.stdout.strip() == f"restored skill demo 1.0.0 on {registry.url}"
    assert _versions(registry.url, "skills", "demo") == {"1.0.0": False}

    missing = env.run("yank", "skill", "demo", "9.9.9", extra=owner)
    assert missing.returncode == 2 and "skill demo 9.9.9 is not on" in missing.stderr
    for args, message in [
        (("gadget", "demo", "1.0.0"), "unknown package kind 'gadget'"),
        (("skill", "Demo!", "1.0.0"), "not a valid slug"),
        (("skill", "demo", "1.0"), "invalid version '1.0'"),
    ]:
        bad = env.run("yank", *args, extra=owner)
        assert bad.returncode == 2 and message in bad.stderr, bad.stderr
    no_token = env.run("yank", "skill", "demo", "1.0.0", "--registry", registry.url)
    assert no_token.returncode == 1 and "no token for the registry" in no_token.stderr


def _versions(url: str, kinds: str, slug: str) -> dict[str, bool]:
    import httpx

    body = httpx.get(f"{url}/api/v1/{kinds}/{slug}/versions").json()
    return {v["version"]: v["yanked"] for v in body["versions"]}


def test_publish_uses_the_token_stored_by_login(env, registry) -> None:
    assert env.run("login", "--registry", registry.url, "--token-stdin", input=registry.token).returncode == 0
    pkg = env.root / "stored"
    pkg.mkdir()
    (pkg / "SKILL.md").write_text("---\nname: stored\ndescription: d\nversion: 1.0.0\n---\nbody\n")
    result = env.run("publish", str(pkg), "--registry", registry.url)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"published skill stored 1.0.0 to {registry.url}")
    other = env.run("publish", str(pkg), "--registry", registry.url + "/")  # same registry, trailing slash
    assert other.returncode == 1 and "already exists" in other.stderr
