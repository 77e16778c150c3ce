"""A command imports no private name of another command: what two commands share lives in a `_shared` module."""

from __future__ import annotations

import ast
from pathlib import Path

COMMANDS = Path(__file__).resolve().parents[1] / "strawpot" / "commands"
PACKAGE = "strawpot.commands"


def _is_command(module: str) -> bool:
    """A command module (`start`), not a shared one (`_options`) nor the package itself."""
    name = module.removeprefix(PACKAGE + ".")
    return module.startswith(PACKAGE + ".") and "." not in name and not name.startswith("_")


def private_uses(source: str) -> list[str]:
    """Each `_name` of a command module the source reaches: `from strawpot.commands.X import _y`, or
    `from strawpot.commands import X` then `X._y`."""
    tree = ast.parse(source)
    found: list[str] = []
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            if _is_command(node.module):
                found += [f"{node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
            elif node.module == PACKAGE:
                aliases |= {a.asname or a.name: a.name for a in node.names if _is_command(f"{PACKAGE}.{a.name}")}
        elif isinstance(node, ast.Import):
            aliases |= {a.asname: a.name.rpartition(".")[2] for a in node.names if a.asname and _is_command(a.name)}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                and node.attr.startswith("_")):
            found.append(f"{PACKAGE}.{aliases[node.value.id]}.{node.attr}")
    return found


def test_no_command_imports_a_private_name_of_another_command() -> None:
    found = [f"{path.name}: {use}" for path in sorted(COMMANDS.glob("*.py"))
             for use in private_uses(path.read_text(encoding="utf-8"))]
    assert found == []


def test_the_check_sees_each_way_of_reaching_a_private_name() -> None:
    assert private_uses("from strawpot.commands.start import _run") == ["strawpot.commands.start._run"]
    assert private_uses("from strawpot.commands import start\nstart._run()") == ["strawpot.commands.start._run"]
    assert private_uses("import strawpot.commands.start as s\ns._run()") == ["strawpot.commands.start._run"]
    assert private_uses("from strawpot.commands._run_output import RunOutput, _prompt") == []
    assert private_uses("from strawpot.commands.start import command") == []
