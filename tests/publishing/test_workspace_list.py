"""`[workspace]`: members from globs, the root found from anywhere inside, `strawpot workspace list`, bad input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from strawpot.model.layout import find_project_dir
from tests._cli import in_process


def test_list_from_inside_a_member_names_kind_version_and_local_dependencies(
    ws: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ws / "roles" / "ws-lead")
    code, out, _ = in_process(capsys, "workspace", "list", "--json")
    assert code == 0
    document = json.loads(out)
    assert document["root"] == str(ws.resolve())
    rows = {(m["kind"], m["slug"]): m for m in document["members"]}
    assert set(rows) == {("skill", "ws-notes"), ("role", "ws-designer"), ("role", "ws-checker"), ("role", "ws-lead")}
    assert rows[("role", "ws-designer")]["local_dependencies"] == ["skill:ws-notes", "role:ws-checker"]
    assert rows[("role", "ws-lead")] == {"kind": "role", "slug": "ws-lead", "version": "1.0.0", "path": "roles/ws-lead",
                                         "local_dependencies": ["role:ws-designer", "role:ws-checker"]}
    code, out, _ = in_process(capsys, "workspace", "list")
    assert code == 0
    line = next(x for x in out.splitlines() if "ws-checker" in x.split()[1])
    assert line.split()[:4] == ["role", "ws-checker", "1.0.0", "roles/ws-checker"]
    assert line.endswith("needs: role:ws-designer")


def test_exclude_leaves_a_member_out(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (ws / "strawpot.toml").write_text('[workspace]\nmembers = ["skills/*", "roles/*"]\nexclude = ["roles/ws-l*"]\n')
    code, out, _ = in_process(capsys, "workspace", "list", "--json", "--project", str(ws))
    assert code == 0
    assert "ws-lead" not in [m["slug"] for m in json.loads(out)["members"]]


def test_root_is_found_from_a_member_with_its_own_manifest_but_not_from_a_nested_project(ws: Path) -> None:
    member = ws / "roles" / "ws-checker"
    (member / "strawpot.toml").write_text("[skills]\n")
    assert find_project_dir(member) == ws.resolve()
    other = ws / "examples" / "demo"
    other.mkdir(parents=True)
    (other / "strawpot.toml").write_text("[skills]\n")
    assert find_project_dir(other) == other.resolve()
    plain = ws / "docs"
    plain.mkdir()
    assert find_project_dir(plain) == ws.resolve()


def test_a_glob_matching_nothing_is_one_line_and_exit_2(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (ws / "strawpot.toml").write_text('[workspace]\nmembers = ["skills/*", "agents/*"]\n')
    code, out, err = in_process(capsys, "workspace", "list", "--project", str(ws))
    assert code == 2
    assert "workspace member glob 'agents/*' matches no folder" in err


def test_two_members_with_one_slug_are_refused(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copytree(ws / "roles" / "ws-lead", ws / "roles" / "ws-lead-copy")
    code, _, err = in_process(capsys, "workspace", "list", "--project", str(ws))
    assert code == 2
    assert "roles/ws-lead-copy: role 'ws-lead' is also the slug of member roles/ws-lead" in err


def test_a_folder_without_workspace_says_how_to_declare_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "strawpot.toml").write_text("[skills]\n")
    code, _, err = in_process(capsys, "workspace", "list", "--project", str(tmp_path))
    assert code == 2
    assert "declares no [workspace]" in err


def test_init_workspace_declares_the_package_folders_and_excludes_the_rest(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (ws / "strawpot.toml").unlink()
    (ws / "roles" / "_drafts").mkdir()
    (ws / "roles" / "ws-lead" / "examples").mkdir()  # a package's own folder is not a package
    code, _, err = in_process(capsys, "init", "--workspace", "--project", str(ws))
    assert code == 0, err
    text = (ws / "strawpot.toml").read_text()
    assert 'members = ["roles/*", "skills/*"]\nexclude = ["roles/_drafts"]\n' in text
    code, out, _ = in_process(capsys, "workspace", "list", "--json", "--project", str(ws))
    assert code == 0 and len(json.loads(out)["members"]) == 4


def test_init_workspace_refuses_two_packages_with_one_slug_and_writes_nothing(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (ws / "strawpot.toml").unlink()
    shutil.copytree(ws / "roles" / "ws-lead", ws / "roles" / "ws-lead-2")
    code, _, err = in_process(capsys, "init", "--workspace", "--project", str(ws))
    assert code == 2 and "is also the slug of member roles/ws-lead" in err
    assert not (ws / "strawpot.toml").exists()


def test_the_workspace_table_is_not_an_unknown_setting(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = in_process(capsys, "config", "show", "--project", str(ws))
    assert code == 0 and "unknown setting" not in err
