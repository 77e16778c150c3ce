"""Frontmatter splitting: YAML errors carry the line and column of the main file; hostile YAML is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from strawpot.model.frontmatter import MAX_DEPTH, MAX_FRONTMATTER_SIZE, FrontmatterError, split_frontmatter
from tests._cli import strawpot
from tests.model.hostile_yaml import CORPUS, main_file


def test_splits_metadata_and_body() -> None:
    meta, body = split_frontmatter("---\nname: x\ndescription: y\n---\n\n# Title\n\ntext\n")
    assert meta == {"name": "x", "description": "y"}
    assert body == "# Title\n\ntext"


def test_a_utf8_bom_is_accepted() -> None:
    meta, _ = split_frontmatter("\ufeff---\nname: x\ndescription: y\n---\nbody\n")
    assert meta["name"] == "x"


@pytest.mark.parametrize(
    ("text", "where"),
    [
        # the error sits on the 4th line of the file, 9th column ("bar: baz" after "foo: ")
        ("---\nname: x\ndescription: ok\nfoo: bar: baz\n---\nbody\n", "line 4, column 9"),
        ("---\r\nname: x\r\nfoo: bar: baz\r\n---\r\n", "line 3, column 9"),
        # blank lines after the opening '---' count
        ("---\n\n\nname: x\nfoo: bar: baz\n---\n", "line 5, column 9"),
        ("---\nname: x\n\tdescription: tab\n---\n", "line 3, column 1"),
        ("\ufeff---\nname: x\nfoo: bar: baz\n---\n", "line 3, column 9"),
    ],
)
def test_yaml_errors_name_the_file_line_and_column(text: str, where: str) -> None:
    with pytest.raises(FrontmatterError) as info:
        split_frontmatter(text)
    assert str(info.value).startswith(f"{where}: invalid YAML: ")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("# no frontmatter\n", "missing YAML frontmatter"),
        ("", "missing YAML frontmatter"),
        ("\n---\nname: x\n---\n", "missing YAML frontmatter"),
        ("---\nname: x\ndescription: y\n", "no closing '---' line"),
        ("---\n---\nbody\n", "non-empty YAML mapping"),
        ("---\n- a\n- b\n---\n", "non-empty YAML mapping"),
        ("---\njust a string\n---\n", "non-empty YAML mapping"),
    ],
)
def test_missing_or_non_mapping_frontmatter(text: str, message: str) -> None:
    with pytest.raises(FrontmatterError, match=message):
        split_frontmatter(text)


def test_yaml_is_parsed_safely() -> None:
    with pytest.raises(FrontmatterError):
        split_frontmatter("---\nname: !!python/object/apply:os.system ['true']\n---\n")


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("billion-laughs-dependencies", "line 4, column 5: anchor &a0 is not allowed"),
        ("billion-laughs-tools", "line 4, column 5: anchor &a0 is not allowed"),
        ("merge-chain", "line 4, column 5: anchor &m0 is not allowed"),
        ("merge-inline", "line 5, column 3: merge key '<<' is not allowed"),
        ("nested-flow-250k", "frontmatter is 250038 bytes, more than the limit of 65536"),
        ("nested-flow-small", "line 4, column 38: nested deeper than 32 levels"),
        ("nested-block", "line 36, column 33: nested deeper than 32 levels"),
    ],
)
def test_hostile_yaml_is_refused_with_its_position(name: str, message: str) -> None:
    with pytest.raises(FrontmatterError) as info:
        split_frontmatter(main_file("x", CORPUS[name]))
    assert str(info.value).startswith(message), str(info.value)
    assert "\n" not in str(info.value) and len(str(info.value)) < 200


def test_an_alias_without_its_anchor_is_refused_as_an_alias() -> None:
    with pytest.raises(FrontmatterError, match=r"line 2, column 7: alias \*x is not allowed"):
        split_frontmatter("---\nname: *x\n---\n")


def test_the_limits_are_exact() -> None:
    deepest = "d: " + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1)  # the top mapping is level 1
    meta, _ = split_frontmatter(f"---\n{deepest}\n---\n")
    assert "d" in meta
    with pytest.raises(FrontmatterError, match="deeper than 32"):
        split_frontmatter(f"---\nd: [{deepest[3:]}]\n---\n")
    filler = "x: " + "y" * (MAX_FRONTMATTER_SIZE - 5) + "\n"  # plus the newline after the opening ---
    assert split_frontmatter(f"---\n{filler}---\n")[0]["x"]
    with pytest.raises(FrontmatterError, match="65538 bytes"):
        split_frontmatter(f"---\n{filler}z\n---\n")


def test_a_digit_string_past_pythons_limit_is_one_short_line() -> None:
    with pytest.raises(FrontmatterError) as info:
        split_frontmatter("---\nname: x\nv: " + "9" * 20_000 + "\n---\n")
    assert str(info.value).startswith("invalid frontmatter: ") and len(str(info.value)) < 200


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_validate_fails_fast_with_one_line_on_each_hostile_file(tmp_path: Path, name: str) -> None:
    """The real CLI in a subprocess: exit 2, one line per problem, no traceback, well within the timeout."""
    (tmp_path / "SKILL.md").write_text(main_file("hostile", CORPUS[name]))
    result = strawpot("validate", tmp_path, cwd=tmp_path, extra_env={"NO_COLOR": "1"}, timeout=30)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("✗ SKILL.md: frontmatter: "), lines
    assert lines[1].startswith("error: ") and "1 problem found" in lines[1], lines
