"""`strawpot publish --workspace` / `publish DIR...`: dependency order, cycles in one batch, re-runs skip what
the registry holds, a same version with other files refused, a failure says what was and was not published."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import httpx
import pytest

from strawpot.model.kinds import Kind
from strawpot.publishing.prepare import pin_dependencies
from tests._cli import in_process
from tests.publishing.conftest import Recorder, Registry


@pytest.fixture
def to_registry(registry: Registry, monkeypatch: pytest.MonkeyPatch) -> Registry:
    monkeypatch.setenv("STRAWPOT_REGISTRY_URL", registry.url)
    monkeypatch.setenv("STRAWPOT_TOKEN", registry.token)
    return registry


def versions(url: str, plural: str, slug: str) -> list[str]:
    answer = httpx.get(f"{url}/api/v1/{plural}/{slug}/versions")
    return [v["version"] for v in answer.json()["versions"]] if answer.status_code == 200 else []


def test_workspace_publishes_in_order_with_the_cycle_in_one_batch_and_a_rerun_publishes_nothing(
    ws: Path, to_registry: Registry, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = to_registry.url
    monkeypatch.chdir(ws / "roles" / "ws-lead")
    code, out, err = in_process(capsys, "publish", "--workspace", "--dry-run")
    assert code == 0, err
    assert out.splitlines() == [
        f"1. publish skill ws-notes 1.0.0 (POST {url}/api/v1/skills, 1 file)",
        f"2. publish together (POST {url}/api/v1/batch, they depend on each other): role ws-checker 1.0.0, "
        "role ws-designer 1.0.0",
        f"3. publish role ws-lead 1.0.0 (POST {url}/api/v1/roles, 1 file)",
    ]
    assert versions(url, "skills", "ws-notes") == []
    code, out, err = in_process(capsys, "publish", "--workspace")
    assert code == 0, err
    assert out.splitlines() == ["published skill ws-notes 1.0.0", "published role ws-checker 1.0.0",
                                "published role ws-designer 1.0.0", "published role ws-lead 1.0.0"]
    for plural, slug in (("roles", "ws-checker"), ("roles", "ws-designer"), ("roles", "ws-lead")):
        assert versions(url, plural, slug) == ["1.0.0"]
    uploaded = httpx.get(f"{url}/api/v1/roles/ws-designer/file", params={"path": "ROLE.md"}).text
    assert "        - ws-notes==1.0.0\n" in uploaded and "        - ws-checker==1.0.0\n" in uploaded
    code, out, err = in_process(capsys, "publish", "--workspace")
    assert code == 0
    assert out.strip() == f"nothing to publish: the 4 packages are on {url} with the same files"
    # a new version of one member: only it goes
    (ws / "roles" / "ws-lead" / "ROLE.md").write_text(
        (ws / "roles" / "ws-lead" / "ROLE.md").read_text().replace("version: 1.0.0", "version: 1.1.0"))
    code, out, _ = in_process(capsys, "publish", "--workspace", "--json")
    document = json.loads(out)
    assert code == 0 and document["published"] == ["role ws-lead 1.1.0"] and len(document["skipped"]) == 3


def test_dirs_mode_refuses_a_same_version_with_other_files_before_sending_anything(
    ws: Path, to_registry: Registry, capsys: pytest.CaptureFixture[str]
) -> None:
    dirs = [str(p) for p in sorted((ws / "roles").iterdir())] + [str(ws / "skills" / "ws-notes")]
    assert in_process(capsys, "publish", *dirs)[0] == 0
    checker = ws / "roles" / "ws-checker" / "ROLE.md"
    checker.write_text(checker.read_text() + "\nOne more rule.\n")
    lead = ws / "roles" / "ws-lead" / "ROLE.md"
    lead.write_text(lead.read_text().replace("version: 1.0.0", "version: 1.1.0"))
    code, _, err = in_process(capsys, "publish", *dirs)
    assert code == 1
    assert "role ws-checker 1.0.0 (" in err and "the registry holds this version with other content in ROLE.md" in err
    assert versions(to_registry.url, "roles", "ws-lead") == ["1.0.0"]  # nothing was sent


def test_a_refusal_stops_and_says_what_was_and_was_not_published(
    ws: Path, to_registry: Registry, capsys: pytest.CaptureFixture[str]
) -> None:
    lead = ws / "roles" / "ws-lead" / "ROLE.md"
    lead.write_text(lead.read_text().replace("        - ws-checker\n", "        - ws-checker==2.0.0\n"))
    code, _, err = in_process(capsys, "publish", str(ws / "skills" / "ws-notes"), *map(str, sorted((ws / "roles").iterdir())))
    assert code == 1
    assert "refused role ws-lead 1.0.0 (HTTP 400)" in err and "satisfies '==2.0.0'" in err
    assert "published: skill ws-notes 1.0.0, role ws-checker 1.0.0, role ws-designer 1.0.0" in err
    assert "not published: role ws-lead 1.0.0" in err
    assert versions(to_registry.url, "roles", "ws-designer") == ["1.0.0"]


def add_dependency(ws: Path, member: str, after: str, entry: str) -> None:
    main = ws / member / ("ROLE.md" if member.startswith("roles/") else "SKILL.md")
    text = main.read_text()
    assert f"        - {after}\n" in text
    main.write_text(text.replace(f"        - {after}\n", f"        - {after}\n        - {entry}\n", 1))


def test_a_member_whose_dependency_exists_nowhere_is_held_back_and_the_rest_published(
    ws: Path, to_registry: Registry, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    add_dependency(ws, "roles/ws-lead", "ws-checker", "ghost")
    monkeypatch.chdir(ws)
    code, out, err = in_process(capsys, "publish", "--workspace")
    assert code == 1
    assert out.splitlines() == ["published skill ws-notes 1.0.0", "published role ws-checker 1.0.0",
                                "published role ws-designer 1.0.0"]
    assert ("1 package held back, a dependency cannot be satisfied:\n  held back role ws-lead 1.0.0 (roles/ws-lead): "
            "needs role ghost, which is neither on the registry nor among these packages") in err
    assert versions(to_registry.url, "roles", "ws-lead") == []
    assert versions(to_registry.url, "roles", "ws-designer") == ["1.0.0"]
    code, out, err = in_process(capsys, "publish", "--workspace")  # again: the published are skipped, the same one held
    assert code == 1 and "held back role ws-lead 1.0.0" in err and "published" not in out


def test_two_broken_members_and_one_that_needs_a_broken_one(
    ws: Path, to_registry: Registry, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    add_dependency(ws, "roles/ws-checker", "ws-designer", "ghost")  # ws-designer and ws-lead need ws-checker
    (ws / "skills" / "ws-extra").mkdir()
    (ws / "skills" / "ws-extra" / "SKILL.md").write_text(
        "---\nname: ws-extra\ndescription: More notes.\nmetadata:\n  version: 1.0.0\n  strawpot:\n"
        "    dependencies:\n      - ghost-skill\n---\n\nNotes.\n")
    monkeypatch.chdir(ws)
    code, out, err = in_process(capsys, "publish", "--workspace", "--dry-run", "--json")
    assert code == 1
    held = {h["package"]: h for h in json.loads(out)["held_back"]}
    assert held["role ws-checker 1.0.0"]["needs"] == ("role ghost, which is neither on the registry nor among these "
                                                       "packages")
    assert held["role ws-checker 1.0.0"]["dependents"] == ["role ws-designer 1.0.0", "role ws-lead 1.0.0"]
    code, out, err = in_process(capsys, "publish", "--workspace")
    assert code == 1
    assert out.splitlines() == ["published skill ws-notes 1.0.0"]
    assert ("held back role ws-checker 1.0.0 (roles/ws-checker): needs role ghost, which is neither on the registry "
            "nor among these packages; and, since they need it: role ws-designer 1.0.0, role ws-lead 1.0.0") in err
    assert ("held back skill ws-extra 1.0.0 (skills/ws-extra): needs skill ghost-skill, which is neither on the "
            "registry nor among these packages") in err
    assert "4 packages held back" in err


def test_all_or_nothing_publishes_nothing_when_one_member_cannot_be_satisfied(
    ws: Path, to_registry: Registry, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    add_dependency(ws, "roles/ws-lead", "ws-checker", "ghost")
    monkeypatch.chdir(ws)
    code, _, err = in_process(capsys, "publish", "--workspace", "--all-or-nothing")
    assert code == 1
    assert "nothing was published (--all-or-nothing)" in err
    assert "role ws-lead 1.0.0 (roles/ws-lead) needs role ghost" in err
    assert versions(to_registry.url, "skills", "ws-notes") == []


def test_an_outside_dependency_no_registry_version_satisfies_is_held_back(
    ws: Path, to_registry: Registry, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "ROLE.md").write_text("---\nname: outside\ndescription: Elsewhere.\nmetadata:\n  version: 1.0.0\n"
                                     "---\n\nYou are elsewhere.\n")
    assert in_process(capsys, "publish", str(outside))[0] == 0
    add_dependency(ws, "roles/ws-lead", "ws-checker", "outside==2.0.0")
    monkeypatch.chdir(ws)
    code, _, err = in_process(capsys, "publish", "--workspace")
    assert code == 1
    assert ("held back role ws-lead 1.0.0 (roles/ws-lead): needs role outside==2.0.0, which no version on the "
            "registry satisfies (there: 1.0.0)") in err


def test_a_cycle_against_a_registry_without_batch_is_named_and_no_package_is_sent(
    ws: Path, recorder: Recorder, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder.reply[0] = (404, json.dumps({"error": "not found"}).encode())
    monkeypatch.setenv("STRAWPOT_TOKEN", "sh_" + "0" * 40)
    monkeypatch.chdir(ws)
    code, _, err = in_process(capsys, "publish", "--workspace", "--registry", recorder.url)
    assert code == 1
    assert "role ws-checker <-> role ws-designer" in err and "has no batch publish" in err
    assert "nothing was published" in err
    posts = [path for method, path in recorder.requests if method == "POST"]
    assert posts == ["/api/v1/batch"]  # the probe (an empty form); no package was sent


def test_several_packages_take_no_version_flag_and_one_slug_twice_is_refused(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lead = str(ws / "roles" / "ws-lead")
    code, _, err = in_process(capsys, "publish", lead, str(ws / "roles" / "ws-checker"), "--version", "2.0.0")
    assert code == 2 and "--version publishes one package" in err
    shutil.copytree(lead, ws / "copy")
    code, _, err = in_process(capsys, "publish", lead, str(ws / "copy"))
    assert code == 2 and "role 'ws-lead' is also the package in" in err


def test_pinning_keeps_every_other_byte() -> None:
    text = ("---\r\nname: a\r\nmetadata:\r\n  strawpot:\r\n    dependencies:\r\n      skills:\r\n        - 'x'  # mine\r\n"
            "        - y^2\r\n      roles:\r\n        - x\r\n---\r\n- x\r\n")
    pinned = pin_dependencies(text, Kind.ROLE, {(Kind.SKILL, "x"): "1.2.0", (Kind.ROLE, "x"): "3.0.0"})
    assert pinned == text.replace("- 'x'  # mine", "- 'x==1.2.0'  # mine").replace(
        "      roles:\r\n        - x\r\n", "      roles:\r\n        - x==3.0.0\r\n")


@pytest.mark.parametrize("linked", ["skills/ws-secret", "skills"])
def test_a_member_that_is_a_link_out_of_the_workspace_is_named_and_nothing_is_sent(
    ws: Path, to_registry: Registry, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path, linked: str
) -> None:
    outside = tmp_path / "elsewhere"  # a folder of the user's that a cloned repository points a member at
    shutil.copytree(ws / "skills", outside)
    secret = outside / "ws-secret" / "SKILL.md"
    secret.parent.mkdir()
    secret.write_text((outside / "ws-notes" / "SKILL.md").read_text().replace("name: ws-notes", "name: ws-secret"))
    if linked == "skills":
        shutil.rmtree(ws / "skills")
        (ws / "skills").symlink_to(outside)
    else:
        (ws / linked).symlink_to(outside / "ws-secret")
    monkeypatch.chdir(ws)
    first, also = ("ws-notes", " (and 1 other member)") if linked == "skills" else ("ws-secret", "")
    for args in (("publish", "--workspace"), ("workspace", "list")):
        code, out, err = in_process(capsys, *args)
        assert code == 2 and out == ""
        assert err.splitlines()[0] == (f"error: {ws / 'strawpot.toml'}: workspace member skills/{first} leads to "
                                       f"{outside / first}, outside the workspace {ws}{also}"), err
    assert versions(to_registry.url, "skills", "ws-secret") == versions(to_registry.url, "skills", "ws-notes") == []
