"""`strawpot start --runtime NAME` with no installed agent NAME: one error naming NAME and the agents there are."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests._cli import strawpot
from tests.orchestrator.conftest import ProjectFixture, standard_roles, standard_skills

OTHER_ROLES = sorted(set(standard_roles()) - {"lead"})


@pytest.fixture
def project(tmp_path: Path) -> ProjectFixture:
    (tmp_path / "proj").mkdir()
    return ProjectFixture(tmp_path / "proj", standard_roles(), standard_skills()).build()


def start(project: ProjectFixture, runtime: str, *extra: str) -> tuple[int, str, str]:
    done = strawpot("start", "--runtime", runtime, "--role", "lead", "--headless", "--task", "say:hi", *extra,
                    cwd=project.root, extra_env={"STRAWPOT_CONFIG_DIR": str(project.root.parent / "config")})
    return done.returncode, done.stdout, done.stderr


def test_an_unknown_runtime_is_named_with_the_installed_agents_and_no_other_role(project: ProjectFixture) -> None:
    code, _, err = start(project, "no-such-agent")
    assert code == 7, err
    first, hint = err.splitlines()  # one error line, one hint
    assert first == "error: --runtime no-such-agent: no installed agent has that name (installed: stub-agent)"
    assert hint == "hint: did you mean `--runtime stub-agent`? Or install it with `strawpot install agent no-such-agent`"
    assert [role for role in OTHER_ROLES if role in err] == []
    assert not list(project.sessions_dir.glob("*")), "nothing was started"


def test_a_runtime_far_from_every_agent_is_told_how_to_install_it(project: ProjectFixture) -> None:
    code, _, err = start(project, "zzz")
    assert (code, err.splitlines()[1]) == (7, "hint: install it with `strawpot install agent zzz`"), err


def test_a_misspelt_runtime_gets_a_did_you_mean(project: ProjectFixture) -> None:
    code, out, err = start(project, "stub-agnt", "--json")  # the error document on stdout
    assert code == 7, err
    error = json.loads(out)["error"]
    assert error["message"] == "--runtime stub-agnt: no installed agent has that name (installed: stub-agent)"
    assert error["hint"] == "did you mean `--runtime stub-agent`? Or install it with `strawpot install agent stub-agnt`"
