"""Where an env var's value comes from, and which ones are missing (orchestrator/envvars.py)."""

from __future__ import annotations

import pytest

from orchestrator.envvars import EnvNeed, EnvValues
from strawpot.model.kinds import Kind
from strawpot.model.package import EnvSpec

NEED = EnvNeed(Kind.AGENT, "my-agent", EnvSpec("TOKEN", True, "the token", None))
WITH_DEFAULT = EnvNeed(Kind.SKILL, "my-skill", EnvSpec("LEVEL", True, "", "info"))


@pytest.mark.parametrize(
    ("environ", "saved", "typed", "value", "exported"),
    [
        ({"TOKEN": "env"}, {"TOKEN": "cfg"}, None, "env", {"TOKEN": "env"}),  # the process environment wins
        ({"TOKEN": ""}, {"TOKEN": "cfg"}, None, "cfg", {"TOKEN": "cfg"}),  # empty counts as unset
        ({}, {}, "typed", "typed", {"TOKEN": "typed"}),
        ({}, {"TOKEN": ""}, None, None, {}),
    ],
)
def test_value_precedence(environ, saved, typed, value, exported) -> None:  # type: ignore[no-untyped-def]
    values = EnvValues(environ, {(Kind.AGENT, "my-agent"): saved})
    if typed:
        values.supply(NEED, typed)
    assert values.value(NEED) == value
    assert values.exported([NEED]) == exported
    assert values.missing([NEED, WITH_DEFAULT]) == ([] if value else [NEED])
    assert values.exported([WITH_DEFAULT]) == {"LEVEL": "info"}


