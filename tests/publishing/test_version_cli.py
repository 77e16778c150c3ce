"""`strawpot version`: show, bump and set a package's version in place, keeping every other byte."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests._cli import in_process
from tests.publishing.conftest import Registry


@pytest.mark.parametrize(("bump", "expected"), [("patch", "1.4.3"), ("minor", "1.5.0"), ("major", "2.0.0")])
def test_bump_changes_only_the_version_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str], bump: str,
                                             expected: str) -> None:
    text = ("---\r\nname: demo\r\ndescription: d  # keep me\r\nversion: 1.4.2\r\nmetadata:\r\n  version: 1.4.2\r\n"
            "  strawpot:\r\n    dependencies: [a]\r\n---\r\n\r\nversion: 1.4.2 in the body stays\r\n")
    (tmp_path / "SKILL.md").write_bytes(text.encode())
    code, out, _ = in_process(capsys, "version", str(tmp_path), "--bump", bump)
    assert code == 0 and out.strip() == f"skill demo 1.4.2 -> {expected}"
    assert (tmp_path / "SKILL.md").read_bytes() == text.replace(
        "version: 1.4.2\r\nmetadata:\r\n  version: 1.4.2", f"version: {expected}\r\nmetadata:\r\n  version: {expected}"
    ).encode()
    code, out, _ = in_process(capsys, "version", str(tmp_path), "--json")
    assert json.loads(out)["packages"][0]["version"] == expected


def test_set_gives_a_package_without_version_its_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "SKILL.md").write_text("---\nname: demo\ndescription: d\n---\nbody\n")
    code, _, err = in_process(capsys, "version", str(tmp_path), "--bump", "patch")
    assert code == 2 and "has no version to bump" in err
    assert in_process(capsys, "version", str(tmp_path), "--set", "1.0.0")[0] == 0
    assert in_process(capsys, "version", str(tmp_path))[1].strip() == "skill demo 1.0.0"


def test_workspace_bump_raises_only_members_changed_since_their_published_version(
    ws: Path, registry: Registry, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STRAWPOT_REGISTRY_URL", registry.url)
    monkeypatch.setenv("STRAWPOT_TOKEN", registry.token)
    monkeypatch.chdir(ws)
    assert in_process(capsys, "publish", "--workspace")[0] == 0
    notes = ws / "skills" / "ws-notes" / "SKILL.md"
    notes.write_text(notes.read_text() + "\nOne more rule.\n")
    code, out, _ = in_process(capsys, "version", "--workspace", "--bump", "minor")
    assert code == 0
    # the designer pins ws-notes^1.1.0 now, so it changes too; the checker and the lead pin the designer
    assert sorted(out.splitlines()) == ["role ws-checker 1.0.0 -> 1.1.0", "role ws-designer 1.0.0 -> 1.1.0",
                                        "role ws-lead 1.0.0 -> 1.1.0", "skill ws-notes 1.0.0 -> 1.1.0"]
    code, out, _ = in_process(capsys, "publish", "--workspace")
    assert code == 0 and len(out.splitlines()) == 4
    (ws / "roles" / "ws-lead" / "ROLE.md").write_text((ws / "roles" / "ws-lead" / "ROLE.md").read_text() + "more\n")
    code, out, _ = in_process(capsys, "version", "--workspace", "--bump", "patch")
    assert "role ws-lead 1.1.0 -> 1.1.1" in out.splitlines() and "skill ws-notes 1.1.0" in out.splitlines()
