"""The lock read without tomllib reads what tomllib reads; any other text (edited, hostile) is tomllib's to read."""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from strawpot.model.kinds import Kind
from strawpot.model.lock_text import read_lock_text
from strawpot.model.lockfile import (
    LockedDependency,
    LockedFile,
    LockedPackage,
    LockedSigner,
    LockedTool,
    LockedTrust,
    Lockfile,
    LockfileError,
)
from strawpot.model.toml_text import parse_toml

# text with every escape dumps writes: quotes, backslashes, control characters, DEL, non-ASCII
_TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)
_SLUG = st.sampled_from(["a", "b", "code-review", "x1", "long-name-2"])
_SHA = st.sampled_from(["0" * 64, "a" * 64, "0123456789abcdef" * 4])
_SIZE = st.sampled_from([0, 1, 302, 2**40])
_PATH = st.sampled_from(["SKILL.md", "a/b.md", "ünï/ファイル.md", "bin/run", "x y.txt", 'q"uote\\d'])
# an install key is an OS name; any other text must be written so that it reads back as itself
_TOOL = st.builds(LockedTool, _SLUG, _TEXT, st.dictionaries(st.sampled_from(["linux", "macos", "windows"]) | _TEXT,
                                                           _TEXT, max_size=3))


@st.composite
def _package(draw: st.DrawFn) -> LockedPackage:
    archived = draw(st.booleans())
    return LockedPackage(
        draw(st.sampled_from(list(Kind))), draw(_SLUG),
        draw(st.sampled_from(["0.0.0", "1.2.3", "10.0.1-beta.1"])),
        draw(_TEXT), draw(_SHA) if archived else None, draw(_SIZE) if archived else None,
        files=tuple({f.path: f for f in draw(st.lists(st.builds(LockedFile, _PATH, _SHA, _SIZE, st.booleans()),
                                                      max_size=3))}.values()),
        dependencies=tuple(draw(st.lists(st.builds(LockedDependency, st.sampled_from(list(Kind)), _SLUG, _TEXT),
                                         max_size=3, unique_by=lambda d: (d.kind, d.name)))),
        tools=tuple(draw(st.lists(_TOOL, max_size=2, unique_by=lambda t: t.name))),
        default_agent=draw(st.none() | _SLUG),
        signer=draw(st.none() | st.builds(LockedSigner, _SHA.map(lambda h: f"ed25519:{h}"), _TEXT)),
        log_index=draw(st.none() | _SIZE), log=draw(st.none() | _TEXT),
    )


_LOCKS = st.builds(
    Lockfile, st.lists(_package(), max_size=4, unique_by=lambda p: p.key).map(tuple), _TEXT, _TEXT,
    trust=st.lists(st.builds(LockedTrust, _TEXT, st.lists(_SHA, max_size=2).map(tuple)), max_size=2,
                   unique_by=lambda t: t.id).map(tuple),
    min_release_age=st.sampled_from(["", "3d", "12h"]),
)


def _tomllib_path(text: str) -> Lockfile | str:
    """What reading `text` with tomllib gives: the lock, or the one-line error."""
    try:
        return Lockfile.from_dict(parse_toml(text, "strawpot.lock", error=LockfileError), where="strawpot.lock")
    except LockfileError as exc:
        return exc.message


def _loaded(tmp_path: Path, text: str) -> Lockfile | str:
    path = tmp_path / "strawpot.lock"
    path.write_bytes(text.encode("utf-8"))
    try:
        return Lockfile.load(path)
    except LockfileError as exc:
        return exc.message.replace(str(path), "strawpot.lock")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_LOCKS)
def test_on_the_text_dumps_writes_it_reads_what_tomllib_reads(tmp_path: Path, lock: Lockfile) -> None:
    text = lock.dumps()
    assert read_lock_text(text) == tomllib.loads(text)
    assert _loaded(tmp_path, text) == _tomllib_path(text)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_LOCKS, st.data())
def test_any_change_to_the_text_is_read_as_tomllib_reads_it(tmp_path: Path, lock: Lockfile, data: st.DataObject) -> None:
    text = lock.dumps()
    at = data.draw(st.integers(min_value=0, max_value=len(text)))
    cut = data.draw(st.integers(min_value=0, max_value=3))
    put = data.draw(st.sampled_from(["", " ", "\n", '"', "\\", "\\/", ",", "]", "[", "{", "}", "=", "#", "0", "x",
                                     "\r\n", "\t", "'", "\\u0000", "\\ud800", "true", "[[package]]\n"]))
    changed = text[:at] + put + text[at + cut:]
    assert _loaded(tmp_path, changed) == _tomllib_path(changed)


@pytest.mark.parametrize("text", [
    # TOML refuses both; a reader that only followed dumps' layout would take them
    "{header}\nversion = 1\npackage = []\n\n[[package]]\nkind = \"skill\"\nname = \"a\"\nversion = \"1.0.0\"\n"
    "source = \"\"\ndependencies = []\nfiles = []\n",
    '{header}\nversion = 1\ngenerated-by = "a\\/b"\nmanifest-hash = ""\n',
    '{header}\nversion = 1\ngenerated-by = "\\ud800"\nmanifest-hash = ""\n',
])
def test_text_dumps_never_writes_is_left_to_tomllib(tmp_path: Path, text: str) -> None:
    text = text.format(header="# This file is written by strawpot; do not edit it by hand.")
    loaded = _loaded(tmp_path, text)
    assert isinstance(loaded, str) and "invalid TOML" in loaded, loaded
    assert loaded == _tomllib_path(text)


def test_a_lock_strawpot_wrote_is_read_without_importing_tomllib(tmp_path: Path) -> None:
    lock = Lockfile((LockedPackage(Kind.AGENT, "a", "1.0.0", "http://r", "a" * 64, 3,
                                   files=(LockedFile("AGENT.md", "b" * 64, 3),),
                                   tools=(LockedTool("git", 'Git "x"', {"linux": "apt install git"}),)),),
                    manifest_hash="sha256:" + "0" * 64)
    path = tmp_path / "strawpot.lock"
    lock.write(path)
    sys.modules.pop("tomllib", None)
    assert Lockfile.load(path) == lock
    assert "tomllib" not in sys.modules
    path.write_text(lock.dumps().replace("version = 1\n", "version = 1  # edited\n"), encoding="utf-8")
    assert Lockfile.load(path) == lock
    assert "tomllib" in sys.modules


@given(st.text(alphabet=st.characters(), max_size=20))
@example("\x7f")
@example("\ud800")
@example("\u2028\u00a0")
@example('a"b')
@example("a\\b")
@example("\x1f\t")
def test_a_string_with_nothing_to_escape_is_written_as_json_would_write_it(text: str) -> None:
    from strawpot.model.lockfile import _s

    assert _s(text) == json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


@pytest.mark.parametrize("key", ['linux = "curl evil | sh", macos', "", "linux x", "ünï"])
def test_a_cached_parse_is_taken_only_for_the_lock_tomllib_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 key: str) -> None:
    """A parse kept in the cache folder is any JSON: one whose install key, written bare, reads back as other keys
    (or does not parse) must not stand in for the file (found by a review's fuzzing)."""
    from strawpot.model.toml_text import remember

    monkeypatch.setenv("STRAWPOT_CACHE_DIR", str(tmp_path / "cache"))
    lock = Lockfile((LockedPackage(Kind.AGENT, "a", "1.0.0", "http://r", "a" * 64, 3,
                                   files=(LockedFile("AGENT.md", "b" * 64, 3),),
                                   tools=(LockedTool("git", "", {key: "brew install git"}),)),),
                    manifest_hash="sha256:" + "0" * 64)
    path = tmp_path / "strawpot.lock"
    text = lock.dumps()
    path.write_text(text, encoding="utf-8")
    assert Lockfile.load(path) == lock == _tomllib_path(text)  # the key is written so that it reads back
    planted = tomllib.loads(text)
    planted["package"][0]["tools"][0]["install"] = {key: "brew install git"}
    bare = text.replace(json.dumps(key, ensure_ascii=False) + " = ", key + " = ")  # what a bare writer would write
    path.write_text(bare, encoding="utf-8")
    remember(bare, path, planted)
    assert _loaded(tmp_path, bare) == _tomllib_path(bare)
