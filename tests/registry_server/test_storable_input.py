"""Text the database cannot store (a lone surrogate, a NUL, a control character) is a 400 on every backend,
refused before any blob is written; a backslash in a file name is refused, never renamed."""

from __future__ import annotations

import pytest

from tests.registry_server._helpers import Api, skill
from tests.registry_server.test_publish_validation import post_raw, refused

# What a YAML double-quoted escape reads back as: half of an emoji (how `json.dumps` writes one), a NUL, a bell.
FRONTMATTER = {
    "surrogate in description": ('description: "a rocket \\ud83d"', "description", "lone surrogate (U+D83D)"),
    "NUL in description": ('description: "nul \\0 here"', "description", "a NUL character"),
    "bell in description": ('description: "ring \\a"', "description", "control character U+0007"),
    "surrogate in a tool's install": (
        'description: ok\nmetadata:\n  strawpot:\n    tools:\n      git:\n        description: "\\udc00"',
        "metadata.strawpot.tools.git.description", "lone surrogate (U+DC00)",
    ),
    "NUL in a key": ('description: ok\nmetadata:\n  "a\\0b": 1', "metadata", "a key contains a NUL"),
}


@pytest.mark.parametrize("case", sorted(FRONTMATTER))
def test_frontmatter_the_database_cannot_store_is_a_400(api: Api, case: str) -> None:
    line, where, needle = FRONTMATTER[case]
    main = f"---\nname: bad\nversion: 1.0.0\n{line}\n---\n\nBody.\n".encode()
    error = refused(api, api.publish("skill", {"SKILL.md": main}, slug="bad", version="1.0.0"), 400, needle)
    assert f"SKILL.md: {where}:" in error


@pytest.mark.parametrize(("field", "value", "needle"), [
    ("changelog", "fixed \x00 things", "changelog: contains a NUL character"),
    ("displayName", "Bad\x00Name", "displayName: contains a NUL character"),
    ("customTags", "a,b\x00c", "customTags: contains a NUL character"),
    ("displayName", "\x1b[31mred", "displayName: contains the control character U+001B"),
])
def test_form_fields_the_database_cannot_store_are_a_400(api: Api, field: str, value: str, needle: str) -> None:
    refused(api, api.publish("skill", skill("bad"), **{field: value}), 400, needle)


def test_tabs_and_line_ends_are_text(api: Api) -> None:
    main = b'---\nname: good\nversion: 1.0.0\ndescription: "tab\\there\\r\\nand a \\U0001F680"\n---\n\nBody.\n'
    answer = api.publish("skill", {"SKILL.md": main}, slug="good", version="1.0.0", changelog="one\n\ttwo\r\n")
    assert answer.status_code == 201, answer.text
    assert api.client.get("/api/v1/skills/good").json()["summary"] == "tab\there\r\nand a \U0001F680"


@pytest.mark.parametrize("filename", [b"..\\evil.md", b"docs\\readme.md", b"a\\b"])
def test_a_backslash_in_a_file_name_is_refused_not_renamed(api: Api, filename: bytes) -> None:
    """A browser or curl sends a backslash as it is inside the quoted name; it must not vanish as an escape."""
    refused(api, post_raw(api, filename), 400, "backslash in path")
