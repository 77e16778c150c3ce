"""Validation messages never format an unbounded value: nested or huge entries are shown cut short."""

from __future__ import annotations

import pytest

from strawpot.model.kinds import Kind
from strawpot.model.package import PackageInvalid, parse_package


def _problems(strawpot: str, kind: Kind = Kind.SKILL) -> list[str]:
    text = f"---\nname: demo\ndescription: d\nmetadata:\n  strawpot:\n{strawpot}\n---\nBody.\n"
    with pytest.raises(PackageInvalid) as info:
        parse_package({kind.main_file: text.encode()}, kind=kind)
    return [str(issue) for issue in info.value.issues]


def test_a_nested_dependency_entry_is_shown_cut_short() -> None:
    nested = "[" * 20 + ", ".join(["'" + "x" * 5000 + "'"] * 8) + "]" * 20
    [problem] = _problems(f"    dependencies: [{nested}]")
    assert problem.startswith("SKILL.md: metadata.strawpot.dependencies[0]: must be a string like 'slug'")
    assert len(problem) < 200 and "xxxx" not in problem  # the nested list is elided, not walked


def test_a_long_tool_name_and_unknown_os_keys_of_mixed_types() -> None:
    problems = _problems(f"    tools:\n      {'t' * 1000}:\n        install: {{1: a, bsd: b, 2.5: c}}")
    assert len(problems) == 1 and len(problems[0]) < 250, problems
    assert "unknown OS ['1', '2.5', 'bsd']" in problems[0]


def test_a_tool_description_or_env_default_that_is_a_structure_is_refused() -> None:
    problems = _problems("    tools:\n      git:\n        description: [a, [b]]\n    env:\n      TOKEN: {default: [1, 2]}")
    assert problems == [
        "SKILL.md: metadata.strawpot.tools.git.description: must be text",
        "SKILL.md: metadata.strawpot.env.TOKEN: default and description must be text",
    ]


def test_a_long_name_is_shown_cut_short() -> None:
    text = f"---\nname: {'n' * 20000}\ndescription: d\n---\n"
    with pytest.raises(PackageInvalid) as info:
        parse_package({"SKILL.md": text.encode()}, kind=Kind.SKILL)
    assert all(len(str(issue)) < 200 for issue in info.value.issues)
