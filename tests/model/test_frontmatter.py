"""Frontmatter splitting: YAML errors carry the line and column of the main file."""

from __future__ import annotations

import pytest

from strawpot.model.frontmatter import FrontmatterError, split_frontmatter


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
