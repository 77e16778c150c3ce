"""strawpot.toml edits change only the entries they touch: comments, order and unknown keys survive."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from strawpot.install.fastcheck import manifest_hash
from strawpot.model.errors import UsageError
from strawpot.model.kinds import Kind
from strawpot.model.manifest import Manifest, ManifestEntry
from strawpot.model.settings import SCHEMA, SETTINGS_TABLES, Key

SOURCE = """\
# project manifest: hand-written, keep my comments
[skills]
git-workflow = "^1.2"   # pinned by the team
code-review = { version = "==2.1.0", env = { GITHUB_TOKEN = "x" } }  # table entry

[roles.implementer]
version = ">=1,<3"   # sub-table entry
default_agent = "stub-agent"

[orchestrator]   # not ours
role = "reviewer"
unknown_key = [1, 2]   # survives

[policy]
max_depth = 3
"""


@pytest.fixture
def manifest(tmp_path: Path) -> Manifest:
    path = tmp_path / "strawpot.toml"
    path.write_text(SOURCE, encoding="utf-8")
    return Manifest.load(path)


def test_load_without_edits_round_trips_byte_for_byte(manifest: Manifest) -> None:
    assert manifest.dumps() == SOURCE
    manifest.save()
    assert manifest.path.read_bytes() == SOURCE.encode()


def test_entries_and_settings(manifest: Manifest) -> None:
    assert manifest.entries() == [
        ManifestEntry(Kind.SKILL, "git-workflow", "^1.2"),
        ManifestEntry(Kind.SKILL, "code-review", "==2.1.0", {"env": {"GITHUB_TOKEN": "x"}}),
        ManifestEntry(Kind.ROLE, "implementer", ">=1,<3", {"default_agent": "stub-agent"}),
    ]
    assert manifest.role_default_agent("implementer") == "stub-agent"


def test_change_a_string_entry(manifest: Manifest) -> None:
    manifest.set_spec(Kind.SKILL, "git-workflow", "^1.3")
    assert manifest.dumps() == SOURCE.replace('git-workflow = "^1.2"', 'git-workflow = "^1.3"')


def test_change_an_inline_table_entry_keeps_its_other_keys(manifest: Manifest) -> None:
    manifest.set_spec(Kind.SKILL, "code-review", "^2.2")
    assert manifest.dumps() == SOURCE.replace('version = "==2.1.0"', 'version = "^2.2"')


def test_change_a_sub_table_entry_keeps_its_comment_and_keys(manifest: Manifest) -> None:
    manifest.set_spec(Kind.ROLE, "implementer", "^3")
    assert manifest.dumps() == SOURCE.replace('version = ">=1,<3"', 'version = "^3"')


def test_add_an_entry_to_an_existing_section(manifest: Manifest) -> None:
    manifest.set_spec(Kind.SKILL, "new-one", "*")
    expected = SOURCE.replace(
        "# table entry\n", '# table entry\nnew-one = "*"\n'
    )
    assert manifest.dumps() == expected


def test_add_a_new_section_appends_it_and_leaves_the_rest(manifest: Manifest) -> None:
    manifest.set_spec(Kind.AGENT, "stub-agent", "^0.1")
    assert manifest.dumps() == SOURCE + '\n[agents]\nstub-agent = "^0.1"\n'


def test_remove_a_string_entry(manifest: Manifest) -> None:
    assert manifest.remove(Kind.SKILL, "git-workflow") is True
    assert manifest.dumps() == SOURCE.replace('git-workflow = "^1.2"   # pinned by the team\n', "")


def test_remove_a_table_entry(manifest: Manifest) -> None:
    assert manifest.remove(Kind.SKILL, "code-review") is True
    assert manifest.dumps() == SOURCE.replace(
        'code-review = { version = "==2.1.0", env = { GITHUB_TOKEN = "x" } }  # table entry\n', ""
    )


def test_remove_a_sub_table_entry(manifest: Manifest) -> None:
    assert manifest.remove(Kind.ROLE, "implementer") is True
    text = manifest.dumps()
    assert "implementer" not in text and "sub-table entry" not in text
    assert text.startswith(SOURCE.split("[roles.implementer]")[0])
    assert text.endswith(SOURCE.split('default_agent = "stub-agent"\n\n')[1])


def test_remove_what_is_not_there(manifest: Manifest) -> None:
    assert manifest.remove(Kind.AGENT, "nope") is False
    assert manifest.remove(Kind.SKILL, "nope") is False
    assert manifest.dumps() == SOURCE


def test_save_is_atomic_and_leaves_no_temp_file(manifest: Manifest) -> None:
    manifest.set_spec(Kind.SKILL, "git-workflow", "^2")
    manifest.save()
    assert sorted(p.name for p in manifest.path.parent.iterdir()) == ["strawpot.toml"]
    assert Manifest.load(manifest.path).get(Kind.SKILL, "git-workflow") == ManifestEntry(Kind.SKILL, "git-workflow", "^2")


def test_missing_manifest_is_empty(tmp_path: Path) -> None:
    manifest = Manifest.load(tmp_path / "strawpot.toml")
    assert manifest.entries() == []
    manifest.set_spec(Kind.SKILL, "a", "^1")
    assert manifest.dumps() == '[skills]\na = "^1"\n'


def test_dependency_hash_ignores_order_and_non_resolution_settings(tmp_path: Path) -> None:
    a, b = tmp_path / "a.toml", tmp_path / "b.toml"
    a.write_text('[skills]\nx = "^1"\ny = "*"\n[orchestrator]\nrole = "r"\n')
    b.write_text('[skills]\ny = "*"\nx = "^1"\n')
    assert Manifest.load(a).dependency_hash() == Manifest.load(b).dependency_hash()
    b.write_text('[skills]\ny = "*"\nx = "^2"\n')
    assert Manifest.load(a).dependency_hash() != Manifest.load(b).dependency_hash()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[skills\n", r"strawpot.toml:\d+:\d+: invalid TOML"),
        ('skills = "oops"\n', r"\[skills\] must be a table"),
        ("[skills]\nx = 3\n", r"skills.x must be a version specifier string"),
        ("[skills]\nx = { version = 3 }\n", r"skills.x.version must be a string"),
        # a name is a path component of the installed tree: only slugs, refused before anything reads them
        ('[skills]\n"../x" = "*"\n', r"\[skills\] '\.\./x' is not a valid slug"),
        ('[roles]\n"a/b" = "*"\n', r"\[roles\] 'a/b' is not a valid slug"),
        ('[agents]\n"Up" = "*"\n', r"\[agents\] 'Up' is not a valid slug"),
    ],
)
def test_invalid_manifests_are_usage_errors(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "strawpot.toml"
    path.write_text(text)
    with pytest.raises(UsageError, match=message):
        Manifest.load(path)


def test_manifest_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "strawpot.toml"
    path.write_bytes(b'[skills]\nx = "\xff"\n')
    with pytest.raises(UsageError, match="not UTF-8"):
        Manifest.load(path)


def test_a_manifest_that_is_a_folder_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "strawpot.toml").mkdir()
    with pytest.raises(UsageError, match="cannot read the manifest"):
        Manifest.load(tmp_path / "strawpot.toml")


def test_an_agent_table_without_version_is_settings_only(tmp_path: Path) -> None:
    path = tmp_path / "strawpot.toml"
    path.write_text('[roles]\nreviewer = "*"\n\n[agents.my-agent]\nmodel = "small"\n', encoding="utf-8")
    manifest = Manifest.load(path)
    assert [(e.kind, e.name) for e in manifest.entries()] == [(Kind.ROLE, "reviewer")]
    assert manifest.get(Kind.AGENT, "my-agent") is None
    bare = tmp_path / "bare.toml"
    bare.write_text('[roles]\nreviewer = "*"\n', encoding="utf-8")
    assert manifest.dependency_hash() == Manifest.load(bare).dependency_hash()


def test_an_agent_table_with_version_is_a_requirement_and_removal_keeps_its_settings(tmp_path: Path) -> None:
    path = tmp_path / "strawpot.toml"
    path.write_text('[agents.my-agent]\nversion = "^1"\nmodel = "small"\n', encoding="utf-8")
    manifest = Manifest.load(path)
    assert manifest.get(Kind.AGENT, "my-agent") == ManifestEntry(Kind.AGENT, "my-agent", "^1", {"model": "small"})
    assert manifest.remove(Kind.AGENT, "my-agent")
    assert manifest.dumps() == '[agents.my-agent]\nmodel = "small"\n'
    assert manifest.entries() == []


def _sample(key: Key) -> object:
    """A valid value of `key`, for a file that sets it."""
    if key.default not in (None, ()):
        return key.default
    return {"string": "x", "list": ["agent:x"], "integer": 1, "number": 1.0, "boolean": True}.get(key.type, "x")


@pytest.mark.parametrize("section", sorted(SETTINGS_TABLES))
def test_no_settings_section_of_the_schema_is_taken_for_a_mistyped_requirement_table(tmp_path: Path, section: str) -> None:
    """Walks the schema: a new section close to a kind's table (`[memory]` / `[memories]`) cannot regress."""
    keys = [k for name, k in SCHEMA.items() if name.partition(".")[0] == section]
    lines = [f"[{section}]"] + [f"{k.name.partition('.')[2]} = {json.dumps(_sample(k))}" for k in keys]
    path = tmp_path / "strawpot.toml"
    path.write_text('[skills]\nx = "^1"\n\n' + "\n".join(lines) + "\n")
    assert [e.name for e in Manifest.load(path).entries()] == ["x"]
    assert manifest_hash(path) == Manifest.load(path).dependency_hash()  # the no-op path reads it alike


def test_the_documented_memory_table_is_settings_and_a_stranger_in_it_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "strawpot.toml"
    path.write_text('[memory]\nprovider = "builtin"\n')
    assert Manifest.load(path).entries() == []
    path.write_text('[memory]\nprovider = "builtin"\ncode-style = "*"\n')
    with pytest.raises(UsageError, match=r"\[memory\] has no setting 'code-style'; did you mean \[memories\]\?"):
        Manifest.load(path)
    assert manifest_hash(path) is None  # the no-op path leaves it to the full path, which refuses it
    path.write_text('[skill]\ncode-style = "*"\n')
    with pytest.raises(UsageError, match=r"unknown table \[skill\]; did you mean \[skills\]\?"):
        Manifest.load(path)
    assert manifest_hash(path) is None


def test_read_only_manifest_gives_what_load_gives_and_refuses_edits(tmp_path: Path) -> None:
    """`Manifest.read` (tomllib alone, for the read-only commands) finds the same requirements, settings and
    dependency hash as `load`, and an edit of it fails at once rather than writing a file without its layout."""
    path = tmp_path / "strawpot.toml"
    path.write_text(SOURCE, encoding="utf-8")
    read, loaded = Manifest.read(path), Manifest.load(path)
    assert read.entries() == loaded.entries() and len(read.entries()) == 3
    assert read.table("orchestrator") == loaded.table("orchestrator") == {"role": "reviewer", "unknown_key": [1, 2]}
    assert read.dependency_hash() == loaded.dependency_hash()
    for edit in (lambda: read.set_spec(Kind.SKILL, "x", "*"), lambda: read.remove(Kind.SKILL, "git-workflow"),
                 lambda: read.trust(["skill:x"]), read.save):
        with pytest.raises(TypeError, match="Manifest.read"):
            edit()
    assert path.read_text(encoding="utf-8") == SOURCE
    assert Manifest.read(tmp_path / "absent.toml").entries() == []
