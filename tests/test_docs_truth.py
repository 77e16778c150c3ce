"""What docs/ says about names the tool prints matches the tool: setting keys, JSON `command` values."""

from __future__ import annotations

import re
from pathlib import Path

from strawpot import cli_group
from strawpot.model.settings import SCHEMA

DOCS = Path(__file__).resolve().parents[1] / "docs"
SECTIONS = {key.split(".")[0] for key in SCHEMA}
FILE_SUFFIXES = {"db", "json", "jsonl", "md", "toml", "lock", "sock", "log", "py", "sh", "txt", "token"}  # `session.json`


def test_every_dotted_setting_key_in_the_docs_exists() -> None:
    named = {(page.name, word) for page in DOCS.glob("*.md")
             for word in re.findall(r"`([a-z_]+\.[a-z_]+)`", page.read_text(encoding="utf-8"))
             if word.split(".")[0] in SECTIONS and word.split(".")[1] not in FILE_SUFFIXES}
    assert named, "no setting key found in docs/: the pattern is wrong"
    unknown = sorted((page, word) for page, word in named if word not in SCHEMA)
    assert not unknown, unknown


def test_settings_are_named_by_their_keys() -> None:
    """Not by an environment variable's name in lower case (`http_timeout`) or with `_` for the dot."""
    wrong = {name.removeprefix("STRAWPOT_").lower(): key for key, spec in SCHEMA.items()
             if (name := spec.env_var) and name.removeprefix("STRAWPOT_").lower() != key.replace(".", "_")}
    wrong |= {key.replace(".", "_"): key for key in SCHEMA}
    said = sorted((page.name, word, wrong[word]) for page in DOCS.glob("*.md")
                  for word in re.findall(r"`([a-z_]+)`", page.read_text(encoding="utf-8")) if word in wrong)
    assert not said, said


def test_the_command_values_json_md_gives_are_command_paths() -> None:
    text = (DOCS / "json.md").read_text(encoding="utf-8")
    line = text.split("\n- `command`:", 1)[1].split("\n- ", 1)[0]  # the bullet, continuation lines too
    examples = [word for word in re.findall(r"`([a-z][a-z ]*)`", line)
                if not word.startswith("strawpot")]
    assert "sessions" in examples and "registry token create" in examples, examples
    for example in examples:
        assert cli_group._command_path(example.split()) == example, example
