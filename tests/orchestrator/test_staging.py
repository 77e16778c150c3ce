"""Staging: each workspace gets its ROLE.md, transitive skills, delegatable roles and prompt, from the lock."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from orchestrator.staging import ROLE_PROMPT_FILE, Stager, StagingError
from strawpot.model.installed import InstalledTree
from strawpot.model.kinds import Kind
from strawpot.model.lockfile import Lockfile


def _stager(project) -> Stager:  # type: ignore[no-untyped-def]
    return Stager(InstalledTree(project.state_dir), Lockfile.load(project.root / "strawpot.lock"))


def _tree(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def test_stage_implementer(project, tmp_path: Path) -> None:
    stager = _stager(project.build())
    staged = stager.stage("implementer", tmp_path / "ws")
    assert _tree(tmp_path / "ws") == [
        "ROLE.md",
        ROLE_PROMPT_FILE,
        "roles/reviewer/ROLE.md",
        "skills/coding/SKILL.md",
        "skills/git-basics/SKILL.md",  # transitive: coding → git-basics
    ]
    assert staged.skills == ("coding", "git-basics")
    assert staged.allowed_roles == {"reviewer"} and not staged.wildcard
    assert (tmp_path / "ws" / "ROLE.md").read_text() == (project.state_dir / "roles/implementer/ROLE.md").read_text()


def test_role_prompt_is_body_then_skills_and_roles(project, make_role, tmp_path: Path) -> None:
    project.roles["implementer"] = make_role("implementer", skills=["coding"], roles=["reviewer"],
                                             body="Write the code.")
    staged = _stager(project.build()).stage("implementer", tmp_path / "ws")
    assert staged.role_prompt == (
        "Write the code.\n\n"
        "## Skills\n\nStaged under `skills/<slug>/` in your workspace:\n\n"
        "- **coding**: How to coding\n- **git-basics**: How to git-basics\n\n"
        "## Roles you can delegate to\n\n- **reviewer**: The reviewer role\n"
    )
    assert (tmp_path / "ws" / ROLE_PROMPT_FILE).read_text() == staged.role_prompt


def test_wildcard_role_gets_every_installed_role(project, tmp_path: Path) -> None:
    staged = _stager(project.build()).stage("lead", tmp_path / "ws")
    assert staged.wildcard
    assert staged.allowed_roles == {"orchestrator", "implementer", "reviewer", "lead"}
    assert sorted(p.name for p in (tmp_path / "ws" / "roles").iterdir()) == ["implementer", "lead", "orchestrator", "reviewer"]


def test_only_locked_files_are_staged_with_their_modes(project, tmp_path: Path) -> None:
    project.build()
    stray = project.state_dir / "skills" / "coding" / "notes.txt"
    stray.write_text("not in the lock")  # `start` refuses such a tree; staging ignores it regardless
    _stager(project).stage("implementer", tmp_path / "ws")
    assert not (tmp_path / "ws" / "skills" / "coding" / "notes.txt").exists()
    mode = (tmp_path / "ws" / "skills" / "coding" / "SKILL.md").stat().st_mode
    assert not mode & stat.S_IXUSR


def test_locked_version_not_whatever_is_on_disk(project, tmp_path: Path) -> None:
    project.build()
    (project.state_dir / "skills" / "git-basics" / ".version").write_text("9.9.9\n")  # a newer one on disk
    with pytest.raises(StagingError, match=r"skill git-basics is locked at 1\.0\.0 but version 9\.9\.9 is installed"):
        _stager(project).stage("implementer", tmp_path / "ws")


@pytest.mark.parametrize("planted", ["fifo", "endless link"])
def test_a_fifo_or_an_endless_link_planted_after_start_verified_is_refused_not_read(
        project, tmp_path: Path, planted: str) -> None:  # type: ignore[no-untyped-def]
    """A sub-agent is staged long after `start` verified the tree: a FIFO or a link to /dev/zero an agent put in its
    place since is refused in one line, not waited on or read without end (a hang fails the test by its timeout)."""
    stager = _stager(project.build())
    skill = project.state_dir / "skills" / "git-basics" / "SKILL.md"
    skill.unlink()
    if planted == "fifo":
        os.mkfifo(skill)
    else:
        skill.symlink_to("/dev/zero")
    outcome: list[BaseException | None] = []
    worker = threading.Thread(target=lambda: outcome.append(_raised(stager, tmp_path / "ws")), daemon=True)
    worker.start()
    worker.join(20)
    assert outcome, "staging waited on the planted file"
    assert isinstance(outcome[0], StagingError)
    assert "skill git-basics is incomplete: SKILL.md: links and special files are not allowed" in str(outcome[0])


def _raised(stager: Stager, ws: Path) -> BaseException | None:
    try:
        stager.stage("implementer", ws)
    except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
        return exc
    return None


def test_unlocked_role_is_refused(project, tmp_path: Path) -> None:
    with pytest.raises(StagingError, match="role 'ghost' is not in strawpot.lock"):
        _stager(project.build()).stage("ghost", tmp_path / "ws")


def test_delegatable_roles_come_from_lock_edges(project) -> None:
    stager = _stager(project.build())
    assert stager.delegatable_roles("orchestrator") == (frozenset({"implementer", "reviewer"}), False)
    assert stager.delegatable_roles("reviewer") == (frozenset(), False)
    assert stager.skill_closure("reviewer") == ["git-basics", "reviewing"]
    assert stager.locked(Kind.ROLE, "reviewer").version == "1.0.0"


def test_skills_wildcard_stages_every_locked_skill_next_to_the_named_ones(project, make_role, tmp_path: Path) -> None:
    project.roles["generalist"] = make_role("generalist", skills=["*", "planning"], roles=["reviewer"])
    stager = _stager(project.build())
    staged = stager.stage("generalist", tmp_path / "ws")
    assert staged.skills == ("coding", "git-basics", "planning", "reviewing")  # `*` and the named one, both
    assert sorted(p.name for p in (tmp_path / "ws" / "skills").iterdir()) == list(staged.skills)
    assert "- **reviewing**: How to reviewing" in staged.role_prompt
    # what only the `*` brought in: not `planning` (named), nor `reviewer` (named, and not a roles `*`)
    assert stager.by_wildcard("generalist") == ["skill:coding@1.0.0", "skill:git-basics@1.0.0", "skill:reviewing@1.0.0"]
    assert stager.by_wildcard("implementer") == []
    assert stager.by_wildcard("lead") == [f"role:{r}@1.0.0" for r in
                                          ("generalist", "implementer", "lead", "orchestrator", "reviewer")]
