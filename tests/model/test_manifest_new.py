"""A new strawpot.toml (no file yet) is edited as plain tables and written as tomlkit writes the same edits."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import tomlkit
from hypothesis import given, settings
from hypothesis import strategies as st

from strawpot.model.kinds import Kind
from strawpot.model.manifest import Manifest

NAMES = st.text("abcxyz019-_.\"é ", min_size=1, max_size=8)
SPECS = st.text(st.characters(codec="utf-8"), max_size=10) | st.sampled_from(
    ["*", "^1.0.0", ">=1,<3", "==2.1.0", "~0.1", "a\"b", "a\\b", "tab\there", "ü"])
EDITS = st.lists(st.tuples(st.sampled_from(list(Kind)), NAMES, SPECS), min_size=1, max_size=8)


def tomlkit_edits(edits: list[tuple[Kind, str, str]]) -> str:
    """What a tomlkit document made by `set_spec`'s tomlkit path, edit by edit, writes."""
    doc = tomlkit.document()
    for kind, name, spec in edits:
        section = doc.get(kind.plural)
        if section is None:
            section = tomlkit.table()
            doc.add(kind.plural, section)
        section[name] = spec
    return tomlkit.dumps(doc)


@settings(max_examples=300, deadline=None)
@given(edits=EDITS)
def test_a_new_manifest_writes_what_tomlkit_writes(edits: list[tuple[Kind, str, str]]) -> None:
    manifest = Manifest.load(Path("/nonexistent/strawpot.toml"))
    for kind, name, spec in edits:
        manifest.set_spec(kind, name, spec)
    assert manifest.dumps() == tomlkit_edits(edits)


@settings(max_examples=100, deadline=None)
@given(edits=EDITS, removed=st.integers(0, 7))
def test_other_edits_of_a_new_manifest_take_tomlkits_document(edits: list[tuple[Kind, str, str]], removed: int) -> None:
    manifest = Manifest.load(Path("/nonexistent/strawpot.toml"))
    for kind, name, spec in edits:
        manifest.set_spec(kind, name, spec)
    kind, name, _ = edits[removed % len(edits)]
    assert manifest.remove(kind, name)
    assert isinstance(manifest.doc, tomlkit.TOMLDocument)
    reference = tomlkit.parse(tomlkit_edits(edits))
    del reference[kind.plural][name]
    assert manifest.dumps() == tomlkit.dumps(reference)


def test_a_new_manifest_is_saved_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "strawpot.toml"
    manifest = Manifest.load(path)
    manifest.set_spec(Kind.ROLE, "bench-role", "*")
    manifest.set_spec(Kind.SKILL, "a-skill", "^2.0.0")
    manifest.set_spec(Kind.ROLE, "bench-role", "^1.0.0")  # the placeholder pinned once resolved, in its place
    assert manifest.trust(["agent:x"]) == ["agent:x"]
    manifest.save()
    assert path.read_text(encoding="utf-8") == (
        '[roles]\nbench-role = "^1.0.0"\n\n[skills]\na-skill = "^2.0.0"\n\n[scripts]\ntrusted = ["agent:x"]\n')
    again = Manifest.load(path)
    assert [(e.kind, e.name, e.spec) for e in again.entries()] == [
        (Kind.SKILL, "a-skill", "^2.0.0"), (Kind.ROLE, "bench-role", "^1.0.0")]
    assert again.dependency_hash() == manifest.dependency_hash()


def test_a_new_manifest_of_plain_specs_imports_no_tomlkit(tmp_path: Path) -> None:
    """What a cold install into a new project does to strawpot.toml, in a fresh interpreter: no tomlkit (~4% of it)."""
    code = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from strawpot.model.kinds import Kind
        from strawpot.model.manifest import Manifest
        manifest = Manifest.load(Path({str(tmp_path / "strawpot.toml")!r}))
        manifest.set_spec(Kind.ROLE, "bench-role", "*")
        manifest.set_spec(Kind.ROLE, "bench-role", "^1.0.0")
        manifest.dependency_hash()
        manifest.save()
        assert "tomlkit" not in sys.modules, "tomlkit was imported"
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and done.stdout == "ok\n", done.stderr
    assert (tmp_path / "strawpot.toml").read_text(encoding="utf-8") == '[roles]\nbench-role = "^1.0.0"\n'
