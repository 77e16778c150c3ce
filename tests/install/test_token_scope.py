"""STRAWPOT_TOKEN goes only to the registry it is meant for, never to one a project file names.

Two live registries on loopback, each behind a recording proxy that notes every request's
Authorization header; the strawpot command line runs through main() in this process, with its own environment."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._cli import strawpot_here
from tests._loopback_servers import RecordingProxy, recording_proxy

TOKEN = "sh_" + "5" * 40  # the user's STRAWPOT_TOKEN (any value: GETs need none, we only watch where it goes)


@pytest.fixture(scope="module")
def other_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A second live registry (B) with one skill, `only-on-b`."""
    from hub_client import HubClient
    from strawpot.publishing.prepare import prepare_upload
    from tests._live_registry import start_registry

    base = tmp_path_factory.mktemp("registry-b")
    with start_registry(base) as live:
        folder = base / "only-on-b"
        folder.mkdir()
        (folder / "SKILL.md").write_text("---\nname: only-on-b\ndescription: lives on B\nversion: 1.0.0\n---\n# B\n")
        upload = prepare_upload(folder)
        with HubClient(live.url, token=live.token) as client:
            client.publish(upload.kind.value, upload.fields, [(f.path, f.data) for f in upload.files])
        yield live.url


@pytest.fixture
def proxies(registry, other_registry: str) -> Iterator[tuple[RecordingProxy, RecordingProxy]]:  # type: ignore[no-untyped-def]
    with recording_proxy(registry.url) as a, recording_proxy(other_registry) as b:
        yield a, b


def run(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("STRAWPOT_", "STRAWHUB_"))}
    base.update(HOME=str(cwd), STRAWPOT_CONFIG_DIR=str(cwd / ".config"), STRAWPOT_CACHE_DIR=str(cwd / ".cache"),
                NO_COLOR="1", COLUMNS="300", **env)
    return strawpot_here(*args, cwd=cwd, env=base)


def project_naming(tmp_path: Path, url: str | None, global_url: str | None) -> Path:
    project = tmp_path / "cloned"
    project.mkdir()
    if url:
        (project / "strawpot.toml").write_text(f'[registry]\nurl = "{url}"\n')
    if global_url:
        (project / ".config").mkdir()
        (project / ".config" / "config.toml").write_text(f'[registry]\nurl = "{global_url}"\n')
    return project


def auth_seen(proxy: RecordingProxy) -> set[str | None]:
    assert proxy.seen, "the registry was never asked"
    return {auth for _, _, auth in proxy.seen}


def test_the_token_is_not_sent_to_a_registry_named_by_strawpot_toml(tmp_path: Path, proxies) -> None:  # type: ignore[no-untyped-def]
    a, b = proxies
    project = project_naming(tmp_path, b.url, global_url=a.url)
    result = run("install", "skill", "only-on-b", "--skip-tools", cwd=project, env={"STRAWPOT_TOKEN": TOKEN})
    assert result.returncode == 0, result.stderr
    assert auth_seen(b) == {None}
    assert not a.seen
    assert "STRAWPOT_TOKEN" not in result.stderr, result.stderr  # an anonymous read needs no token: no noise


@pytest.mark.parametrize("how", ["STRAWPOT_TOKEN_REGISTRY", "--registry", "STRAWPOT_REGISTRY_URL"])
def test_the_token_is_sent_where_the_user_named_the_registry(tmp_path: Path, proxies, how: str) -> None:  # type: ignore[no-untyped-def]
    a, b = proxies
    project = project_naming(tmp_path, b.url, global_url=a.url)
    env = {"STRAWPOT_TOKEN": TOKEN}
    flags: list[str] = []
    if how == "--registry":
        flags = ["--registry", b.url]
    else:
        env[how] = b.url
    result = run("install", "skill", "only-on-b", "--skip-tools", *flags, cwd=project, env=env)
    assert result.returncode == 0, result.stderr
    assert auth_seen(b) == {f"Bearer {TOKEN}"}
    assert "warning: STRAWPOT_TOKEN" not in result.stderr


def test_the_token_goes_to_the_global_registry_it_is_meant_for(tmp_path: Path, proxies) -> None:  # type: ignore[no-untyped-def]
    a, _ = proxies
    project = project_naming(tmp_path, None, global_url=a.url)
    result = run("install", "skill", "code-style", "--skip-tools", cwd=project, env={"STRAWPOT_TOKEN": TOKEN})
    assert result.returncode == 0, result.stderr
    assert auth_seen(a) == {f"Bearer {TOKEN}"}


def test_the_token_is_not_sent_to_the_source_a_lock_names(tmp_path: Path, proxies) -> None:  # type: ignore[no-untyped-def]
    _, b = proxies
    project = project_naming(tmp_path, b.url, global_url=None)
    assert run("install", "skill", "only-on-b", "--skip-tools", cwd=project, env={}).returncode == 0
    (project / "strawpot.toml").write_text('[skills]\nonly-on-b = "^1.0.0"\n')  # the lock alone names B now
    shutil.rmtree(project / ".strawpot")
    shutil.rmtree(project / ".cache")
    b.seen.clear()
    result = run("install", "--frozen", "--skip-tools", cwd=project, env={"STRAWPOT_TOKEN": TOKEN})
    assert result.returncode == 0, result.stderr
    assert auth_seen(b) == {None}
    assert "STRAWPOT_TOKEN" not in result.stderr, result.stderr


def test_a_token_stored_for_that_registry_is_still_its_own(tmp_path: Path, proxies) -> None:  # type: ignore[no-untyped-def]
    a, b = proxies
    project = project_naming(tmp_path, b.url, global_url=a.url)
    with (project / ".config" / "config.toml").open("a") as fh:
        fh.write(f'[tokens]\n"{b.url}" = "sh_stored_for_b"\n')
    result = run("install", "skill", "only-on-b", "--skip-tools", cwd=project, env={"STRAWPOT_TOKEN": TOKEN})
    assert result.returncode == 0, result.stderr
    assert auth_seen(b) == {"Bearer sh_stored_for_b"}


def test_publish_to_a_registry_named_by_the_project_does_not_send_the_token(tmp_path: Path, proxies) -> None:  # type: ignore[no-untyped-def]
    a, b = proxies
    project = project_naming(tmp_path, b.url, global_url=a.url)
    pkg = project / "mine"
    pkg.mkdir()
    (pkg / "SKILL.md").write_text("---\nname: mine\ndescription: d\nversion: 1.0.0\n---\n# mine\n")
    result = run("publish", str(pkg), cwd=project, env={"STRAWPOT_TOKEN": TOKEN})
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stderr.splitlines() == [
        f"error: no token for the registry {b.url}: STRAWPOT_TOKEN is set but not sent to {b.url} (named by "
        f"strawpot.toml): it is meant for {a.url}",
        f"hint: to send it there, set STRAWPOT_TOKEN_REGISTRY={b.url}; or log in with "
        f"`strawpot login --registry {b.url}`"], result.stderr  # not "set STRAWPOT_TOKEN": it is set
    assert all(auth is None for _, _, auth in b.seen)
    whoami = run("whoami", cwd=project, env={"STRAWPOT_TOKEN": TOKEN})
    assert whoami.returncode == 1 and f"set STRAWPOT_TOKEN_REGISTRY={b.url}" in whoami.stderr, whoami.stderr
    assert "or set STRAWPOT_TOKEN" not in whoami.stderr
    run("whoami", cwd=project, env={"STRAWPOT_TOKEN": TOKEN, "STRAWPOT_TOKEN_REGISTRY": b.url})
    assert f"Bearer {TOKEN}" in auth_seen(b)  # the fix the hint names works
