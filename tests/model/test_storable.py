"""The one rule for text a registry stores, as `strawpot validate`/`publish` apply it through `parse_package`."""

from __future__ import annotations

import pytest

from strawpot.model.package import PackageInvalid, parse_package
from strawpot.model.storable import text_problem, value_problems


@pytest.mark.parametrize(("text", "problem"), [
    ("plain text, tabs\tand\r\nline ends, emoji \U0001F680", None),
    ("half \ud83d", "contains a lone surrogate (U+D83D) at character 5"),
    ("nul \x00", "contains a NUL character at character 4"),
    ("esc \x1b[31m", "contains the control character U+001B at character 4"),
    ("del \x7f", "contains the control character U+007F at character 4"),
])
def test_text_problem(text: str, problem: str | None) -> None:
    found = text_problem(text)
    assert (found is None) if problem is None else (found is not None and found.startswith(problem))


def test_value_problems_name_the_dotted_place() -> None:
    value = {"a": {"b": ["ok", "bad\x00"]}, "k\x00": 1}
    assert [place for place, _ in value_problems(value)] == ["a.b[1]", "."]


def test_validate_refuses_what_the_registry_would() -> None:
    main = b'---\nname: s\nversion: 1.0.0\ndescription: "half \\ud83d"\n---\n\nBody.\n'
    with pytest.raises(PackageInvalid, match=r"SKILL.md: description: contains a lone surrogate \(U\+D83D\)"):
        parse_package({"SKILL.md": main})
