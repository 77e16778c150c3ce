"""What docs/ says about names the tool prints matches the tool: setting keys, JSON `command` values, the shape of
a command's JSON where the docs show an example."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from strawpot import cli_group
from strawpot.model.settings import SCHEMA
from tests._cli import strawpot
from tests.orchestrator.conftest import ProjectFixture, standard_roles, standard_skills

DOCS = Path(__file__).resolve().parents[1] / "docs"
SECTIONS = {key.split(".")[0] for key in SCHEMA}
FILE_SUFFIXES = {"db", "json", "jsonl", "md", "toml", "lock", "sock", "log", "py", "sh", "txt", "token", "sqlite"}  # `session.json`


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


def _example(page: str, heading: str) -> Any:
    """The first ```json block of `docs/<page>` after the line `heading`."""
    section = (DOCS / page).read_text(encoding="utf-8").split(f"\n{heading}\n", 1)[1]
    return json.loads(section.split("```json\n", 1)[1].split("\n```", 1)[0])


def _shape(value: Any) -> Any:
    """The keys and value types of a JSON document, every element of a list merged (values left out)."""
    if isinstance(value, dict):
        return {key: _shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return sorted({json.dumps(_shape(item), sort_keys=True) for item in value})
    return type(value).__name__


def test_the_doctor_json_in_the_docs_is_what_doctor_prints(tmp_path: Path) -> None:
    (tmp_path / "proj").mkdir()
    project = ProjectFixture(tmp_path / "proj", standard_roles(), standard_skills()).build()
    (project.state_dir / "agents" / "stub-agent" / "bin" / "stub-wrapper").chmod(0o644)  # one problem, with its fix
    done = strawpot("doctor", "--json", cwd=project.root, extra_env={"STRAWPOT_CONFIG_DIR": str(tmp_path / "config")})
    assert done.returncode == 7, done.stderr
    printed = json.loads(done.stdout)
    documented = _example("sessions.md", "## `strawpot doctor`")
    assert _shape(documented) == _shape(printed)
    assert (documented["schema_version"], documented["command"]) == (printed["schema_version"], printed["command"])
