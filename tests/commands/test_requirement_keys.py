"""A misspelt key in a requirement table of strawpot.toml is refused in one line (exit 2), never ignored."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests._cli import strawpot_here

ROOT = Path(__file__).resolve().parents[2]
# The registry is never asked: the manifest is refused first (a port nothing listens on would say "unreachable").
NOWHERE = {"STRAWPOT_REGISTRY_URL": "http://127.0.0.1:9", "STRAWPOT_HTTP_TIMEOUT": "2"}


def _project(tmp_path: Path, text: str) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "strawpot.toml").write_text(text)
    return project


def _env(tmp_path: Path) -> dict[str, str]:
    return {**NOWHERE, "STRAWPOT_CONFIG_DIR": str(tmp_path / "config"), "STRAWPOT_CACHE_DIR": str(tmp_path / "cache")}


@pytest.mark.parametrize(("text", "expected"), [
    ('[skills]\nfoo = { versoin = "^1" }\n',
     "[skills] foo: unknown key 'versoin' (a requirement takes version, path); did you mean 'version'?"),
    ('[roles.lead]\nversion = "*"\ndefault_agnet = "x"\n',
     "[roles] lead: unknown key 'default_agnet' (a requirement takes version, path, default_agent); "
     "did you mean 'default_agent'?"),
    ('[memories]\nnotes = { version = "^1", pth = "../notes" }\n',
     "[memories] notes: unknown key 'pth' (a requirement takes version, path); did you mean 'path'?"),
    ('[agents.coder]\nversoin = "^1"\nmodel = "big"\n',
     "[agents] coder: unknown key 'versoin' (a requirement takes version, path; its other keys are the agent's "
     "params); did you mean 'version'?"),
])
@pytest.mark.parametrize("command", [("install",), ("lock",)])
def test_a_misspelt_requirement_key_is_refused(tmp_path: Path, text: str, expected: str,
                                               command: tuple[str, ...]) -> None:
    project = _project(tmp_path, text)
    result = strawpot_here(*command, cwd=project, extra_env=_env(tmp_path))
    assert result.returncode == 2, result.stderr
    first = result.stderr.splitlines()[0]
    assert first == f"error: {project / 'strawpot.toml'}: {expected}"
    assert "Traceback" not in result.stderr
    assert not (project / "strawpot.lock").exists()


def test_an_agents_params_are_not_taken_for_misspelt_keys(tmp_path: Path) -> None:
    """`[agents.<name>]` holds the agent's params: a key far from its own keys is a param, as before."""
    project = _project(tmp_path, '[agents.coder]\nmodel = "big"\nmax_turns = 3\n')
    result = strawpot_here("install", cwd=project, extra_env=_env(tmp_path))
    assert result.returncode == 0, result.stderr


def test_the_no_op_install_does_not_pass_a_misspelt_key(tmp_path: Path) -> None:
    """A lock made before the key was misspelt still matches the requirements the hash reads; the early
    (no-op) answer must not take that for "up to date": the full reader refuses the key."""
    skill = tmp_path / "git-workflow"
    shutil.copytree(ROOT / "fixtures" / "skills" / "git-workflow", skill)
    project = _project(tmp_path, '[skills]\ngit-workflow = { path = "../git-workflow" }\n')
    first = strawpot_here("install", cwd=project, extra_env=_env(tmp_path))
    assert first.returncode == 0, first.stderr
    (project / "strawpot.toml").write_text('[skills]\ngit-workflow = { path = "../git-workflow", verison = "1" }\n')
    result = strawpot_here("install", cwd=project, extra_env=_env(tmp_path))
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines()[0] == (
        f"error: {project / 'strawpot.toml'}: [skills] git-workflow: unknown key 'verison' (a requirement takes "
        "version, path); did you mean 'version'?")


def test_a_misspelt_workspace_key_is_refused(tmp_path: Path) -> None:
    """`[workspace] exlude = [...]` would publish what the user meant to leave out: refused, never ignored."""
    project = _project(tmp_path, '[workspace]\nmembers = ["skills/*"]\nexlude = ["skills/old"]\n')
    shutil.copytree(ROOT / "fixtures" / "skills" / "git-workflow", project / "skills" / "git-workflow")
    result = strawpot_here("publish", "--workspace", "--dry-run", cwd=project, extra_env=_env(tmp_path))
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines()[0] == (
        f"error: {project / 'strawpot.toml'}: [workspace] unknown key 'exlude' (it takes members, exclude); "
        "did you mean 'exclude'?")
