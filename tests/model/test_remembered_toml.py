"""A TOML file's parse kept in the cache folder (toml_text.remember/remembered) is served only for that file's exact
text, only when JSON holds it exactly, only after its reader accepted it, and to `verify` only as a lock whose
`dumps` is the file's text."""

from __future__ import annotations

import json
import os
import stat
import sys
import tomllib
from pathlib import Path

import pytest

from strawpot.model import toml_text
from strawpot.model.lockfile import Lockfile, LockfileError
from strawpot.model.toml_text import REMEMBERED_DIR, remember, remembered
from tests._cli import strawpot_here

TEXTS = [
    "",
    'a = 1\nb = "two"\n[t]\nlist = [1, 2.5, "x", true]\n[[arr]]\nk = "v"\n[[arr]]\nk = "w"\n',
    'name = "ünï ファイル \\u0000 \\t"\nbig = 9223372036854775807\nneg = -0.0\ninf = inf\nexp = 1e300\n',
    '[a.b.c]\nd = { e = [[1], [2, [3]]] }\n"quoted key" = \'literal \\ text\'\nml = """\nline\n"""\n',
]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("STRAWPOT_CACHE_DIR", str(folder))
    return folder


def entries(cache: Path) -> list[Path]:
    folder = cache / REMEMBERED_DIR
    return sorted(folder.iterdir()) if folder.exists() else []


@pytest.mark.parametrize("text", TEXTS)
def test_the_parse_read_back_is_tomllibs(text: str, tmp_path: Path, cache: Path) -> None:
    path = tmp_path / "file.toml"
    path.write_text(text, encoding="utf-8")
    data = tomllib.loads(text)
    assert remembered(text, path) is None
    remember(text, path, data)
    back = remembered(text, path)
    assert back == data and json.dumps(back, sort_keys=True) == json.dumps(data, sort_keys=True)
    assert [type(v) for v in (back or {}).values()] == [type(v) for v in data.values()]
    [entry] = entries(cache)
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600


def test_another_text_at_the_same_path_is_not_served_the_old_parse(tmp_path: Path, cache: Path) -> None:
    path = tmp_path / "file.toml"
    remember("a = 1\n", path, {"a": 1})
    assert remembered("a = 1\n", path) == {"a": 1}
    assert remembered("a = 2\n", path) is None
    assert remembered("a = 1\n", tmp_path / "other.toml") is None  # the same text at another path
    assert remembered("a = 1\n", tmp_path / "sub" / ".." / "file.toml") == {"a": 1}  # (the same absolute path)


def test_an_edited_lock_is_read_again(tmp_path: Path, cache: Path) -> None:
    path = tmp_path / "strawpot.lock"
    first = Lockfile((), manifest_hash="sha256:" + "0" * 64, generated_by="first")
    first.write(path)
    assert Lockfile.load(path, remember=True) == first
    assert Lockfile.load(path, remember=True) == first and len(entries(cache)) == 1  # served, kept once
    second = Lockfile((), manifest_hash="sha256:" + "1" * 64, generated_by="second")
    second.write(path)
    assert Lockfile.load(path, remember=True) == second
    assert len(entries(cache)) == 1  # one entry a file: the new text's


@pytest.mark.parametrize("text", ["when = 2024-01-02\n", "t = 10:20:30\n", "dt = 2024-01-02T03:04:05Z\n",
                                  "[x]\nn = nan\n"])
def test_a_parse_json_cannot_hold_exactly_is_not_kept(text: str, tmp_path: Path, cache: Path) -> None:
    path = tmp_path / "file.toml"
    remember(text, path, tomllib.loads(text))
    assert remembered(text, path) is None and entries(cache) == []


def _entry(text: str, path: Path) -> tuple[Path, str]:
    return toml_text._remembered_at(text, path)


@pytest.mark.parametrize("content", [
    b"not json", b"", b"[1, 2]", b'{"key": "x", "data": {}}', b'{"data": {"a": 1}}', b"\xff\xfe",
    b'{"key": KEY, "data": [1]}', b'{"key": KEY, "data": "a"}', b'{"key": OTHER_PYTHON, "data": {"a": 1}}',
    b'{"key": OTHER_TEXT, "data": {"a": 1}}', b"[" * 100000,
])
def test_an_entry_that_is_not_this_texts_parse_is_ignored(content: bytes, tmp_path: Path, cache: Path) -> None:
    path = tmp_path / "file.toml"
    text = "a = 1\n"
    entry, key = _entry(text, path)
    major, minor = sys.version_info[:2]
    other_python = key.replace(f"{major}.{minor}:", f"{major}.{minor - 1}:", 1)
    other_text = _entry("a = 2\n", path)[1]
    assert other_python != key and other_text != key
    content = (content.replace(b"KEY", json.dumps(key).encode()).replace(b"OTHER_PYTHON", json.dumps(other_python)
               .encode()).replace(b"OTHER_TEXT", json.dumps(other_text).encode()))
    entry.parent.mkdir(parents=True)
    entry.write_bytes(content)
    assert remembered(text, path) is None
    entry.write_text(json.dumps({"key": key, "data": {"a": 1}}))  # the same entry, made right, is served
    assert remembered(text, path) == {"a": 1}


def test_a_cache_folder_that_cannot_be_written_keeps_nothing_and_raises_nothing(tmp_path: Path,
                                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    path = tmp_path / "strawpot.lock"
    Lockfile((), manifest_hash="sha256:" + "0" * 64).write(path)
    for cache in (blocker, blocker / "below"):  # a file where the folder must be, and below one
        monkeypatch.setenv("STRAWPOT_CACHE_DIR", str(cache))
        remember("a = 1\n", tmp_path / "f.toml", {"a": 1})
        assert remembered("a = 1\n", tmp_path / "f.toml") is None
        assert Lockfile.load(path, remember=True) == Lockfile.load(path)
    assert blocker.read_text() == ""


LOCK_PACKAGE = """
[[package]]
kind = "skill"
name = "a"
version = "1.0.0"
source = "http://r"
files = [{{ path = "{path}", sha256 = "{sha}", size = 1 }}]
"""


@pytest.mark.parametrize("bad", ["../escape", "/abs", "a/./b", "ok\\u0001", "bad\\\\path"])
def test_a_lock_that_parses_but_is_refused_is_not_kept(bad: str, tmp_path: Path, cache: Path) -> None:
    good = Lockfile((), manifest_hash="sha256:" + "0" * 64).dumps()
    path = tmp_path / "strawpot.lock"
    path.write_text(good + LOCK_PACKAGE.format(path="SKILL.md", sha="a" * 64), encoding="utf-8")
    assert Lockfile.load(path, remember=True).packages[0].files[0].path == "SKILL.md"  # the template reads
    for entry in entries(cache):
        entry.unlink()
    path.write_text(good + LOCK_PACKAGE.format(path=bad, sha="a" * 64), encoding="utf-8")
    tomllib.loads(path.read_text(encoding="utf-8"))  # it parses
    for _ in range(2):
        with pytest.raises(LockfileError):
            Lockfile.load(path, remember=True)
    assert entries(cache) == []


def test_a_manifest_that_parses_but_is_refused_is_not_kept(tmp_path: Path, cache: Path) -> None:
    from strawpot.model.errors import UsageError
    from strawpot.model.manifest import Manifest

    path = tmp_path / "strawpot.toml"
    path.write_text('[skills]\n"../x" = "*"\n', encoding="utf-8")
    for _ in range(2):
        with pytest.raises(UsageError):
            Manifest.read(path, remember=True)
    assert entries(cache) == []
    path.write_text('[skills]\nx = "*"\n', encoding="utf-8")
    assert [e.name for e in Manifest.read(path, remember=True).entries()] == ["x"] and len(entries(cache)) == 1


# -- verify checks a kept parse against the file; tree, why and list may be served it ---------------------------


SKILL = "---\nname: my-skill\ndescription: A local skill.\nmetadata:\n  version: 1.0.0\n---\n\nRule one.\n"


def _installed(tmp_path: Path, cache: Path) -> tuple[Path, dict[str, str]]:
    """A project with one skill installed from its folder (nothing fetched), and the environment it runs in."""
    (tmp_path / "skills" / "my-skill").mkdir(parents=True)
    (tmp_path / "skills" / "my-skill" / "SKILL.md").write_text(SKILL)
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "strawpot.toml").write_text('[skills]\nmy-skill = { path = "../skills/my-skill" }\n')
    env = {"STRAWPOT_CACHE_DIR": str(cache), "STRAWPOT_REGISTRY_URL": "http://127.0.0.1:9"}
    assert strawpot_here("install", cwd=proj, extra_env=env).returncode == 0
    return proj, env


def test_verify_reads_the_lock_not_the_cache(tmp_path: Path, cache: Path) -> None:
    proj, env = _installed(tmp_path, cache)
    assert entries(cache) == []  # install keeps no parse
    tree = strawpot_here("tree", "--json", cwd=proj, extra_env=env)
    assert tree.returncode == 0 and json.loads(tree.stdout)["roots"][0]["version"] == "1.0.0", tree.stderr
    kept = [e for e in entries(cache) if "package" in json.loads(e.read_text())["data"]]
    assert len(kept) == 1, "tree kept the lock's parse"
    entry = json.loads(kept[0].read_text())
    lock_text = (proj / "strawpot.lock").read_text(encoding="utf-8")
    assert entry["key"] == _entry(lock_text, proj / "strawpot.lock")[1]  # the key of the file's text: served
    [package] = entry["data"]["package"]
    package["version"] = "9.9.9"
    package["files"][0]["sha256"] = "0" * 64
    kept[0].write_text(json.dumps(entry))

    shown = strawpot_here("tree", "--json", cwd=proj, extra_env=env)
    assert json.loads(shown.stdout)["roots"][0]["version"] == "9.9.9", "tree was not served the kept parse"
    for args in (["verify"], ["verify", "--json"]):
        done = strawpot_here(*args, cwd=proj, extra_env=env)
        assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(strawpot_here("verify", "--json", cwd=proj, extra_env=env).stdout)
    assert report["ok"] is True and report["packages"] == 1
    # and a real difference is still found: verify reads the installed files against the file
    (proj / ".strawpot" / "skills" / "my-skill" / "SKILL.md").write_text(SKILL + "more\n")
    assert strawpot_here("verify", cwd=proj, extra_env=env).returncode == 5
    assert os.path.exists(kept[0])


def test_a_manifest_holding_secrets_is_never_kept(tmp_path: Path, cache: Path) -> None:
    """A strawpot.toml with an agent's `env` table (which the settings refuse in a project file) or a token is read
    by tree and verify, but its parse is not copied to the cache; the lock's is."""
    proj, env = _installed(tmp_path, cache)
    for secret in ('\n[agents.claude.env]\nANTHROPIC_API_KEY = "sk-secret"\n', '\n[registry]\ntoken = "sk-secret"\n'):
        for entry in entries(cache):
            entry.unlink()
        (proj / "strawpot.toml").write_text('[skills]\nmy-skill = { path = "../skills/my-skill" }\n' + secret)
        for command in ("tree", "verify"):
            done = strawpot_here(command, cwd=proj, extra_env=env)
            assert done.returncode == 0 and "sk-secret" not in done.stdout + done.stderr, (command, done.stderr)
            assert not any("sk-secret" in e.read_text() for e in entries(cache)), "a secret was copied to the cache"
            assert len(entries(cache)) == 1  # the lock's parse alone


def test_a_kept_entry_that_is_a_link_or_a_fifo_is_not_read(tmp_path: Path, cache: Path) -> None:
    """An entry is read without following a link or blocking on a FIFO: a planted one is passed over (and the file is
    parsed as if none was kept)."""
    path = tmp_path / "strawpot.lock"
    text = 'a = 1\n'
    remember(text, path, {"a": 1})
    [entry] = entries(cache)
    real = tmp_path / "elsewhere.json"
    real.write_bytes(entry.read_bytes())
    entry.unlink()
    entry.symlink_to(real)
    assert remembered(text, path) is None
    entry.unlink()
    os.mkfifo(entry)
    assert remembered(text, path) is None  # a read that blocked would time the test out
