"""The lockfile `strawpot.lock`: a deterministic TOML record of every locked package and file.

The reader is picked by the file's `version` key, so a newer format fails with a clear message.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path

from strawpot.model.errors import UsageError
from strawpot.model.fs import atomic_write, read_own_text
from strawpot.model.kinds import KIND_ORDER, Kind
from strawpot.model.layout import LOCK_NAME
from strawpot.model.lock_text import read_lock_text
from strawpot.model.paths import UnsafePath, safe_relative_path
from strawpot.model.slugs import slug_error
from strawpot.model.toml_text import not_utf8, parse_toml, remembered
from strawpot.model.toml_text import remember as keep_parse
from valueclass import Record, field

TYPE_CHECKING = False  # typing is not imported on the read-only commands' path
if TYPE_CHECKING:
    from typing import Any

LOCK_VERSION = 1
# `strawpot lock` reads the previous lock to keep its versions, so it refuses a broken one too: say so.
_REGENERATE = "move it aside and run `strawpot lock` to write a fresh one"


class LockfileError(UsageError):
    """strawpot.lock cannot be read; the message names the file and the position."""


class LockedFile(Record):
    """One file of a locked package: its path in the package, hash, size and executable bit."""

    path: str
    sha256: str
    size: int
    executable: bool = False


class LockedDependency(Record):
    """An edge of the locked graph: the package a locked package depends on, and its specifier."""

    kind: Kind
    name: str
    spec: str


class LockedTool(Record):
    """A system tool a locked agent needs, with the install command per OS its AGENT.md gives."""

    name: str
    description: str
    install: dict[str, str] = field(default_factory=dict)


class LockedSigner(Record):
    """The key (`ed25519:<hex>`) and account handle a package version's publish statement was signed by."""

    key: str
    handle: str


class LockedPackage(Record):
    """One `[[package]]` of strawpot.lock: the version resolved, where from, its archive, files and edges."""

    kind: Kind
    name: str
    version: str
    source: str
    archive_sha256: str | None
    archive_size: int | None
    files: tuple[LockedFile, ...] = ()
    dependencies: tuple[LockedDependency, ...] = ()
    tools: tuple[LockedTool, ...] = ()
    default_agent: str | None = None
    signer: LockedSigner | None = None  # who signed the version (checked at resolution); None: unsigned
    log_index: int | None = None  # where its publish sits in the registry's transparency log
    log: str | None = None  # the registry whose log that is, when not `source` (a mirror's upstream)

    @property
    def key(self) -> tuple[Kind, str]:
        return (self.kind, self.name)


class LockedTrust(Record):
    """Install scripts and tool hints of one package (`agent:x`) the user trusted: for each, the sha256 of its exact
    text together with every file the package ships (`strawpot.install.trust.trust_digest`; a lock written before
    pins covered files holds the text's sha256 alone, which no longer lets anything run)."""

    id: str
    sha256: tuple[str, ...]


class Lockfile(Record):
    """strawpot.lock: the locked packages, the manifest hash they were resolved for, and the trust granted."""

    packages: tuple[LockedPackage, ...]
    manifest_hash: str
    generated_by: str = ""
    version: int = LOCK_VERSION
    trust: tuple[LockedTrust, ...] = ()
    min_release_age: str = ""  # `[install] min_release_age` the resolution honoured ("": none)

    def __post_init__(self) -> None:
        order = {k: i for i, k in enumerate(KIND_ORDER)}
        ordered = tuple(sorted(self.packages, key=lambda p: (order[p.kind], p.name)))
        object.__setattr__(self, "packages", ordered)
        object.__setattr__(self, "trust", tuple(sorted(self.trust, key=lambda t: t.id)))
        object.__setattr__(self, "_index", {p.key: p for p in ordered})

    def get(self, kind: Kind, name: str) -> LockedPackage | None:
        index: dict[tuple[Kind, str], LockedPackage] = self._index  # type: ignore[attr-defined]
        return index.get((kind, name))

    # -- reading ------------------------------------------------------------------------------------

    @classmethod
    def load(cls, path: Path, *, remember: bool = False) -> Lockfile:
        """The lock at `path`. Its TOML parse is kept in the cache folder (`toml_text.remember`) and read back from
        there: as it is with `remember`, for what a command shows (tree, why, list); else only when `dumps` of the
        lock it gives is the file's text, as for the text's own fast read (`_canonical`)."""
        try:
            text = read_own_text(path)
        except FileNotFoundError:
            raise LockfileError(f"{path}: no lockfile", hint="run `strawpot lock` to create it") from None
        except UnicodeDecodeError as exc:
            raise LockfileError(not_utf8(path, exc)) from None
        except OSError as exc:
            raise LockfileError(f"{path}: cannot read the lockfile: {exc.strerror or exc}", hint=_REGENERATE) from None
        kept = remembered(text, path)
        if kept is not None and remember:
            return cls.from_dict(kept, where=str(path))
        canonical = _canonical(text, str(path), kept)
        if canonical is not None:
            data, lock = canonical
        else:
            data = parse_toml(text, path, error=LockfileError, hint=_REGENERATE)
            lock = cls.from_dict(data, where=str(path))
        if data is not kept:
            keep_parse(text, path, data)
        return lock

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, where: str = LOCK_NAME) -> Lockfile:
        version = data.get("version")
        reader = _READERS.get(version) if type(version) is int else None
        if reader is None:
            raise LockfileError(
                f"{where}: lockfile format version {version!r} is not one this strawpot reads (1)",
                hint=f"upgrade strawpot, or {_REGENERATE}",
            )
        try:
            return reader(data)
        except (KeyError, TypeError, ValueError) as exc:
            raise LockfileError(f"{where}: malformed lockfile: {exc}", hint=_REGENERATE) from None

    # -- writing ------------------------------------------------------------------------------------

    def dumps(self) -> str:
        out = [
            "# This file is written by strawpot; do not edit it by hand.",
            f"version = {self.version}",
            f"generated-by = {_s(self.generated_by)}",
            f"manifest-hash = {_s(self.manifest_hash)}",
        ]
        if self.min_release_age:
            out.append(f"min-release-age = {_s(self.min_release_age)}")
        for pkg in self.packages:
            out += ["", "[[package]]", f"kind = {_s(pkg.kind.value)}", f"name = {_s(pkg.name)}",
                    f"version = {_s(pkg.version)}", f"source = {_s(pkg.source)}"]
            if pkg.archive_sha256 is not None:
                out.append(f"archive = {{ sha256 = {_s(pkg.archive_sha256)}, size = {pkg.archive_size or 0} }}")
            if pkg.default_agent:
                out.append(f"default-agent = {_s(pkg.default_agent)}")
            if pkg.signer is not None:
                out.append(f"signer = {{ key = {_s(pkg.signer.key)}, handle = {_s(pkg.signer.handle)} }}")
            if pkg.log_index is not None:
                out.append(f"log-index = {pkg.log_index}")
            if pkg.log is not None:
                out.append(f"log = {_s(pkg.log)}")
            out.append("dependencies = " + _array(
                f"{{ kind = {_s(d.kind.value)}, name = {_s(d.name)}, spec = {_s(d.spec)} }}"
                for d in sorted(pkg.dependencies, key=lambda d: (d.kind.value, d.name))
            ))
            if pkg.tools:
                out.append("tools = " + _array(
                    f"{{ name = {_s(t.name)}, description = {_s(t.description)}, install = {{ "
                    + ", ".join(f"{_key(k)} = {_s(v)}" for k, v in sorted(t.install.items())) + " } }"
                    for t in sorted(pkg.tools, key=lambda t: t.name)
                ))
            out.append("files = " + _array(
                f"{{ path = {_s(f.path)}, sha256 = {_s(f.sha256)}, size = {f.size}, "
                f"executable = {'true' if f.executable else 'false'} }}"
                for f in sorted(pkg.files, key=lambda f: f.path)
            ))
        for pin in self.trust:
            out += ["", "[[trust]]", f"id = {_s(pin.id)}", "sha256 = " + _array(_s(h) for h in sorted(pin.sha256))]
        return "\n".join(out) + "\n"

    def pins(self, pid: str) -> frozenset[str]:
        """The pins of every script and hint of `pid` the user trusted (empty: none recorded)."""
        return frozenset(h for pin in self.trust if pin.id == pid for h in pin.sha256)

    def write(self, path: Path) -> None:
        atomic_write(path, self.dumps())


def _canonical(text: str, where: str, kept: dict[str, Any] | None = None) -> tuple[dict[str, Any], Lockfile] | None:
    """The lock in `text` read without tomllib (30 ms and its import for 100 packages), from the parse `kept` in the
    cache folder or else by `read_lock_text`, when `text` is exactly what `dumps` writes for it, as a lock strawpot
    wrote is; None for any other text (a hand edit, a comment, a tampered or broken lock), which tomllib then reads
    and reports on. Then tomllib would read the same lock, since `from_dict(tomllib.loads(lock.dumps()))` is `lock`
    (tests/model/test_lock_text.py), whatever gave the candidate: a tampered cache entry is only not used."""
    return (kept is not None and _dumped_as(kept, text, where)) or _dumped_as(read_lock_text(text), text, where)


def _dumped_as(data: dict[str, Any] | None, text: str, where: str) -> tuple[dict[str, Any], Lockfile] | None:
    """(`data`, its lock) when `dumps` of that lock is `text`."""
    if data is None:
        return None
    try:
        lock = Lockfile.from_dict(data, where=where)
    except LockfileError:
        return None
    return (data, lock) if lock.dumps() == text else None


def _s(text: str) -> str:
    """A TOML basic string: JSON's escapes are TOML's, but JSON leaves U+007F raw and TOML forbids it. Printable
    text with no quote or backslash has nothing to escape (most of a lock: a third of its writing time otherwise)."""
    if text.isprintable() and '"' not in text and "\\" not in text:
        return f'"{text}"'
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _key(name: str) -> str:
    """A TOML key: bare when it can be (every OS name), else quoted; a key written bare that is not one would be read
    back as other keys, or not at all."""
    return name if name and _BARE_KEY.issuperset(name) else _s(name)


_BARE_KEY = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def _array(items: Iterable[str]) -> str:
    rows = list(items)
    return "[]" if not rows else "[\n" + "".join(f"  {row},\n" for row in rows) + "]"


def _read_v1(data: dict[str, Any]) -> Lockfile:
    """Every field is checked for type and shape: a lock is input, and a tampered one must not reach the tree."""
    raw_packages = data.get("package", [])
    if not isinstance(raw_packages, list):
        raise ValueError("'package' must be an array of [[package]] tables")
    packages: list[LockedPackage] = []
    seen: set[tuple[Kind, str]] = set()
    for i, raw in enumerate(raw_packages):
        name = raw.get("name") if isinstance(raw, dict) else None
        label = f"package #{i + 1} ({name if isinstance(name, str) else '?'})"
        if not isinstance(raw, dict):
            raise ValueError(f"{label}: must be a [[package]] table, not {_type(raw)}")
        try:
            pkg = _read_package_v1(raw)
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{label}: {_reason(exc)}") from None
        if pkg.key in seen:
            raise ValueError(f"{label}: {pkg.kind.value} {pkg.name} is listed twice")
        seen.add(pkg.key)
        packages.append(pkg)
    trust = []
    for j, t in enumerate(_tables(data, "trust")):
        pid = _str(t, "id", where=f"trust[{j}].")
        hashes = t.get("sha256", [])
        if not isinstance(hashes, list) or not all(isinstance(h, str) and _SHA256_RE.fullmatch(h) for h in hashes):
            raise ValueError(f"trust[{j}].sha256 must be an array of sha256 strings (64 lowercase hex digits)")
        trust.append(LockedTrust(pid, tuple(hashes)))
    return Lockfile(
        packages=tuple(packages),
        manifest_hash=_str(data, "manifest-hash", default=""),
        generated_by=_str(data, "generated-by", default=""),
        version=1,
        trust=tuple(trust),
        min_release_age=_duration(data, "min-release-age"),
    )


def _read_package_v1(raw: dict[str, Any]) -> LockedPackage:
    archive = raw.get("archive")
    archive_sha256: str | None = None
    archive_size: int | None = None
    if archive is not None:
        if not isinstance(archive, dict):
            raise ValueError(f"archive must be a table {{ sha256, size }}, not {_type(archive)}")
        archive_sha256 = _sha256(archive, "sha256", where="archive.")
        archive_size = _size(archive, "size", where="archive.")
    default_agent = raw.get("default-agent")
    if default_agent is not None:
        default_agent = _slug(raw, "default-agent")
    files: list[LockedFile] = []
    paths: set[str] = set()
    for j, f in enumerate(_tables(raw, "files")):
        where = f"files[{j}]."
        path = _str(f, "path", where=where)
        try:
            if safe_relative_path(path) != path:
                raise UnsafePath(f"path {path!r} is not in normal form")
        except UnsafePath as exc:
            raise ValueError(f"{where}path: {exc}") from None
        if path in paths:
            raise ValueError(f"{where}path: {path!r} is listed twice")
        paths.add(path)
        executable = f.get("executable", False)
        if not isinstance(executable, bool):
            raise ValueError(f"{where}executable must be true or false, not {_type(executable)}")
        files.append(LockedFile(path, _sha256(f, "sha256", where=where), _size(f, "size", where=where), executable))
    dependencies = tuple(
        LockedDependency(_kind(d, "kind", where=f"dependencies[{j}]."), _slug(d, "name", where=f"dependencies[{j}]."),
                         _str(d, "spec", where=f"dependencies[{j}].", default="*"))
        for j, d in enumerate(_tables(raw, "dependencies"))
    )
    tools = []
    for j, t in enumerate(_tables(raw, "tools")):
        where = f"tools[{j}]."
        install = t.get("install", {})
        if not isinstance(install, dict) or not all(isinstance(v, str) for v in install.values()):
            raise ValueError(f"{where}install must be a table of OS = \"command\" strings")
        tools.append(LockedTool(_str(t, "name", where=where), _str(t, "description", where=where, default=""),
                                {str(k): v for k, v in install.items()}))
    return LockedPackage(
        kind=_kind(raw, "kind"),
        name=_slug(raw, "name"),
        version=_version(raw, "version"),
        source=_str(raw, "source", default=""),
        archive_sha256=archive_sha256,
        archive_size=archive_size,
        files=tuple(files),
        dependencies=dependencies,
        tools=tuple(tools),
        default_agent=default_agent,
        signer=_signer(raw.get("signer")),
        log_index=None if raw.get("log-index") is None else _size(raw, "log-index"),
        log=None if raw.get("log") is None else _str(raw, "log"),
    )


def _signer(raw: object) -> LockedSigner | None:
    """The optional `signer = { key, handle }` (locks written before signing have none)."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ValueError(f"signer must be a table {{ key, handle }}, not {_type(raw)}")
    key = _str(raw, "key", where="signer.")
    if not re.fullmatch(r"ed25519:[0-9a-f]{64}", key):
        raise ValueError(f"signer.key: {key!r} is not ed25519:<64 hex digits>")
    return LockedSigner(key, _str(raw, "handle", where="signer."))


# -- field checks (each raises ValueError naming the field) ---------------------------------------------

_SHA256_RE = re.compile(r"[0-9a-f]{64}")
_NUM = r"(?:0|[1-9][0-9]*)"
_IDENTS = r"[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*"
_VERSION_RE = re.compile(rf"{_NUM}\.{_NUM}\.{_NUM}(?:-{_IDENTS})?(?:\+{_IDENTS})?")
_MISSING = object()


def _type(value: object) -> str:
    return {str: "a string", int: "an integer", bool: "a boolean", float: "a number", list: "an array",
            dict: "a table"}.get(type(value), type(value).__name__)


def _reason(exc: Exception) -> str:
    return f"{exc.args[0]}: missing" if isinstance(exc, KeyError) else str(exc)


def _str(table: dict[str, Any], key: str, *, where: str = "", default: object = _MISSING) -> str:
    value = table.get(key, default)
    if value is _MISSING:
        raise ValueError(f"{where}{key}: missing")
    if not isinstance(value, str):
        raise ValueError(f"{where}{key} must be a string, not {_type(value)}")
    return value


def _slug(table: dict[str, Any], key: str, *, where: str = "") -> str:
    value = _str(table, key, where=where)
    if err := slug_error(value):
        raise ValueError(f"{where}{key}: {err}")
    return value


def _kind(table: dict[str, Any], key: str, *, where: str = "") -> Kind:
    value = _str(table, key, where=where)
    try:
        return Kind(value)
    except ValueError:
        raise ValueError(f"{where}{key}: unknown kind {value!r} (expected one of: "
                         f"{', '.join(k.value for k in KIND_ORDER)})") from None


def _version(table: dict[str, Any], key: str, *, where: str = "") -> str:
    value = _str(table, key, where=where)
    if not _VERSION_RE.fullmatch(value):
        raise ValueError(f"{where}{key}: {value!r} is not a version MAJOR.MINOR.PATCH[-prerelease]")
    return value


def _duration(table: dict[str, Any], key: str) -> str:
    value = _str(table, key, default="")
    if not value:
        return value  # none honoured
    from strawpot.model.durations import parse_duration

    try:
        parse_duration(value)
    except ValueError as exc:
        raise ValueError(f"{key}: {exc}") from None
    return value


def _sha256(table: dict[str, Any], key: str, *, where: str = "") -> str:
    value = _str(table, key, where=where)
    if not _SHA256_RE.fullmatch(value):
        raise ValueError(f"{where}{key}: {value!r} is not a sha256 (64 lowercase hex digits)")
    return value


def _size(table: dict[str, Any], key: str, *, where: str = "") -> int:
    value = table.get(key, _MISSING)
    if value is _MISSING:
        raise ValueError(f"{where}{key}: missing")
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{where}{key} must be a byte count (a whole number >= 0), not {value!r}")
    return value


def _tables(table: dict[str, Any], key: str) -> list[dict[str, Any]]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise ValueError(f"{key} must be an array of tables")
    return value


_READERS = {1: _read_v1}
