"""prepare_upload: the exact fields and files a publish sends, and what it refuses before sending."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from strawpot.model.errors import UsageError
from strawpot.model.package import MAX_FILE_SIZE, MAX_FILES
from strawpot.publishing.prepare import dependencies_field, prepare_upload, set_frontmatter_version

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def write_package(dest: Path, files: dict[str, str], executables: tuple[str, ...] = ()) -> Path:
    for rel, content in files.items():
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        (dest / rel).write_text(content)
        if rel in executables:
            (dest / rel).chmod(0o755)
    return dest


SKILL = "---\nname: demo\ndescription: A demo skill.\nversion: 1.0.0\n---\n\n# Demo\n"


def test_skill_fields_in_upload_order_with_v1_dependencies() -> None:
    upload = prepare_upload(FIXTURES / "skills" / "code-review")
    assert list(upload.fields) == ["slug", "version", "changelog", "dependencies"]
    assert upload.fields["slug"] == "code-review"
    assert upload.fields["version"] == "1.2.0"
    assert json.loads(upload.fields["dependencies"]) == {"skills": ["diff-reading", "code-style"]}
    assert [f.path for f in upload.files] == ["SKILL.md"]
    assert upload.files[0].data == (FIXTURES / "skills" / "code-review" / "SKILL.md").read_bytes()


def test_role_dependencies_have_skills_and_roles() -> None:
    upload = prepare_upload(FIXTURES / "roles" / "reviewer")
    assert json.loads(upload.fields["dependencies"]) == {
        "skills": ["code-review", "security-baseline"],
        "roles": ["implementer"],
    }


def test_role_wildcard_is_sent_as_written(tmp_path: Path) -> None:
    role = "---\nname: boss\ndescription: d\nversion: 1.0.0\nmetadata:\n  strawpot:\n    dependencies:\n      roles: ['*']\n---\n"
    upload = prepare_upload(write_package(tmp_path / "boss", {"ROLE.md": role}))
    assert json.loads(upload.fields["dependencies"]) == {"skills": [], "roles": ["*"]}


def test_agent_has_no_dependencies_field_and_its_wrapper_stays_executable() -> None:
    upload = prepare_upload(FIXTURES / "agents" / "stub-agent", version="0.1.0")
    assert "dependencies" not in upload.fields
    assert dependencies_field(upload.package) is None
    by_path = {f.path: f for f in upload.files}
    assert by_path["bin/stub-wrapper"].executable and by_path["bin/stub-wrapper"].registry_executable
    assert not by_path["AGENT.md"].registry_executable
    assert upload.lost_exec_bits == []


def test_display_name_and_changelog(tmp_path: Path) -> None:
    text = SKILL.replace("version:", "displayName: Demo Skill\nchangelog: from the frontmatter\nversion:")
    pkg = write_package(tmp_path / "demo", {"SKILL.md": text})
    assert prepare_upload(pkg).fields["displayName"] == "Demo Skill"
    assert prepare_upload(pkg).fields["changelog"] == "from the frontmatter"
    assert prepare_upload(pkg, changelog="from the flag").fields["changelog"] == "from the flag"
    plain = write_package(tmp_path / "plain", {"SKILL.md": SKILL.replace("demo", "plain", 1)})
    assert "displayName" not in prepare_upload(plain).fields


def test_files_skip_dot_files_vcs_and_ignored_and_are_sorted(tmp_path: Path) -> None:
    pkg = write_package(tmp_path / "demo", {
        "SKILL.md": SKILL, "z.md": "z", "a/b.md": "b", ".env": "SECRET", ".git/config": "x",
        "node_modules/x.js": "x", "notes.tmp": "t", ".strawpotignore": "*.tmp\n",
        "scripts/run.sh": "#!/bin/sh\n",
    }, executables=("scripts/run.sh",))
    upload = prepare_upload(pkg)
    assert [f.path for f in upload.files] == ["SKILL.md", "a/b.md", "scripts/run.sh", "z.md"]
    assert upload.total_size == sum(f.size for f in upload.files) == len(SKILL) + 1 + 1 + len("#!/bin/sh\n")
    # a skill's script is executable here, but the registry keeps exec bits only for agent wrappers
    assert upload.lost_exec_bits == ["scripts/run.sh"]


# -- versions -----------------------------------------------------------------------------------------


def test_version_flag_wins_and_only_the_version_line_changes(tmp_path: Path) -> None:
    pkg = write_package(tmp_path / "demo", {"SKILL.md": SKILL})
    upload = prepare_upload(pkg, version="2.0.0")
    assert upload.version == upload.fields["version"] == upload.package.version == "2.0.0"
    assert upload.source_version == "1.0.0" and upload.version_rewritten
    assert upload.files[0].data.decode() == SKILL.replace("version: 1.0.0", "version: 2.0.0")
    assert (pkg / "SKILL.md").read_text() == SKILL  # the source folder is untouched


def test_same_version_in_both_changes_nothing(tmp_path: Path) -> None:
    pkg = write_package(tmp_path / "demo", {"SKILL.md": SKILL})
    upload = prepare_upload(pkg, version="1.0.0")
    assert not upload.version_rewritten
    assert upload.files[0].data == SKILL.encode()


UNVERSIONED = "---\nname: demo\ndescription: No version here.\n---\n\nBody.\n"


def test_version_flag_only_adds_the_line(tmp_path: Path) -> None:
    upload = prepare_upload(write_package(tmp_path / "demo", {"SKILL.md": UNVERSIONED}), version="0.1.0")
    assert upload.source_version is None and upload.version_rewritten
    assert upload.files[0].data.decode() == UNVERSIONED.replace("---\n", "---\nversion: 0.1.0\n", 1)


def test_no_version_anywhere_is_a_usage_error_with_a_hint(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no version to publish") as info:
        prepare_upload(write_package(tmp_path / "demo", {"SKILL.md": UNVERSIONED}))
    assert "--version" in (info.value.hint or "") and "SKILL.md" in (info.value.hint or "")


@pytest.mark.parametrize("bad", ["1.0", "v1.0.0", "01.0.0", "latest", ""])
def test_invalid_version_flag(tmp_path: Path, bad: str) -> None:
    pkg = write_package(tmp_path / "demo", {"SKILL.md": SKILL})
    with pytest.raises(UsageError, match="--version"):
        prepare_upload(pkg, version=bad)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("---\nname: a\nversion: 1.0.0\n---\nbody\n", "---\nname: a\nversion: 9.9.9\n---\nbody\n"),
        ("---\nname: a\nversion: 1.0.0  # note\n---\n", "---\nname: a\nversion: 9.9.9\n---\n"),
        ("---\r\nname: a\r\nversion: 1.0.0\r\n---\r\nb\r\n", "---\r\nname: a\r\nversion: 9.9.9\r\n---\r\nb\r\n"),
        # nested `version:` keys and the body are not the frontmatter's version line
        ("---\nname: a\nmeta:\n  version: 3\n---\nversion: body\n", "---\nversion: 9.9.9\nname: a\nmeta:\n  version: 3\n---\nversion: body\n"),
        ("---\nname: a\nversion: '1.0.0'\nx: 1\n---\n", "---\nname: a\nversion: 9.9.9\nx: 1\n---\n"),
    ],
)
def test_set_frontmatter_version(text: str, expected: str) -> None:
    assert set_frontmatter_version(text, "9.9.9") == expected


# -- refused locally ------------------------------------------------------------------------------------


def test_file_over_the_size_limit_is_named(tmp_path: Path) -> None:
    pkg = write_package(tmp_path / "demo", {"SKILL.md": SKILL, "data/huge.bin": ""})
    with open(pkg / "data" / "huge.bin", "wb") as fh:  # sparse: nothing big is written
        fh.truncate(MAX_FILE_SIZE + 1)
    with pytest.raises(UsageError) as info:
        prepare_upload(pkg)
    assert f"data/huge.bin: {MAX_FILE_SIZE + 1} bytes, more than the limit of {MAX_FILE_SIZE} a file" in info.value.message


def test_too_many_files(tmp_path: Path) -> None:
    pkg = write_package(tmp_path / "demo", {"SKILL.md": SKILL, **{f"f/{i}.md": "x" for i in range(MAX_FILES)}})
    with pytest.raises(UsageError, match=f"{MAX_FILES + 1} files, more than the limit of {MAX_FILES}"):
        prepare_upload(pkg)


def test_every_problem_is_listed(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as info:
        prepare_upload(FIXTURES / "broken" / "bad-skill")
    assert info.value.message.count("\n  SKILL.md: ") == 6
