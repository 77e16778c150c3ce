"""strawpot.lock: deterministic, round-trips exactly, and its reader is picked by the format version."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from strawpot.model.kinds import Kind
from strawpot.model.lockfile import (
    LockedDependency,
    LockedFile,
    LockedPackage,
    LockedTool,
    Lockfile,
    LockfileError,
)

SHA = "a" * 64


def _packages() -> list[LockedPackage]:
    return [
        LockedPackage(
            Kind.AGENT, "stub-agent", "0.1.0", "http://127.0.0.1:8787", SHA, 900,
            files=(LockedFile("bin/run", "b" * 64, 10, True), LockedFile("AGENT.md", "c" * 64, 5)),
            tools=(LockedTool("git", "Git \"quoted\"", {"macos": "brew install git", "linux": "apt install git"}),),
        ),
        LockedPackage(
            Kind.ROLE, "reviewer", "1.0.0", "http://127.0.0.1:8787", SHA, 300,
            files=(LockedFile("ROLE.md", "d" * 64, 7),),
            dependencies=(LockedDependency(Kind.SKILL, "code-review", "^1.2"), LockedDependency(Kind.ROLE, "implementer", "*")),
            default_agent="stub-agent",
        ),
        LockedPackage(Kind.SKILL, "zeta", "2.0.0-beta.1", "https://strawhub.dev", None, None),
        LockedPackage(
            Kind.SKILL, "code-review", "1.2.0", "http://127.0.0.1:8787", SHA, 100,
            files=(LockedFile("SKILL.md", "e" * 64, 12), LockedFile("ünï/ファイル.md", "f" * 64, 1)),
        ),
    ]


def _lock(packages: list[LockedPackage]) -> Lockfile:
    return Lockfile(tuple(packages), manifest_hash="sha256:" + "0" * 64, generated_by="strawpot 0.2.0")


def test_output_does_not_depend_on_input_order() -> None:
    packages = _packages()
    first = _lock(packages).dumps()
    for seed in range(5):
        shuffled = packages[:]
        random.Random(seed).shuffle(shuffled)
        assert _lock(shuffled).dumps() == first


def test_packages_are_ordered_by_kind_then_name() -> None:
    lock = _lock(_packages())
    assert [(p.kind, p.name) for p in lock.packages] == [
        (Kind.SKILL, "code-review"), (Kind.SKILL, "zeta"), (Kind.ROLE, "reviewer"), (Kind.AGENT, "stub-agent"),
    ]


def test_round_trip_is_exact(tmp_path: Path) -> None:
    lock = _lock(_packages())
    path = tmp_path / "strawpot.lock"
    lock.write(path)
    loaded = Lockfile.load(path)
    # files, dependencies and tools come back in their canonical (sorted) order
    assert loaded.dumps() == lock.dumps()
    assert path.read_text(encoding="utf-8") == lock.dumps()
    agent = loaded.get(Kind.AGENT, "stub-agent")
    assert agent is not None
    assert [f.path for f in agent.files] == ["AGENT.md", "bin/run"]
    assert agent.files[1].executable is True
    assert agent.tools[0].install == {"linux": "apt install git", "macos": "brew install git"}
    assert loaded.get(Kind.ROLE, "reviewer").default_agent == "stub-agent"  # type: ignore[union-attr]
    zeta = loaded.get(Kind.SKILL, "zeta")
    assert zeta is not None and zeta.archive_sha256 is None and zeta.version == "2.0.0-beta.1"
    assert loaded.manifest_hash == lock.manifest_hash and loaded.generated_by == "strawpot 0.2.0"
    assert loaded.get(Kind.SKILL, "nope") is None


def test_the_text_is_stable() -> None:
    text = _lock([LockedPackage(Kind.SKILL, "a", "1.0.0", "http://r", SHA, 3, files=(LockedFile("SKILL.md", SHA, 3),))]).dumps()
    assert text == (
        "# This file is written by strawpot; do not edit it by hand.\n"
        "version = 1\n"
        'generated-by = "strawpot 0.2.0"\n'
        f'manifest-hash = "sha256:{"0" * 64}"\n'
        "\n"
        "[[package]]\n"
        'kind = "skill"\n'
        'name = "a"\n'
        'version = "1.0.0"\n'
        'source = "http://r"\n'
        f'archive = {{ sha256 = "{SHA}", size = 3 }}\n'
        "dependencies = []\n"
        "files = [\n"
        f'  {{ path = "SKILL.md", sha256 = "{SHA}", size = 3, executable = false }},\n'
        "]\n"
    )


def test_empty_lock_round_trips() -> None:
    lock = _lock([])
    assert Lockfile.from_dict(__import__("tomllib").loads(lock.dumps())).dumps() == lock.dumps()


@pytest.mark.parametrize(
    ("text", "message", "hint"),
    [
        ("version = 2\n", "lockfile format version 2 is not one this strawpot reads (1)", "upgrade strawpot"),
        ("version = \"1\"\n", "lockfile format version '1' is not one", "upgrade strawpot"),
        ("[[package]]\nkind = \"skill\"\n", "lockfile format version None", "upgrade strawpot"),
        ("version = 1\n[[package]]\nkind = \"skill\"\nversion = \"1.0.0\"\n", "package #1 (?)", "strawpot lock"),
        ("version = 1\n[[package]]\nkind = \"gadget\"\nname = \"x\"\nversion = \"1.0.0\"\n", "package #1 (x)", "strawpot lock"),
        (
            "version = 1\n[[package]]\nkind = \"skill\"\nname = \"x\"\nversion = \"1.0.0\"\nfiles = [{ path = \"a\" }]\n",
            "package #1 (x)", "strawpot lock",
        ),
        ("version = 1\n[[package\n", "invalid TOML", "strawpot lock"),
    ],
)
def test_reader_errors_name_the_file_and_the_problem(tmp_path: Path, text: str, message: str, hint: str) -> None:
    path = tmp_path / "strawpot.lock"
    path.write_text(text)
    with pytest.raises(LockfileError) as info:
        Lockfile.load(path)
    assert info.value.message.startswith(f"{path}:")  # "path: ..." or "path:line:col: ..."
    assert message in info.value.message
    assert info.value.hint is not None and hint in info.value.hint
    assert info.value.exit_code == 2


def test_missing_and_binary_lockfiles(tmp_path: Path) -> None:
    with pytest.raises(LockfileError, match="no lockfile") as info:
        Lockfile.load(tmp_path / "strawpot.lock")
    assert "strawpot lock" in (info.value.hint or "")
    (tmp_path / "strawpot.lock").write_bytes(b"version = 1\n\xff\xfe")
    with pytest.raises(LockfileError, match="not UTF-8"):
        Lockfile.load(tmp_path / "strawpot.lock")


_GOOD_PACKAGE = (
    'version = 1\nmanifest-hash = "sha256:x"\n[[package]]\nkind = "skill"\nname = "x"\nversion = "1.0.0"\n'
    'source = "http://r"\narchive = {{ sha256 = "{sha}", size = 10 }}\n{extra}'
    'files = [{{ path = {path}, sha256 = "{sha}", size = {size}, executable = {exe} }}]\n'
)


def _tampered(**fields: str) -> str:
    values = {"sha": SHA, "path": '"SKILL.md"', "size": "3", "exe": "false", "extra": ""} | fields
    return _GOOD_PACKAGE.format(**values)


def test_the_tampering_template_itself_reads() -> None:
    lock = Lockfile.from_dict(__import__("tomllib").loads(_tampered()))
    assert [(p.name, [f.path for f in p.files]) for p in lock.packages] == [("x", ["SKILL.md"])]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # a path that escapes the package folder is refused before anything could be written
        (_tampered(path='"../../x"'), "files[0].path: path '../../x' has an empty, '.' or '..' component"),
        (_tampered(path='"/etc/passwd"'), "files[0].path: absolute path '/etc/passwd'"),
        (_tampered(path='"a//b"'), "files[0].path"),
        (_tampered(path="3"), "files[0].path must be a string, not an integer"),
        (_tampered(extra='name2 = 1\n').replace('name = "x"', 'name = "../../evil"'), "name: '../../evil' is not a valid slug"),
        (_tampered().replace('name = "x"', 'name = "a/b"'), "name: 'a/b' is not a valid slug"),
        (_tampered().replace('name = "x"', 'name = "x\\n"'), "is not a valid slug"),
        (_tampered().replace('version = "1.0.0"', 'version = "../x"'), "version: '../x' is not a version"),
        (_tampered().replace('kind = "skill"', 'kind = 3'), "kind must be a string, not an integer"),
        (_tampered(size='"big"'), "files[0].size must be a byte count"),
        (_tampered(size="-5"), "files[0].size must be a byte count"),
        (_tampered(size="true"), "files[0].size must be a byte count"),
        (_tampered(exe='"no"'), "files[0].executable must be true or false, not a string"),
        (_tampered(sha="7"), "is not a sha256"),
        (_tampered().replace("archive = {", 'archive = "x"\nxarchive = {'), "archive must be a table"),
        (_tampered(extra='default-agent = 5\n'), "default-agent must be a string, not an integer"),
        (_tampered(extra='dependencies = "abc"\n'), "dependencies must be an array of tables"),
        (_tampered(extra='dependencies = ["code-style"]\n'), "dependencies must be an array of tables"),
        (_tampered(extra='dependencies = [{ kind = "skill", name = "../x" }]\n'), "dependencies[0].name"),
        (_tampered(extra='tools = "git"\n'), "tools must be an array of tables"),
        (_tampered(extra='tools = [{ name = "git", install = { linux = 3 } }]\n'), "tools[0].install"),
        (_tampered().replace("files = [{", 'files = [{ path = "SKILL.md", sha256 = "' + SHA + '", size = 3 }, {'),
         "'SKILL.md' is listed twice"),
        (_tampered() + _tampered().split("\n", 2)[2], "package #2 (x): skill x is listed twice"),
        ('version = 1\npackage = ["a", "b"]\n', "package #1 (?): must be a [[package]] table, not a string"),
        ('version = 1\npackage = "abc"\n', "'package' must be an array"),
        ('version = 1\nmanifest-hash = 5\n', "manifest-hash must be a string"),
        ('version = true\n', "lockfile format version True"),
    ],
)
def test_a_tampered_lock_is_refused_with_the_field_named(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "strawpot.lock"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(LockfileError) as info:
        Lockfile.load(path)
    assert info.value.message.startswith(f"{path}: ")
    assert message in info.value.message
    assert info.value.exit_code == 2


def test_an_unreadable_lockfile_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "strawpot.lock").mkdir()
    with pytest.raises(LockfileError, match="cannot read the lockfile"):
        Lockfile.load(tmp_path / "strawpot.lock")


def test_every_control_character_is_escaped(tmp_path: Path) -> None:
    """TOML forbids U+007F (and U+0000-U+001F but tab) raw in a basic string; JSON escapes leave DEL raw."""
    weird = "".join(map(chr, range(0x20))) + "\x7f del \u2028 \ufeff \"q\" \\ end"
    tool = LockedTool("git", weird, {"linux": f"echo {weird}"})
    lock = _lock([LockedPackage(Kind.AGENT, "stub-agent", "0.1.0", "http://127.0.0.1:8787", SHA, 9,
                                files=(LockedFile("AGENT.md", "c" * 64, 5),), tools=(tool,))])
    path = tmp_path / "strawpot.lock"
    lock.write(path)
    assert "\x7f" not in path.read_text(encoding="utf-8")
    loaded = Lockfile.load(path).get(Kind.AGENT, "stub-agent")
    assert loaded is not None and loaded.tools[0].description == weird
    assert loaded.tools[0].install == {"linux": f"echo {weird}"}


def test_the_release_cooldown_is_recorded_only_when_set_and_must_be_a_duration(tmp_path: Path) -> None:
    import tomllib

    from valueclass import replace

    plain = _lock(_packages())
    assert "min-release-age" not in plain.dumps() and Lockfile.from_dict(tomllib.loads(plain.dumps())).min_release_age == ""
    cooled = replace(plain, min_release_age="3d")
    assert 'min-release-age = "3d"\n' in cooled.dumps()
    assert Lockfile.from_dict(tomllib.loads(cooled.dumps())).dumps() == cooled.dumps()
    path = tmp_path / "strawpot.lock"
    path.write_text(cooled.dumps().replace('"3d"', '"soon"'), encoding="utf-8")
    with pytest.raises(LockfileError, match="malformed lockfile: min-release-age: 'soon' is not a duration"):
        Lockfile.load(path)
