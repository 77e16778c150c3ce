"""`strawpot` shell completion through click's protocol in a real subprocess: kinds, installed roles and run ids
of a real project and run, answered at once even beside broken run folders."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests._cli import strawpot
from tests.orchestrator.conftest import ProjectFixture, standard_roles, standard_skills

KINDS = ["skill", "role", "agent", "memory", "integration"]
BROKEN = ["run_20990101_000000_aaaaaa", "run_20990101_000000_bbbbbb", "run_20990101_000000_cccccc"]


def complete(line: str, cwd: Path) -> list[str]:
    """What bash completion offers for `line` (the word being typed is its last, maybe empty), as the
    `complete -F` function `strawpot completion bash` prints asks for it."""
    words = line.split(" ")
    done = strawpot(cwd=cwd, timeout=20, extra_env={"_STRAWPOT_COMPLETE": "bash_complete",
                                                    "COMP_WORDS": line, "COMP_CWORD": str(len(words) - 1)})
    assert done.returncode == 0 and done.stderr == "", done.stderr
    kinds_values = [row.split(",", 1) for row in done.stdout.splitlines() if row]
    assert all(kind == "plain" for kind, _ in kinds_values), done.stdout
    return [value for _, value in kinds_values]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A built project with one real (headless) run, and run folders broken three ways beside it."""
    root = tmp_path_factory.mktemp("completion") / "proj"
    root.mkdir()
    ProjectFixture(root, standard_roles(), standard_skills(), policy={"agent_timeout": 20}).build()
    env = {"STRAWPOT_DATA_DIR": str(root.parent / "data"), "STRAWPOT_CONFIG_DIR": str(root.parent / "config"),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    ran = strawpot("start", "--headless", "--task", "echo:hi", cwd=root, extra_env=env)
    assert ran.returncode == 0, ran.stderr
    sessions = root / ".strawpot" / "sessions"
    [run_id] = [p.name for p in sessions.iterdir()]
    fifo, folder, file = (sessions / name for name in BROKEN)
    fifo.mkdir()
    os.mkfifo(fifo / "session.json")  # reading it would wait for ever
    (folder / "session.json").mkdir(parents=True)
    file.write_text("not a folder")
    return root, run_id


def test_the_kind_argument_completes_the_package_kinds(project: tuple[Path, str]) -> None:
    root, _ = project
    assert complete("strawpot info ", root) == KINDS
    assert complete("strawpot list r", root) == ["role"]
    assert complete("strawpot why a", root) == ["agent"]
    assert complete("strawpot install skill git-basics ", root) == KINDS  # where the next KIND SLUG pair starts
    assert complete("strawpot install skill ", root) == []  # a slug, not a kind


def test_role_completes_the_installed_roles_of_the_project_on_the_line(project: tuple[Path, str],
                                                                      tmp_path: Path) -> None:
    root, _ = project
    assert complete("strawpot start --role ", root) == ["implementer", "lead", "orchestrator", "reviewer"]
    assert complete("strawpot start --role re", root) == ["reviewer"]
    # from elsewhere, the project typed on the line is the one asked
    assert complete(f"strawpot schedule add x --project {root} --role i", tmp_path) == ["implementer"]
    assert complete("strawpot start --role ", tmp_path) == []  # no project here: nothing installed


def test_run_ids_complete_for_every_command_taking_one_and_broken_folders_are_passed_over(
        project: tuple[Path, str]) -> None:
    root, run_id = project
    for line in ("strawpot attach ", "strawpot cancel ", "strawpot resume ", "strawpot sessions show ",
                 "strawpot agents ", f"strawpot agents {run_id[:6]}"):
        assert complete(line, root) == [run_id], line


def test_a_word_completion_cannot_place_is_no_error_on_the_prompt(project: tuple[Path, str]) -> None:
    root, _ = project
    assert "attach" in complete("strawpot no-such-command ", root)  # click's own answer; `complete` checks stderr
    assert complete(f"strawpot attach --project {root.parent} ", root) == []  # the folder typed: no runs there
