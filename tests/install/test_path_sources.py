"""Path sources: `{ path = ... }` requirements and workspace members are staged from disk, locked with every
file's hash, re-staged when they change, never fetched; `--locked`, `--frozen`, `verify` and the fast no-op
check all see them, and the fast check answers what the full path answers."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from strawpot.install.fastcheck import manifest_hash, up_to_date
from strawpot.model.kinds import Kind
from strawpot.model.layout import Project
from strawpot.model.lockfile import Lockfile
from strawpot.model.manifest import Manifest
from tests._cli import in_process

WORKSPACE = Path(__file__).resolve().parents[2] / "fixtures" / "workspace"
SKILL = "---\nname: my-skill\ndescription: A local skill.\nmetadata:\n  version: 1.0.0\n---\n\nRule one.\n"
ROLE = ("---\nname: my-role\ndescription: A local role.\nmetadata:\n  version: 0.1.0\n  strawpot:\n"
        "    dependencies:\n      skills:\n        - my-skill\n---\n\nUse my-skill.\n")


@pytest.fixture
def repo(tmp_path: Path, unused_port: int, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project using a role and a skill beside it by path; the registry URL leads nowhere (never fetched)."""
    monkeypatch.setenv("STRAWPOT_REGISTRY_URL", f"http://127.0.0.1:{unused_port}")
    (tmp_path / "repo" / "skills" / "my-skill").mkdir(parents=True)
    (tmp_path / "repo" / "skills" / "my-skill" / "SKILL.md").write_text(SKILL)
    (tmp_path / "repo" / "roles" / "my-role").mkdir(parents=True)
    (tmp_path / "repo" / "roles" / "my-role" / "ROLE.md").write_text(ROLE)
    (tmp_path / "repo" / "proj").mkdir()
    (tmp_path / "repo" / "proj" / "strawpot.toml").write_text(
        '[skills]\nmy-skill = { path = "../skills/my-skill" }\n\n[roles]\nmy-role = { path = "../roles/my-role" }\n')
    return tmp_path / "repo"


def installed(proj: Path, plural: str, name: str, path: str) -> str:
    return (proj / ".strawpot" / plural / name / path).read_text()


def agree(proj: Path) -> None:
    """The fast check's manifest hash is the full path's."""
    assert manifest_hash(proj / "strawpot.toml") == Manifest.load(proj / "strawpot.toml").dependency_hash()


def test_a_role_using_a_skill_by_path_installs_restages_on_edit_and_locked_notices(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    proj = repo / "proj"
    code, _, err = in_process(capsys, "install", "--project", proj)
    assert code == 0, err
    lock = Lockfile.load(proj / "strawpot.lock")
    skill = lock.get(Kind.SKILL, "my-skill")
    assert skill is not None
    assert skill.source == "path+../skills/my-skill" and skill.archive_sha256 is None
    assert [(f.path, f.size) for f in skill.files] == [("SKILL.md", len(SKILL))]
    assert "path+../skills/my-skill" in (proj / "strawpot.lock").read_text()
    assert installed(proj, "skills", "my-skill", "SKILL.md") == SKILL
    agree(proj)
    assert up_to_date(proj / "strawpot.toml", proj / "strawpot.lock", proj / ".strawpot") is not None
    # files beside the manifest count in its hash: the no-op check may not answer from its bytes alone
    assert json.loads((proj / ".strawpot" / ".install-index.json").read_text())["manifest_sha256"] == ""

    # an edit of the same size: only the bytes say it changed
    (repo / "skills" / "my-skill" / "SKILL.md").write_text(SKILL.replace("Rule one.", "Rule two."))
    agree(proj)
    assert up_to_date(proj / "strawpot.toml", proj / "strawpot.lock", proj / ".strawpot") is None
    code, _, err = in_process(capsys, "install", "--locked", "--project", proj)
    assert code == 4 and "path source changed since: skill my-skill (../skills/my-skill)" in err
    code, _, err = in_process(capsys, "install", "--project", proj)
    assert code == 0, err
    assert installed(proj, "skills", "my-skill", "SKILL.md").endswith("Rule two.\n")
    assert up_to_date(proj / "strawpot.toml", proj / "strawpot.lock", proj / ".strawpot") is not None
    assert in_process(capsys, "verify", "--project", proj)[0] == 0
    (proj / ".strawpot" / "skills" / "my-skill" / "SKILL.md").write_text(SKILL)
    code, out, err = in_process(capsys, "verify", "--project", proj)
    assert code == 5 and "SKILL.md" in out + err


def test_a_lock_with_path_sources_on_another_machine(repo: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert in_process(capsys, "lock", "--project", repo / "proj")[0] == 0
    elsewhere = Path(shutil.copytree(repo, tmp_path / "clone"))
    code, _, err = in_process(capsys, "install", "--frozen", "--project", elsewhere / "proj")
    assert code == 0, err
    assert installed(elsewhere / "proj", "roles", "my-role", "ROLE.md") == ROLE
    shutil.rmtree(elsewhere / "skills")
    shutil.rmtree(elsewhere / "proj" / ".strawpot")
    code, _, err = in_process(capsys, "install", "--frozen", "--project", elsewhere / "proj")
    assert code == 2
    assert "skill my-skill: its path source ../skills/my-skill (from strawpot.lock) is missing" in err
    assert not (elsewhere / "proj" / ".strawpot" / "roles" / "my-role").exists()  # nothing half-installed
    code, _, err = in_process(capsys, "install", "--project", elsewhere / "proj")
    assert code == 2 and "skills.my-skill: path '../skills/my-skill' is not a folder" in err


def test_a_path_package_that_changed_after_locking_is_refused_at_staging(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    proj = repo / "proj"
    assert in_process(capsys, "lock", "--project", proj)[0] == 0
    (repo / "roles" / "my-role" / "notes.md").write_text("added after the lock\n")
    code, _, err = in_process(capsys, "install", "--frozen", "--project", proj)
    assert code == 5
    assert "role my-role 0.1.0 (path+../roles/my-role) changed since it was locked: notes.md: not in the lock" in err
    assert not (proj / ".strawpot" / "roles" / "my-role").exists()


def test_inside_a_workspace_a_dependency_on_a_member_is_the_member(
    tmp_path: Path, unused_port: int, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STRAWPOT_REGISTRY_URL", f"http://127.0.0.1:{unused_port}")
    ws = Path(shutil.copytree(WORKSPACE, tmp_path / "ws"))
    with (ws / "strawpot.toml").open("a") as fh:
        fh.write('\n[roles]\nws-lead = "*"\n')
    monkeypatch.chdir(ws / "roles" / "ws-lead")
    code, _, err = in_process(capsys, "install")
    assert code == 0, err
    lock = Lockfile.load(ws / "strawpot.lock")
    assert {(p.name, p.source) for p in lock.packages} == {
        ("ws-notes", "path+skills/ws-notes"), ("ws-checker", "path+roles/ws-checker"),
        ("ws-designer", "path+roles/ws-designer"), ("ws-lead", "path+roles/ws-lead")}
    agree(ws)
    assert Project.at(None).dir == ws.resolve()
    (ws / "roles" / "ws-checker" / "ROLE.md").write_text(
        (ws / "roles" / "ws-checker" / "ROLE.md").read_text() + "One more check.\n")
    agree(ws)
    assert up_to_date(ws / "strawpot.toml", ws / "strawpot.lock", ws / ".strawpot") is None
    assert in_process(capsys, "install")[0] == 0
    assert installed(ws, "roles", "ws-checker", "ROLE.md").endswith("One more check.\n")


def test_outdated_asks_the_registry_nothing_about_path_sources(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    proj = repo / "proj"
    assert in_process(capsys, "install", "--project", proj)[0] == 0
    code, out, err = in_process(capsys, "outdated", "--project", proj, "--json")  # the registry URL leads nowhere
    assert code == 0, err
    assert json.loads(out)["packages"] == []
