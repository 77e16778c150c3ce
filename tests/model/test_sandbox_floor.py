"""A project file may raise the sandbox settings but never lower what the user's global config asks for."""

from __future__ import annotations

import tomllib

import pytest

from strawpot.model.settings import Source, key_lines, layered


def _file(layer: str, path: str, text: str) -> Source:
    return Source(layer, path, tomllib.loads(text), key_lines(text))


@pytest.mark.parametrize(("table", "key", "strict", "weak"), [
    ("session", "sandbox", "bwrap", "none"), ("scripts", "sandbox", "bwrap", "none"),
    ("sandbox", "network", "off", "on"), ("scripts", "network", "off", "on"),
])
def test_a_project_value_never_lowers_the_global_one(table: str, key: str, strict: str, weak: str) -> None:
    user = _file("global", "/g/config.toml", f'[{table}]\n{key} = "{strict}"\n')
    lowered = layered([user, _file("project", "/p/strawpot.toml", f'[{table}]\n{key} = "{weak}"\n')])
    assert lowered.get(f"{table}.{key}") == strict and lowered.origin(f"{table}.{key}").layer == "global"
    assert lowered.overruled == [f"/p/strawpot.toml:2: {table}.{key} = {weak!r} is ignored: a project file cannot "
                                 f"lower the {strict!r} of the global config (/g/config.toml:2)"]
    raised = layered([_file("global", "/g/config.toml", f'[{table}]\n{key} = "{weak}"\n'),
                      _file("project", "/p/strawpot.toml", f'[{table}]\n{key} = "{strict}"\n')])
    assert raised.get(f"{table}.{key}") == strict and raised.overruled == []  # raising is always fine
    flag = layered([user, Source("flag", "--sandbox", {f"{table}.{key}": weak})])
    assert flag.get(f"{table}.{key}") == weak and flag.overruled == []  # the user's own flag may lower it


def test_project_hidden_paths_add_to_the_global_ones_and_its_writable_paths_are_ignored() -> None:
    settings = layered([
        _file("global", "/g/config.toml", '[session]\nsandbox = "bwrap"\n[sandbox]\nhidden = ["/secret"]\n'),
        _file("project", "/p/strawpot.toml", '[sandbox]\nhidden = ["/more"]\nwritable = ["~"]\n'),
    ])
    assert settings.get("sandbox.hidden") == ("/secret", "/more")
    assert settings.get("sandbox.writable") == ()
    assert any("sandbox.writable is ignored" in line for line in settings.overruled), settings.overruled
    own = layered([_file("project", "/p/strawpot.toml", '[session]\nsandbox = "bwrap"\n[sandbox]\nwritable = ["/w"]\n')])
    assert tuple(own.get("sandbox.writable")) == ("/w",)
    assert own.overruled == []  # the project asks for the sandbox itself: its own writable paths stand
