"""Small frozen response models parsed from the registry's JSON (ValueError/TypeError on a bad shape)."""

from __future__ import annotations

import json
import re
from typing import Any

from valueclass import Record

__all__ = ["KINDS", "FileInfo", "PackageVersions", "VersionInfo"]

_VERSION_CHARS = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.+-")

# No registry answer the API defines nests deeper than a few levels; a deeper one is hostile.
MAX_JSON_DEPTH = 32
# A dependency entry is a slug (at most 64 characters) and a specifier: far below this.
MAX_DEPENDENCY_LENGTH = 256

# singular kind -> the plural used in URL paths and dependency tables
KINDS: dict[str, str] = {
    "skill": "skills",
    "role": "roles",
    "agent": "agents",
    "memory": "memories",
    "integration": "integrations",
}
_SINGULAR = {plural: kind for kind, plural in KINDS.items()}


def kind_and_plural(kind: str) -> tuple[str, str]:
    """Accept a kind as singular (`role`) or plural (`roles`); return both forms."""
    if kind in KINDS:
        return kind, KINDS[kind]
    if kind in _SINGULAR:
        return _SINGULAR[kind], kind
    raise ValueError(f"unknown package kind {kind!r} (expected one of {', '.join(KINDS)})")


_SLUG_RE = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")


def check_version(version: str) -> str:
    if not version or len(version) > 128 or not set(version) <= _VERSION_CHARS:
        raise ValueError(f"invalid version {version!r}")
    return version



def check_slug(slug: str) -> str:
    """Return `slug` if it is a valid package slug; it becomes a URL segment and a file name."""
    if not isinstance(slug, str) or not _SLUG_RE.fullmatch(slug):
        raise ValueError(f"invalid package slug {slug!r} (expected lowercase letters, digits and '-')")
    return slug


def parse_json(data: bytes | str) -> Any:
    """JSON from a registry (or the cache), ValueError when it is not JSON or nests deeper than MAX_JSON_DEPTH."""
    try:
        value = json.loads(data)
    except RecursionError:
        raise ValueError(f"JSON nested more than {MAX_JSON_DEPTH} levels deep") from None
    # only containers are walked (most values are text); a value sits deeper than the limit exactly when a
    # non-empty container sits at it
    stack: list[tuple[Any, int]] = [(value, 0)] if isinstance(value, dict | list) else []
    while stack:
        item, depth = stack.pop()
        if item and depth >= MAX_JSON_DEPTH:
            raise ValueError(f"JSON nested more than {MAX_JSON_DEPTH} levels deep")
        children = item.values() if isinstance(item, dict) else item
        stack.extend((v, depth + 1) for v in children if isinstance(v, dict | list))
    return value


# Where a dependency entry's package name ends and its specifier (if any) begins.
_SPEC_START_RE = re.compile(r"[\s=<>!^~@,*]")


def _dependency_entry(group: str, entry: object) -> str:
    """A dependency entry, its package name checked as a value: the registry's text is not trusted."""
    if not isinstance(entry, str):
        raise TypeError(f"dependencies[{group!r}] should be a list of strings, got {type(entry).__name__}")
    if len(entry) > MAX_DEPENDENCY_LENGTH:
        raise ValueError(f"dependency {entry[:64]!r}... in {group!r} is longer than {MAX_DEPENDENCY_LENGTH} characters")
    text = entry.strip()
    if text == "*":
        return entry
    name = _SPEC_START_RE.split(text, maxsplit=1)[0]
    if not _SLUG_RE.fullmatch(name):
        raise ValueError(f"dependency {entry!r} in {group!r} does not start with a valid package name")
    return entry


_SHA256_RE = re.compile(r"[0-9a-fA-F]{64}")


def _optional_sha256(value: str | None) -> str | None:
    if value is not None and not _SHA256_RE.fullmatch(value):
        raise ValueError(f"sha256 {value[:80]!r} is not 64 hex digits")
    return value


def _optional_slug(value: str | None, what: str) -> str | None:
    if value is not None and not _SLUG_RE.fullmatch(value):
        raise ValueError(f"{what} {value[:80]!r} is not a valid package name")
    return value


def _get(data: dict[str, Any], key: str, kind: type | tuple[type, ...], *, optional: bool = False) -> Any:
    value = data.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise TypeError(f"{key!r} should be {_type_name(kind)}, got {type(value).__name__}")
    return value


def _type_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(k.__name__ for k in kinds)


def _object(data: object, what: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise TypeError(f"{what} should be an object, got {type(data).__name__}")
    return data


def _log_url(raw: str | None) -> str | None:
    """An http(s) URL of printable ASCII (it is shown in messages and sent back as a parameter)."""
    if raw is not None and (not raw.startswith(("http://", "https://")) or len(raw) > 2000
                            or not all("!" <= c <= "~" for c in raw)):
        raise ValueError(f"'log' should be an http(s) URL, got {raw[:80]!r}")
    return raw


def _millis(raw: object) -> int | None:
    """A time in ms since the epoch; StrawHub may send it as a float, we keep whole milliseconds."""
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        raise TypeError(f"'createdAt' should be a number, got {type(raw).__name__}")
    return int(raw)


def _dependencies(raw: object) -> dict[str, list[str]]:
    """The v1 dependency shape: `{"skills": [...], "roles": [...]}`; null means none."""
    if raw is None:
        return {}
    deps = _object(raw, "'dependencies'")
    out: dict[str, list[str]] = {}
    for group, entries in deps.items():
        if not isinstance(entries, list):
            raise TypeError(f"dependencies[{group!r}] should be a list of strings")
        out[group] = [_dependency_entry(group, e) for e in entries]
    return out


class FileInfo(Record):
    """One file of a version; `sha256` is None and `executable` False when the server does not say."""

    _fields = ("path", "size", "sha256", "executable")
    path: str
    size: int
    sha256: str | None
    executable: bool

    def __init__(self, path: str, size: int, sha256: str | None = None, executable: bool = False) -> None:
        self.__dict__.update(path=path, size=size, sha256=sha256, executable=executable)

    @classmethod
    def from_json(cls, data: object) -> FileInfo:
        obj = _object(data, "a file entry")
        return cls(
            path=_get(obj, "path", str),
            size=_get(obj, "size", int),
            sha256=_optional_sha256(_get(obj, "sha256", str, optional=True)),
            executable=bool(_get(obj, "executable", bool, optional=True)),
        )


class Provenance(Record):
    """A version's signed statement as the registry serves it (checked by strawpot/install/provenance.py)."""

    _fields = ("statement", "signature", "key_id")
    statement: str
    signature: str
    key_id: str

    def __init__(self, statement: str, signature: str, key_id: str) -> None:
        self.__dict__.update(statement=statement, signature=signature, key_id=key_id)

    @classmethod
    def from_json(cls, data: object) -> Provenance | None:
        if data is None:
            return None
        obj = _object(data, "provenance")
        return cls(_get(obj, "statement", str), _get(obj, "signature", str), _get(obj, "keyId", str))


class VersionInfo(Record):
    """One published version: what the resolver needs (dependencies) and what the lockfile records."""

    _fields = ("version", "dependencies", "default_agent", "tools", "sha256", "size", "files", "yanked", "created_at",
               "log_index", "provenance", "log")
    version: str
    dependencies: dict[str, list[str]]
    default_agent: str | None
    tools: dict[str, Any]
    sha256: str | None
    size: int | None
    files: tuple[FileInfo, ...]
    yanked: bool
    created_at: int | None
    log_index: int | None  # the publish's index in the registry's transparency log
    provenance: Provenance | None  # the signed publish statement, when the version was signed
    log: str | None  # the registry whose log holds `log_index`, when not this one (a mirror's upstream)

    def __init__(self, version: str, dependencies: dict[str, list[str]] | None = None,
                 default_agent: str | None = None, tools: dict[str, Any] | None = None, sha256: str | None = None,
                 size: int | None = None, files: tuple[FileInfo, ...] = (), yanked: bool = False,
                 created_at: int | None = None, log_index: int | None = None, provenance: Provenance | None = None,
                 log: str | None = None) -> None:
        self.__dict__.update(version=version, dependencies={} if dependencies is None else dependencies,
                             default_agent=default_agent, tools={} if tools is None else tools, sha256=sha256,
                             size=size, files=files, yanked=yanked, created_at=created_at, log_index=log_index,
                             provenance=provenance, log=log)

    @classmethod
    def from_json(cls, data: object) -> VersionInfo:
        """Parse one entry of the `/versions` extension."""
        obj = _object(data, "a version entry")
        return cls(
            version=_get(obj, "version", str),
            dependencies=_dependencies(obj.get("dependencies")),
            default_agent=_optional_slug(_get(obj, "defaultAgent", str, optional=True), "defaultAgent"),
            tools=dict(_get(obj, "tools", dict, optional=True) or {}),
            sha256=_optional_sha256(_get(obj, "sha256", str, optional=True)),
            size=_get(obj, "size", int, optional=True),
            files=tuple(FileInfo.from_json(f) for f in _get(obj, "files", list, optional=True) or ()),
            yanked=bool(_get(obj, "yanked", bool, optional=True)),
            created_at=_millis(obj.get("createdAt")),
            log_index=_get(obj, "logIndex", int, optional=True),
            provenance=Provenance.from_json(obj.get("provenance")),
            log=_log_url(_get(obj, "log", str, optional=True)),
        )


class PackageVersions(Record):
    """Every known version of one package, lowest first.

    `has_archives` is False when this was built from the v1 detail endpoint (a server without the
    extensions): then only the latest version is known, with no sha256, no default_agent/tools, and its
    files must be fetched one by one.
    """

    _fields = ("kind", "slug", "versions", "has_archives")
    kind: str
    slug: str
    versions: tuple[VersionInfo, ...]
    has_archives: bool

    def __init__(self, kind: str, slug: str, versions: tuple[VersionInfo, ...], has_archives: bool = True) -> None:
        self.__dict__.update(kind=kind, slug=slug, versions=versions, has_archives=has_archives)

    def get(self, version: str) -> VersionInfo | None:
        """The entry for an exact version string, or None."""
        return next((v for v in self.versions if v.version == version), None)

    @classmethod
    def from_versions_json(cls, data: object) -> PackageVersions:
        """Parse the body of `GET /{kinds}/{slug}/versions`."""
        obj = _object(data, "the /versions body")
        kind, _ = kind_and_plural(_get(obj, "kind", str))
        return cls(
            kind=kind,
            slug=_get(obj, "slug", str),
            versions=tuple(VersionInfo.from_json(v) for v in _get(obj, "versions", list)),
            has_archives=True,
        )

    @classmethod
    def from_detail_json(cls, kind: str, data: object) -> PackageVersions:
        """Build from the v1 detail body: only `latestVersion` is known."""
        obj = _object(data, "the detail body")
        slug = _get(obj, "slug", str)
        latest = obj.get("latestVersion")
        if latest is None:
            return cls(kind=kind, slug=slug, versions=(), has_archives=False)
        lv = _object(latest, "'latestVersion'")
        raw_deps = lv.get("dependencies") if lv.get("dependencies") is not None else obj.get("dependencies")
        files = tuple(
            FileInfo(path=_get(f, "path", str), size=_get(f, "size", int))
            for f in (_object(f, "a file entry") for f in _get(lv, "files", list, optional=True) or ())
        )
        info = VersionInfo(
            version=_get(lv, "version", str),
            dependencies=_dependencies(raw_deps),
            files=files,
            created_at=_millis(lv.get("createdAt")),
        )
        return cls(kind=kind, slug=slug, versions=(info,), has_archives=False)
