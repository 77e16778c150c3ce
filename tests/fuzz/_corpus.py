"""Seeded generators of hostile inputs for the client's parsers, and the one harness that runs them.

Each generator takes a `random.Random` and returns one sample: manifests and lockfiles as bytes (TOML
built from a grammar of plausible and hostile pieces, then mutated at the line and byte level),
frontmatter main files as text, archives as gzip bytes built with tarfile (every member type, hostile
names, pax records) and then mutated. The same seed gives the same samples, so a failure names its seed
and sample number and can be replayed. Used by tests/fuzz/ and benchmarks/fuzz_client.py.

`check_*` functions run one sample through the real parser and its callers' next steps, and raise
`Traceback` for any exception that is not a documented error of that parser.
"""

from __future__ import annotations

import gzip
import io
import os
import random
import tarfile
import traceback
from collections.abc import Callable
from pathlib import Path

_SLUGS = ["git-workflow", "a", "x1", "code-review", "reviewer", "stub-agent", "b-", "-b", "A", "../x", "a/b", "",
          "a b", "é", "x" * 65, "con", "a.b", "*", "1"]
_SPECS = ["^1.2", "*", "", "==2.1.0", ">=1,<3", "~1.2.3", "^", ">=", "1.2.3-", "^1.2 || 2", "!=1", "<<1", "@1",
          "^99999999999999999999.0.0", "1.0.0+build", ">=1.0.0-alpha.1", "\u00e9", " ", "^1.2,", ",", "=1"]
_SECTIONS = ["skills", "roles", "agents", "memories", "integrations", "registry", "orchestrator", "policy", "scripts",
             "session", "memory", "agents.stub-agent", "skills.x", "roles.reviewer", "tokens", "a.b.c", '"skills"',
             "skills . x", "", " ", "[skills]"]
_KEYS = _SLUGS + ["url", "version", "default_agent", "env", "timeout", "deadline", '"quoted key"', "'lit'", "a.b",
                  "trusted", "runtime", "role", "max_depth", '"\\u0000"', "\"\\ud800\"", "=", "#"]


def _toml_value(rng: random.Random, depth: int = 0) -> str:
    roll = rng.random()
    if roll < 0.35:
        return '"' + rng.choice(_SPECS) + '"'
    if roll < 0.45:
        return "'" + rng.choice(_SPECS + ["http://127.0.0.1:8787", "https://x"]) + "'"
    if roll < 0.52:
        return str(rng.choice([0, -1, 1, 3, 10**30, 2**63, 0.5, float("inf")])).replace("inf", "inf")
    if roll < 0.57:
        return rng.choice(["true", "false", "1979-05-27", "1979-05-27T07:32:00Z", "07:32:00", "nan", "+inf", "0x1F"])
    if roll < 0.75 and depth < 4:
        items = ", ".join(f"{rng.choice(_KEYS)} = {_toml_value(rng, depth + 1)}" for _ in range(rng.randint(0, 3)))
        return "{ " + items + " }"
    if roll < 0.88 and depth < 4:
        return "[" + ", ".join(_toml_value(rng, depth + 1) for _ in range(rng.randint(0, 3))) + "]"
    if roll < 0.93:
        n = rng.choice([50, 99, 101, 300, 2000])
        opener, closer = rng.choice([("[", "]"), ("{a=", "}")])
        return opener * n + "1" + closer * n
    return '"' + "".join(rng.choice(['\\"', "\\n", "\\u0041", "\\uD800", "\\U0010FFFF", "\\x", "\\", "a", "\u2028"])
                         for _ in range(rng.randint(1, 6))) + '"'


def manifest_text(rng: random.Random) -> str:
    """A strawpot.toml from the grammar: sections, entries, duplicates, dotted keys, arrays of tables."""
    lines: list[str] = []
    for _ in range(rng.randint(0, 6)):
        section = rng.choice(_SECTIONS)
        lines.append(f"[[{section}]]" if rng.random() < 0.05 else f"[{section}]")
        for _ in range(rng.randint(0, 5)):
            key = rng.choice(_KEYS)
            if rng.random() < 0.1:
                key = f"{key}.{rng.choice(_KEYS)}"
            lines.append(f"{key} = {_toml_value(rng)}")
            if rng.random() < 0.08:
                lines.append(lines[-1])  # a repeated key
    if rng.random() < 0.05:
        lines.append(rng.choice(lines) if lines else "x = 1")
    return "\n".join(lines) + ("\n" if rng.random() < 0.9 else "")


def lockfile_text(rng: random.Random) -> str:
    """A strawpot.lock as strawpot writes it, for random packages, with fields replaced by hostile values."""
    from strawpot.model.kinds import KIND_ORDER
    from strawpot.model.lockfile import LockedDependency, LockedFile, LockedPackage, LockedTool, Lockfile

    packages = {}
    for _ in range(rng.randint(0, 4)):
        kind = rng.choice(KIND_ORDER)
        name = rng.choice(_SLUGS[:8])
        packages[(kind, name)] = LockedPackage(
            kind=kind, name=name, version=rng.choice(["1.0.0", "0.1.0-alpha.1", "2.3.4+b"]),
            source="http://127.0.0.1:8787", archive_sha256="a" * 64, archive_size=rng.randint(0, 9999),
            files=tuple(LockedFile(p, "b" * 64, rng.randint(0, 99), rng.random() < 0.3)
                        for p in sorted({rng.choice(["SKILL.md", "bin/run", "a/b/c.txt", "x"]) for _ in range(3)})),
            dependencies=tuple(LockedDependency(rng.choice(KIND_ORDER), rng.choice(_SLUGS[:8]), rng.choice(_SPECS[:6]))
                               for _ in range(rng.randint(0, 2))),
            tools=tuple(LockedTool("git", "d", {"linux": "apt-get install git"}) for _ in range(rng.randint(0, 1))),
            default_agent=rng.choice([None, "stub-agent"]),
        )
    text = Lockfile(tuple(packages.values()), "sha256:" + "c" * 64, "strawpot fuzz").dumps()
    lines = text.splitlines()
    hostile = ['"../../etc/passwd"', '"/abs"', '"a/./b"', '"a\\\\b"', '"C:/x"', '""', "-1", "1e999", "[]", "{}",
               '"' + "x" * 2000 + '"', '"skill"', '"gadget"', "true", '"\\u0000"', '"1.0"', '"a" "b"']
    for _ in range(rng.randint(0, 4)):
        if not lines:
            break
        i = rng.randrange(len(lines))
        if "=" in lines[i] and rng.random() < 0.7:
            key = lines[i].split("=", 1)[0]
            lines[i] = f"{key}= {rng.choice(hostile + [_toml_value(rng)])}"
        elif rng.random() < 0.5:
            lines.insert(i, lines[i])
        else:
            del lines[i]
    return "\n".join(lines) + "\n"


def mutate(rng: random.Random, data: bytes, rounds: int | None = None) -> bytes:
    """Byte-level damage: flips, truncation, insertion of bytes TOML/YAML/tar readers find hard."""
    out = bytearray(data)
    specials = [b"\x00", b"\xff", b"\xfe\xff", b"\r", b"\n", b'"', b"'", b"[", b"]", b"{", b"}", b"=", b"\\", b"#",
                b"\xe2\x80\xa8", b"\t", b"---\n", b"&a ", b"*a", b"<<: ", b"!!python/object "]
    for _ in range(rng.randint(1, 4) if rounds is None else rounds):
        if not out:
            out += rng.choice(specials)
            continue
        roll, at = rng.random(), rng.randrange(len(out))
        if roll < 0.3:
            out[at] ^= 1 << rng.randrange(8)
        elif roll < 0.45:
            del out[at:]
        elif roll < 0.8:
            out[at:at] = rng.choice(specials)
        else:
            del out[at : at + rng.randint(1, 8)]
    return bytes(out)


_YAML_VALUES = ["x", "''", '"a\\u0000"', "[a, b]", "{a: 1}", "&a [1]", "*a", "!!binary aGk=", "!!python/name:os.system",
                "1.0.0", "~", "null", "2001-12-14", "0o17", ".inf", "|\n  block", ">\n  folded", "- a\n- b",
                "[" * 200 + "]" * 200, "{a: " * 100 + "1" + "}" * 100, "[" * 1200 + "]" * 1200, "\t", "'unclosed", "@", "`", "%YAML 1.1"]


def frontmatter_text(rng: random.Random) -> str:
    """A SKILL.md-like file: frontmatter lines from plausible keys and hostile YAML values, then a body."""
    keys = ["name", "description", "version", "metadata", "dependencies", "tools", "strawpot", "<<", "? complex",
            "- item", "name", ""]
    lines = []
    for _ in range(rng.randint(0, 8)):
        indent = "  " * rng.randint(0, 2)
        lines.append(f"{indent}{rng.choice(keys)}: {rng.choice(_YAML_VALUES)}")
    opening = rng.choice(["---\n", "---\n", "---\r\n", "\ufeff---\n", "", "--- \n", "----\n"])
    closing = rng.choice(["---\n", "---\n", "...\n", "", "---"])
    return opening + "\n".join(lines) + "\n" + closing + rng.choice(["# body\n", "", "---\nmore\n---\n"])


_NAMES = ["SKILL.md", "a", "a/b", "a/b.txt", "../evil", "/abs", "a/../../b", "./x", "a//b", "", ".", "x" * 300, "d/" + "y" * 120,
          "\u00e9t\u00e9.md", "a\\b", "C:/x", "bin/run", "a", "a/b", "lib/", "nul\x00x", "new\nline"]


def archive_bytes(rng: random.Random) -> bytes:
    """A gzip'd tar with random members of every type, names from `_NAMES`, sometimes pax or GNU headers,
    then (sometimes) damaged at the byte level."""
    raw = io.BytesIO()
    fmt = rng.choice([tarfile.PAX_FORMAT, tarfile.GNU_FORMAT, tarfile.USTAR_FORMAT])
    with tarfile.open(fileobj=raw, mode="w", format=fmt) as tar:
        for _ in range(rng.randint(0, 6)):
            name = rng.choice(_NAMES)
            info = tarfile.TarInfo(name)
            info.type = rng.choice([tarfile.REGTYPE] * 6 + [tarfile.DIRTYPE, tarfile.SYMTYPE, tarfile.LNKTYPE,
                                                            tarfile.FIFOTYPE, tarfile.CHRTYPE, tarfile.CONTTYPE])
            info.mode = rng.choice([0o644, 0o755, 0o4755, 0o777, 0])
            info.linkname = rng.choice(["", "../../etc/passwd", "/etc", "SKILL.md"])
            if fmt == tarfile.PAX_FORMAT and rng.random() < 0.3:
                info.pax_headers = {rng.choice(["comment", "path", "size", "linkpath", "mtime", "GNU.sparse.map"]):
                                    rng.choice(["x", "../y", "-1", "99999999999", "1.5", "\u00e9", ""])}
            data = rng.randbytes(rng.choice([0, 1, 100, 600])) if info.type == tarfile.REGTYPE else b""
            info.size = len(data)
            try:
                tar.addfile(info, io.BytesIO(data) if data else None)
            except (ValueError, tarfile.TarError, UnicodeError):
                continue  # a name tarfile itself cannot encode in this format
    data = gzip.compress(raw.getvalue(), mtime=0)
    return mutate(rng, data) if rng.random() < 0.3 else data


_JSON_HOSTILE: list[object] = [None, True, 0, -1, 2**70, 1.5, "", "../../etc", "/abs", "a/b", "Evil", "x" * 300, "*",
                                 "top^1", "top>=1,<2", "1.0.0", "a" * 64, "\u0000", [], {}, ["../x"], {"skills": "x"},
                                 {"skills": ["../../etc"]}, {"roles": [1]}, {"linux": ["x"]}, {"install": []},
                                 {"install": {"linux": 1}}, [[[]]], {"a": {"b": {"c": {}}}}]


def _hostile_json(rng: random.Random) -> object:
    if rng.random() < 0.1:
        n = rng.choice([20, 40, 200, 5000])
        return json_nested(n)
    return rng.choice(_JSON_HOSTILE)


def json_nested(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = [value]
    return value


def versions_answer(rng: random.Random, slug: str, archive: bytes) -> bytes:
    """A `/versions` body for `slug` whose fields are, now and then, replaced by hostile JSON values."""
    import hashlib
    import json

    entry: dict[str, object] = {
        "version": "1.0.0", "dependencies": {"skills": []}, "defaultAgent": None, "tools": {},
        "sha256": hashlib.sha256(archive).hexdigest(), "size": len(archive), "yanked": False, "createdAt": 1,
        "files": [{"path": "SKILL.md", "size": 1, "sha256": "b" * 64, "executable": False}],
    }
    body: dict[str, object] = {"kind": "skill", "slug": slug, "versions": [entry]}
    for _ in range(rng.randint(1, 3)):
        target = rng.choice([body, entry, entry, entry])
        target[rng.choice(list(target))] = _hostile_json(rng)
    try:
        text = json.dumps(body)
    except (RecursionError, ValueError):
        text = "[" * 5000 + "]" * 5000
    return mutate(rng, text.encode()) if rng.random() < 0.15 else text.encode()


# -- the harness ---------------------------------------------------------------------------------------------


class Traceback(AssertionError):  # noqa: N818 - it is what the user would have seen
    """An exception the parser does not document: the user would see a traceback."""


def _guard(allowed: tuple[type[BaseException], ...], work: Callable[[], None], what: str) -> None:
    try:
        work()
    except allowed:
        return
    except Exception as exc:  # noqa: BLE001 - anything else is the finding
        raise Traceback(f"{what}: {type(exc).__name__}: {exc}\n{traceback.format_exc()}") from exc


def _only(folder: Path, expected: set[Path]) -> None:
    found = set(folder.rglob("*"))
    if found != expected:
        raise Traceback(f"reading wrote {sorted(map(str, found - expected))} (reads must write nothing)")


def check_manifest(data: bytes, folder: Path) -> None:
    """Manifest.load and what commands do next (entries, hash, registry URL and time limits, edit, dump),
    and the no-op path's own reader: only StrawpotError may come out."""
    from strawpot.config_files import load_settings
    from strawpot.install.fastcheck import manifest_hash
    from strawpot.model.errors import StrawpotError
    from strawpot.model.kinds import Kind
    from strawpot.model.layout import Project
    from strawpot.model.manifest import Manifest

    path = folder / "strawpot.toml"
    path.write_bytes(data)

    def work() -> None:
        manifest_hash(path)
        manifest = Manifest.load(path)
        manifest.entries()
        manifest.dependency_hash()
        load_settings(Project(folder), environ={})
        manifest.set_spec(Kind.SKILL, "fuzz-added", "^1.0.0")
        manifest.dumps()

    _guard((StrawpotError,), work, "manifest")
    _only(folder, {path})


def check_lockfile(data: bytes, folder: Path) -> None:
    """Lockfile.load, then a round trip through dumps and a verify of the (empty) tree: only StrawpotError."""
    from strawpot.model.errors import StrawpotError
    from strawpot.model.installed import InstalledTree
    from strawpot.model.lockfile import Lockfile

    path = folder / "strawpot.lock"
    path.write_bytes(data)

    def work() -> None:
        lock = Lockfile.load(path)
        path.write_text(lock.dumps(), encoding="utf-8")
        again = Lockfile.load(path)
        if again.dumps() != lock.dumps():
            raise Traceback("a lock read back differs from the lock written")
        InstalledTree(folder / ".strawpot").verify(lock)

    _guard((StrawpotError,), work, "lockfile")
    _only(folder, {path})


def check_frontmatter(text: str) -> None:
    """split_frontmatter: only FrontmatterError (a ValueError with line and column) may come out."""
    from strawpot.model.frontmatter import FrontmatterError, split_frontmatter

    _guard((FrontmatterError,), lambda: split_frontmatter(text), "frontmatter")


def check_registry_answer(body: bytes, folder: Path) -> None:
    """`install skill top` against a registry whose `/versions` answer is `body` (an in-memory transport):
    only StrawpotError may come out, and nothing may be written outside the project folder."""
    import httpx

    from hub_client import Cache, HubClient
    from strawpot.install.options import Edit, Options, Requested
    from strawpot.install.service import run
    from strawpot.model.errors import StrawpotError
    from strawpot.model.kinds import Kind
    from strawpot.model.layout import Project

    archive = top_archive()

    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/skills/top/versions"):
            return httpx.Response(200, content=body, headers={"content-type": "application/json"})
        if request.url.path.endswith("/archive"):
            return httpx.Response(200, content=archive)
        return httpx.Response(404, json={"error": "not found"})

    project = folder / "project"
    project.mkdir()
    client = HubClient("http://hub.test", transport=httpx.MockTransport(answer), cache=Cache(folder / "cache"),
                       retries=0)
    try:
        _guard((StrawpotError,), lambda: run(Project.at(project), Edit(add=(Requested(Kind.SKILL, "top"),)),
                                             Options(registry="http://hub.test", tools="skip"), client=client),
               "registry answer")
    finally:
        client.close()
    for path in folder.rglob("*"):
        if not (path.is_relative_to(project) or path.is_relative_to(folder / "cache")):
            raise Traceback(f"registry answer: wrote {path} outside the project and the cache")


_ARCHIVE: list[bytes] = []


def top_archive() -> bytes:
    if not _ARCHIVE:
        from strawpot.model.archive import build_archive

        _ARCHIVE.append(build_archive({"SKILL.md": b"---\nname: top\ndescription: d\n---\n"}))
    return _ARCHIVE[0]


def check_archive(data: bytes, folder: Path) -> None:
    """read_archive, then the install's own writer into `folder/target`: only ArchiveError may come out, and
    every file written must be inside the target (nothing beside it, no link followed)."""
    from strawpot.install.apply import _write_files
    from strawpot.model.archive import ArchiveError, read_archive

    target = folder / "target"
    target.mkdir()

    def work() -> None:
        members = read_archive(data)
        _write_files(target, {m.path: (m.data, m.executable) for m in members})

    _guard((ArchiveError,), work, "archive")
    real = os.path.realpath(target)
    for path in folder.rglob("*"):
        if not os.path.realpath(path).startswith(real + os.sep) and path != target:
            raise Traceback(f"archive: wrote {path} outside the target folder")
        if path.is_symlink():
            raise Traceback(f"archive: created a link {path}")
