"""A project's `[registry] timeout` reaches every command that talks to the registry, publishing ones included.

The registry here accepts each connection and never answers: a command gives up after the project's timeout
(0.5 s, over the global config's 60 s) with the documented one-line error and exit 6.
"""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._cli import strawpot
from tests._loopback_servers import silent_server

ROOT = Path(__file__).resolve().parents[2]
SKILL = ROOT / "fixtures" / "skills" / "git-workflow"


@pytest.fixture()
def held() -> list[list[float]]:
    """How long each request waited for the stalled registry (see silent_server)."""
    return []


@pytest.fixture()
def stalled(held: list[list[float]]) -> Iterator[str]:
    with silent_server(held=held) as url:
        yield url


def _waits(held: list[list[float]]) -> list[float]:
    """How long each request of the command (which has ended, its sockets closed) waited for an answer."""
    deadline = time.monotonic() + 60  # the server's threads notice the closed sockets in their own time
    while not all(held):
        assert time.monotonic() < deadline, held
        time.sleep(0.05)
    return [entry[0] for entry in held]


def _project(tmp_path: Path, url: str) -> tuple[Path, dict[str, str]]:
    config = tmp_path / "config"
    config.mkdir()
    (config / "config.toml").write_text("[registry]\ntimeout = 60\n")
    project = tmp_path / "project"
    project.mkdir()
    (project / "strawpot.toml").write_text(f'[registry]\nurl = "{url}"\ntimeout = 0.5\n')
    env = {"STRAWPOT_CONFIG_DIR": str(config), "STRAWPOT_CACHE_DIR": str(tmp_path / "cache"),
           "STRAWPOT_TOKEN": "sh_test", "STRAWPOT_TOKEN_REGISTRY": url,  # a token for the registry the project names
           "STRAWPOT_REGISTRY_URL": "", "STRAWPOT_HTTP_TIMEOUT": "", "STRAWPOT_REGISTRY_DEADLINE": ""}
    return project, env


@pytest.mark.parametrize("args", [
    ("publish", str(SKILL)),
    ("publish", "--workspace"),
    ("yank", "skill", "git-workflow", "1.0.0"),
    ("whoami",),
    ("version", "--bump", "patch", "--workspace"),
    ("search", "git"),
    ("info", "skill", "git-workflow"),
], ids=lambda args: " ".join(args[:2]))
def test_the_project_timeout_reaches_the_command(tmp_path: Path, stalled: str, held: list[list[float]],
                                                 args: tuple[str, ...]) -> None:
    project, env = _project(tmp_path, stalled)
    if "--workspace" in args:
        shutil.copytree(SKILL, project / "git-workflow")
        with (project / "strawpot.toml").open("a") as manifest:
            manifest.write('[workspace]\nmembers = ["git-workflow"]\n')
    result = strawpot(*args, cwd=project, extra_env=env, timeout=60)
    assert result.returncode == 6, result.stderr
    first = result.stderr.splitlines()[0]
    assert re.fullmatch(rf"error: registry timed out: no complete answer from {re.escape(stalled)}/\S+ "
                        r"within 0\.5 s \(the request deadline\)", first), result.stderr
    # measured by the server, from the request to the hang-up (not the command's start-up): the global config's
    # limit would have waited at least one 10 s read (READ_TIMEOUT) on each
    waits = _waits(held)
    assert waits and max(waits) < 8, waits


def test_the_project_timeout_reaches_login(tmp_path: Path, stalled: str) -> None:
    project, env = _project(tmp_path, stalled)
    token = tmp_path / "token"
    token.write_text("sh_test\n")
    with token.open("rb") as given:
        result = strawpot("login", "--token-stdin", cwd=project, extra_env=env, timeout=60, stdin=given.fileno())
    assert result.returncode == 6, result.stderr
    assert re.fullmatch(rf"error: registry timed out: no complete answer from {re.escape(stalled)}/api/v1/whoami "
                        r"within 0\.5 s \(the request deadline\)", result.stderr.splitlines()[0]), result.stderr
    assert "tokens" not in (tmp_path / "config" / "config.toml").read_text()  # a token the registry never checked
