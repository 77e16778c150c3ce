"""`parse_json`'s depth limit, walked over containers only, refuses exactly what walking every value refused."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hub_client._models import MAX_JSON_DEPTH, parse_json


def deepest(value: Any, depth: int = 0) -> int:
    """The depth of the deepest value, scalars included (the rule as first written)."""
    if isinstance(value, dict):
        return max([depth, *(deepest(v, depth + 1) for v in value.values())])
    if isinstance(value, list):
        return max([depth, *(deepest(v, depth + 1) for v in value)])
    return depth


def nest(depth: int, leaf: Any) -> Any:
    value = leaf
    for i in range(depth):
        value = [value] if i % 2 else {"k": value, "text": "x"}
    return value


LEAVES = ["x", 1, None, [], {}, [1], {"a": "b"}]


@pytest.mark.parametrize("depth", [0, 1, MAX_JSON_DEPTH - 2, MAX_JSON_DEPTH - 1, MAX_JSON_DEPTH, MAX_JSON_DEPTH + 1])
@pytest.mark.parametrize("leaf", LEAVES, ids=[json.dumps(v) for v in LEAVES])
def test_the_limit_is_the_depth_of_the_deepest_value(depth: int, leaf: Any) -> None:
    text = json.dumps({"wide": ["a", "b", {"c": 1}], "deep": nest(depth, leaf)})
    if deepest(json.loads(text)) > MAX_JSON_DEPTH:
        with pytest.raises(ValueError, match="levels deep"):
            parse_json(text)
    else:
        assert parse_json(text) == json.loads(text)


def test_a_scalar_document_is_its_value() -> None:
    assert parse_json(b'"text"') == "text" and parse_json("3") == 3
