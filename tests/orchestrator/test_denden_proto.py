"""The checked-in Denden stubs are exactly what proto/generate.py produces, and match denden-server's wire contract."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load_generator():
    spec = importlib.util.spec_from_file_location("denden_generate", ROOT / "proto" / "generate.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_checked_in_stubs_are_up_to_date(tmp_path: Path) -> None:
    generator = _load_generator()
    written = generator.generate(tmp_path)
    assert {p.name for p in written} == {"denden_pb2.py", "denden_pb2.pyi", "denden_pb2_grpc.py", "__init__.py"}
    checked_in = ROOT / "orchestrator" / "_proto"
    for path in written:
        ours = (checked_in / path.name).read_text(encoding="utf-8")
        assert ours == path.read_text(encoding="utf-8"), (
            f"orchestrator/_proto/{path.name} is stale: run `python proto/generate.py`"
        )


@pytest.mark.parametrize("copy", ["agents/stub-agent/agent", "skills/denden/client"])
def test_fixture_copies_are_up_to_date(tmp_path: Path, copy: str) -> None:
    written = _load_generator().generate(tmp_path, package=False)
    assert {p.name for p in written} == {"denden_pb2.py", "denden_pb2_grpc.py"}
    fixture = ROOT / "fixtures" / copy
    assert fixture in _load_generator().FIXTURE_OUTS
    for path in written:
        assert (fixture / path.name).read_text(encoding="utf-8") == path.read_text(encoding="utf-8"), (
            f"fixtures/{copy}/{path.name} is stale: run `python proto/generate.py`"
        )
    assert "\nimport denden_pb2 as denden__pb2" in (fixture / "denden_pb2_grpc.py").read_text(encoding="utf-8")


def test_stub_imports_are_package_relative() -> None:
    text = (ROOT / "orchestrator" / "_proto" / "denden_pb2_grpc.py").read_text(encoding="utf-8")
    assert "from . import denden_pb2 as denden__pb2" in text
    assert "\nimport denden_pb2" not in text


@pytest.mark.compat
def test_descriptor_is_identical_to_denden_server() -> None:
    from denden.gen import denden_pb2 as theirs  # a test dependency: missing is a failure, never a skip

    from orchestrator._proto import denden_pb2 as ours

    assert ours.DESCRIPTOR.serialized_pb == theirs.DESCRIPTOR.serialized_pb
    assert [m for m in ours.DESCRIPTOR.services_by_name["Denden"].methods_by_name] == ["Send", "Status"]
