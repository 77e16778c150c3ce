"""Package validation: every problem of a package at once, with file and field; file collection rules."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from strawpot.model.kinds import Kind
from strawpot.model.package import (
    MAX_FILE_SIZE,
    MAX_FILES,
    MAX_TOTAL_SIZE,
    Issue,
    PackageInvalid,
    detect_kind,
    parse_package,
    slug_error,
)
from strawpot.model.package_folder import collect_files, load_package
from strawpot.model.params import ParamSpec

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _issues(path: Path) -> list[tuple[str, str]]:
    with pytest.raises(PackageInvalid) as info:
        load_package(path)
    return [(i.file, i.field) for i in info.value.issues]


def _skill(name: str = "demo", extra: str = "") -> bytes:
    return f"---\nname: {name}\ndescription: A demo.\nversion: 1.0.0\n{extra}---\n\nBody.\n".encode()


# -- the fixtures -----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", sorted(p for p in (FIXTURES / "skills").iterdir() if p.is_dir()), ids=lambda p: p.name)
def test_every_fixture_skill_is_valid(path: Path) -> None:
    package = load_package(path)
    assert package.kind is Kind.SKILL
    assert package.name == path.name
    assert package.version is not None


@pytest.mark.parametrize("path", sorted(p for p in (FIXTURES / "roles").iterdir() if p.is_dir()), ids=lambda p: p.name)
def test_every_fixture_role_is_valid(path: Path) -> None:
    package = load_package(path)
    assert package.kind is Kind.ROLE
    assert package.name == path.name
    assert set(package.files) == {"ROLE.md"}


def test_role_dependencies_are_typed_and_keep_their_specifiers() -> None:
    package = load_package(FIXTURES / "roles" / "reviewer")
    assert [(d.kind, d.name, d.spec) for d in package.dependencies] == [
        (Kind.SKILL, "code-review", "*"),
        (Kind.SKILL, "security-baseline", "*"),
        (Kind.ROLE, "implementer", "*"),
    ]
    assert package.default_agent == "stub-agent"


def test_bad_skill_reports_every_seeded_error_at_once() -> None:
    assert _issues(FIXTURES / "broken" / "bad-skill") == [
        ("SKILL.md", "name"),
        ("SKILL.md", "version"),
        ("SKILL.md", "description"),
        ("SKILL.md", "metadata.strawpot.dependencies[0]"),
        ("SKILL.md", "metadata.strawpot.dependencies[1]"),
        ("SKILL.md", "metadata.strawpot.bin.plan9"),
    ]


def test_bad_skill_messages_say_what_is_wrong() -> None:
    with pytest.raises(PackageInvalid) as info:
        load_package(FIXTURES / "broken" / "bad-skill")
    text = {i.field: i.message for i in info.value.issues}
    assert "'Bad_Skill' is not a valid slug" in text["name"]
    assert "'1.0'" in text["version"]
    assert text["description"] == "is required"
    assert "'>>1'" in text["metadata.strawpot.dependencies[0]"]
    assert "not 42" in text["metadata.strawpot.dependencies[1]"]
    assert text["metadata.strawpot.bin.plan9"] == "unknown OS (use linux, macos, windows)"
    assert "6 problems" in str(info.value)


def test_bad_agent_reports_its_escaping_bin() -> None:
    with pytest.raises(PackageInvalid) as info:
        load_package(FIXTURES / "broken" / "bad-agent")
    assert [str(i) for i in info.value.issues] == [  # its missing linux wrapper is a warning (Package.warnings)
        "AGENT.md: metadata.strawpot.bin.macos: is outside the package: "
        "path '../../outside' has an empty, '.' or '..' component",
    ]


def test_bad_yaml_reports_line_and_column() -> None:
    with pytest.raises(PackageInvalid) as info:
        load_package(FIXTURES / "broken" / "bad-yaml")
    [issue] = info.value.issues
    assert (issue.file, issue.field) == ("SKILL.md", "frontmatter")
    assert issue.message.startswith("line 4, column 1: invalid YAML:")


def test_main_file_that_is_not_utf8_is_refused_with_the_byte_offset() -> None:
    raw = (FIXTURES / "broken" / "not-utf8" / "SKILL.md").read_bytes()
    with pytest.raises(PackageInvalid) as info:
        load_package(FIXTURES / "broken" / "not-utf8")
    [issue] = info.value.issues
    assert issue == Issue("SKILL.md", "", f"not UTF-8 text (byte {raw.index(b'caf') + 3})")


def test_limit_and_frontmatter_problems_are_reported_together() -> None:
    files = {"SKILL.md": b"---\nname: Bad\n---\n", "big.bin": b"x" * (MAX_FILE_SIZE + 1)}
    with pytest.raises(PackageInvalid) as info:
        parse_package(files)
    fields = [(i.file, i.field) for i in info.value.issues]
    assert ("big.bin", "") in fields
    assert ("SKILL.md", "name") in fields
    assert ("SKILL.md", "description") in fields


# -- parse_package rules ----------------------------------------------------------------------------


def test_detect_kind_needs_exactly_one_main_file() -> None:
    assert detect_kind(["SKILL.md", "notes.md"]) is Kind.SKILL
    assert detect_kind(["docs/SKILL.md"]) is None
    assert detect_kind(["SKILL.md", "ROLE.md"]) is None
    assert detect_kind([]) is None


def test_no_main_file() -> None:
    with pytest.raises(PackageInvalid, match="no single main file found"):
        parse_package({"README.md": b"hi"})


def test_main_file_missing_for_explicit_kind() -> None:
    with pytest.raises(PackageInvalid) as info:
        parse_package({"README.md": b"hi"}, kind=Kind.AGENT)
    assert info.value.issues == [Issue("AGENT.md", "", "main file is missing")]


def test_unsafe_upload_paths_are_issues_not_crashes() -> None:
    files = {"SKILL.md": _skill(), "../escape": b"x", "/abs": b"y"}
    with pytest.raises(PackageInvalid) as info:
        parse_package(files)
    assert {i.file for i in info.value.issues} == {"../escape", "/abs"}


def test_expected_name_must_equal_the_frontmatter_name() -> None:
    with pytest.raises(PackageInvalid) as info:
        parse_package({"SKILL.md": _skill("demo")}, expected_name="other")
    assert info.value.issues == [Issue("SKILL.md", "name", "is 'demo' but the package slug is 'other'")]


def test_role_is_exactly_role_md() -> None:
    role = b"---\nname: r\ndescription: d\n---\nbody\n"
    with pytest.raises(PackageInvalid) as info:
        parse_package({"ROLE.md": role, "extra.md": b"x"})
    assert [str(i) for i in info.value.issues] == [". : a role is exactly ROLE.md; remove: extra.md".replace(" :", ":")]


def test_too_many_files() -> None:
    files = {"SKILL.md": _skill(), **{f"f{i:03}.txt": b"" for i in range(MAX_FILES)}}
    with pytest.raises(PackageInvalid) as info:
        parse_package(files)
    assert [str(i) for i in info.value.issues] == [f".: {MAX_FILES + 1} files, more than the limit of {MAX_FILES}"]


def test_total_size_limit() -> None:
    chunk = b"x" * MAX_FILE_SIZE
    count = MAX_TOTAL_SIZE // MAX_FILE_SIZE + 1
    files = {"SKILL.md": _skill(), **{f"part{i}.bin": chunk for i in range(count)}}
    with pytest.raises(PackageInvalid) as info:
        parse_package(files)
    [issue] = info.value.issues
    assert issue.file == "." and f"more than the limit of {MAX_TOTAL_SIZE}" in issue.message


def test_a_valid_agent_with_tools_params_and_bin() -> None:
    agent = (
        b"---\nname: my-agent\ndescription: d\nversion: 0.1.0\nmetadata:\n  strawpot:\n"
        b"    bin:\n      linux: ./bin/run\n      macos: bin/run\n"
        b"    tools:\n      git:\n        description: Git\n        install:\n          linux: apt install git\n"
        b"    params:\n      model:\n        default: small\n"
        b"---\nbody\n"
    )
    package = parse_package({"AGENT.md": agent, "bin/run": b"#!/bin/sh\n"}, executables={"bin/run", "nope"})
    assert package.bin == {"linux": "bin/run", "macos": "bin/run"}
    assert package.executables == frozenset({"bin/run"})
    assert package.tools["git"].install == {"linux": "apt install git"}
    assert package.params == {"model": ParamSpec("model", "string", "small")}


def _agent_with_params(params_yaml: str) -> bytes:
    return (b"---\nname: my-agent\ndescription: d\nversion: 0.1.0\nmetadata:\n  strawpot:\n"
            b"    bin:\n      linux: bin/run\n    params:\n" + params_yaml.encode() + b"---\nbody\n")


def test_param_types_are_declared_or_inferred_from_the_default() -> None:
    agent = _agent_with_params(
        "      model: {default: claude-sonnet-4-6}\n"
        "      skip: {type: boolean, default: true}\n"
        "      turns: {default: 3, description: Max turns}\n"
        "      temperature: {type: number, default: 1}\n"
        "      name: {}\n"
        "      shorthand: 0.5\n")
    params = parse_package({"AGENT.md": agent, "bin/run": b"x"}).params
    assert {n: (p.type, p.default) for n, p in params.items()} == {
        "model": ("string", "claude-sonnet-4-6"), "skip": ("boolean", True), "turns": ("integer", 3),
        "temperature": ("number", 1), "name": ("string", None), "shorthand": ("number", 0.5)}
    assert params["turns"].description == "Max turns"


def test_param_type_and_default_are_validated_together() -> None:
    agent = _agent_with_params(
        '      careful: {type: boolean, default: "yes please"}\n'
        "      turns: {type: integer, default: 2.5}\n"
        "      colour: {type: colour, default: red}\n"
        "      model: {type: string, default: 4}\n")
    with pytest.raises(PackageInvalid) as info:
        parse_package({"AGENT.md": agent, "bin/run": b"x"})
    assert [str(i) for i in info.value.issues] == [
        "AGENT.md: metadata.strawpot.params.careful.default: 'yes please' is not a boolean (type: boolean)",
        "AGENT.md: metadata.strawpot.params.turns.default: 2.5 is not an integer (type: integer)",
        "AGENT.md: metadata.strawpot.params.colour.type: 'colour' is not a param type (use string, integer, number, boolean)",
        "AGENT.md: metadata.strawpot.params.model.default: 4 is not a string (type: string)",
    ]


def test_agent_without_bin_and_with_unknown_os() -> None:
    agent = b"---\nname: a\ndescription: d\nmetadata:\n  strawpot:\n    bin:\n      beos: run\n---\n"
    with pytest.raises(PackageInvalid) as info:
        parse_package({"AGENT.md": agent, "run": b""})
    assert [(i.field, i.message) for i in info.value.issues] == [
        ("metadata.strawpot.bin.beos", "unknown OS (use linux, macos, windows)")
    ]


@pytest.mark.parametrize(
    ("slug", "ok"),
    [("a", True), ("git-workflow", True), ("0day", True), ("a" * 64, True), ("a" * 65, False),
     ("-lead", False), ("Upper", False), ("under_score", False), ("", False), ("dot.ted", False)],
)
def test_slug_rule(slug: str, ok: bool) -> None:
    assert (slug_error(slug) is None) is ok


# -- collect_files ----------------------------------------------------------------------------------


def test_collect_ignores_dot_files_vcs_folders_and_ignore_patterns(tmp_path: Path) -> None:
    (tmp_path / "SKILL.md").write_bytes(_skill())
    (tmp_path / ".env").write_text("SECRET=1")
    for folder in (".git", ".hg", "__pycache__", "node_modules", ".venv"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "x").write_text("x")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "keep.md").write_text("keep")
    (tmp_path / "docs" / "draft.tmp").write_text("ignored by *.tmp")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "out.txt").write_text("ignored by build/")
    (tmp_path / ".strawpotignore").write_text("# comment\n*.tmp\nbuild/\n\n")
    files, executables, issues = collect_files(tmp_path)
    assert sorted(files) == ["SKILL.md", "docs/keep.md"]
    assert executables == frozenset()
    assert issues == []


def test_collect_records_the_executable_bit(tmp_path: Path) -> None:
    (tmp_path / "AGENT.md").write_text("x")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "run").write_text("#!/bin/sh\n")
    os.chmod(tmp_path / "bin" / "run", 0o755)
    _, executables, _ = collect_files(tmp_path)
    assert executables == frozenset({"bin/run"})


def test_collect_refuses_links(tmp_path: Path) -> None:
    (tmp_path / "SKILL.md").write_bytes(_skill())
    (tmp_path / "link.md").symlink_to(tmp_path / "SKILL.md")
    (tmp_path / "escape").symlink_to("/etc/passwd")
    files, _, issues = collect_files(tmp_path)
    assert sorted(files) == ["SKILL.md"]
    assert sorted(i.file for i in issues) == ["escape", "link.md"]
    assert all("links and special files" in i.message for i in issues)


def test_collect_refuses_a_fifo(tmp_path: Path) -> None:
    (tmp_path / "SKILL.md").write_bytes(_skill())
    os.mkfifo(tmp_path / "pipe")
    _, _, issues = collect_files(tmp_path)
    assert [i.file for i in issues] == ["pipe"]


def test_collect_names_an_oversized_file_without_reading_it(tmp_path: Path) -> None:
    (tmp_path / "SKILL.md").write_bytes(_skill())
    with open(tmp_path / "huge.bin", "wb") as fh:  # sparse: no 10 MB written to disk
        fh.truncate(MAX_FILE_SIZE + 1)
    files, _, issues = collect_files(tmp_path)
    assert "huge.bin" not in files
    assert issues == [Issue("huge.bin", "", f"{MAX_FILE_SIZE + 1} bytes, more than the limit of {MAX_FILE_SIZE} a file")]


def test_load_package_merges_collection_and_validation_issues(tmp_path: Path) -> None:
    (tmp_path / "SKILL.md").write_bytes(_skill("Bad_Name"))
    (tmp_path / "link").symlink_to("SKILL.md")
    assert _issues(tmp_path) == [("link", ""), ("SKILL.md", "name")]


def test_load_package_from_the_main_file_path(tmp_path: Path) -> None:
    (tmp_path / "SKILL.md").write_bytes(_skill())
    assert load_package(tmp_path / "SKILL.md").name == "demo"


def test_load_package_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(PackageInvalid, match="no such package folder"):
        load_package(tmp_path / "nope")


def test_exec_bits_are_not_lost_on_mode_0700(tmp_path: Path) -> None:
    (tmp_path / "AGENT.md").write_text("x")
    (tmp_path / "w").write_text("x")
    os.chmod(tmp_path / "w", stat.S_IRWXU)
    assert collect_files(tmp_path)[1] == frozenset({"w"})


def test_slug_with_a_trailing_newline_is_refused() -> None:
    # `re.match` with `$` accepts "abc\n": the name would reach paths and the registry with a newline in it
    from strawpot.model.package import slug_error

    assert slug_error("abc") is None
    assert slug_error("abc\n") is not None
    assert slug_error("abc\n\n") is not None


def test_collect_refuses_a_link_to_a_folder(tmp_path: Path) -> None:
    # os.walk lists it among the folders and never enters it: it was silently left out of the upload
    (tmp_path / "SKILL.md").write_bytes(_skill())
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "etc").symlink_to("/etc", target_is_directory=True)
    files, _, issues = collect_files(tmp_path)
    assert sorted(files) == ["SKILL.md"]
    assert [(i.file, i.message) for i in issues] == [("docs/etc", "links and special files are not allowed in a package")]
