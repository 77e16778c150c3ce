"""An INTEGRATION.md as the real chat adapters write it: entry_point, install per OS, env with required tokens."""

from __future__ import annotations

import pytest

from strawpot.model.kinds import Kind
from strawpot.model.package import PackageInvalid, parse_package

SHAPE = """---
name: chat
description: A chat adapter
metadata:
  strawpot:
{entry}    install:
      linux: pip install -r requirements.txt
      macos: pip install -r requirements.txt
    env:
      STRAWPOT_BOT_TOKEN:
        required: true
        description: the bot's token
      POLL_INTERVAL:
        required: false
        description: seconds between polls
---
# chat
"""


def integration(entry: str = "    entry_point: python adapter.py\n") -> dict[str, bytes]:
    return {"INTEGRATION.md": SHAPE.format(entry=entry).encode(), "adapter.py": b"", "requirements.txt": b""}


def issues(files: dict[str, bytes], kind: Kind = Kind.INTEGRATION) -> list[str]:
    with pytest.raises(PackageInvalid) as info:
        parse_package(files, kind=kind)
    return [str(i) for i in info.value.issues]


def test_an_integration_reads_its_entry_point_install_and_env() -> None:
    pkg = parse_package(integration())
    assert pkg.kind is Kind.INTEGRATION
    assert pkg.entry_point == ("python", "adapter.py")
    assert pkg.install_script("linux") == "pip install -r requirements.txt"
    assert pkg.env["STRAWPOT_BOT_TOKEN"].required and not pkg.env["POLL_INTERVAL"].required


def test_an_entry_point_is_split_as_a_shell_would_never_run_by_one() -> None:
    pkg = parse_package(integration("    entry_point: \"python 'my adapter.py' --quiet\"\n"))
    assert pkg.entry_point == ("python", "my adapter.py", "--quiet")


@pytest.mark.parametrize(("entry", "problem"), [
    ("", "is required of an integration (the command that runs it, e.g. 'python adapter.py')"),
    ("    entry_point: ''\n", "must be a command line (a non-empty string such as 'python adapter.py')"),
    ("    entry_point: [python, adapter.py]\n",
     "must be a command line (a non-empty string such as 'python adapter.py')"),
    ("    entry_point: \"python 'adapter.py\"\n", "is not a command line (No closing quotation)"),
])
def test_a_missing_or_malformed_entry_point_is_refused(entry: str, problem: str) -> None:
    assert issues(integration(entry)) == [f"INTEGRATION.md: metadata.strawpot.entry_point: {problem}"]


def test_only_integrations_have_an_entry_point() -> None:
    files = {"SKILL.md": b"---\nname: s\ndescription: d\nmetadata:\n  strawpot:\n    entry_point: python a.py\n---\n"}
    assert issues(files, Kind.SKILL) == [
        "SKILL.md: metadata.strawpot.entry_point: only integrations have an entry point, not a skill"]
