"""The package's public surface: a sorted, complete `__all__`, and no imports of our other packages."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import hub_client
from hub_client import _cache, _client, _exceptions, _models


def test_all_is_sorted() -> None:
    assert hub_client.__all__ == sorted(hub_client.__all__)


def test_all_is_complete_and_resolves() -> None:
    exported = set(_cache.__all__) | set(_client.__all__) | set(_exceptions.__all__) | set(_models.__all__)
    assert set(hub_client.__all__) == exported
    assert len(hub_client.__all__) == len(exported)
    for name in hub_client.__all__:
        assert getattr(hub_client, name) is not None


def test_every_error_is_a_hub_error() -> None:
    for name in _exceptions.__all__:
        assert issubclass(getattr(hub_client, name), hub_client.HubError)


def test_leaf_package_imports_only_httpx_and_stdlib() -> None:
    allowed = set(sys.stdlib_module_names) | {"httpx", "valueclass"}  # the leaf below the leaves (stdlib only)
    for source in Path(hub_client.__file__).parent.glob("*.py"):
        tree = ast.parse(source.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                roots = {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                roots = {node.module.split(".")[0]}
            else:
                continue
            assert roots <= allowed, f"{source.name} imports {roots - allowed}"
