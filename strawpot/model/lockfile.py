"""The lockfile `strawpot.lock`: a deterministic TOML record of every locked package and file.

The reader is picked by the file's `version` key, so a newer format fails with a clear message.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from strawpot.model.errors import UsageError
from strawpot.model.fs import atomic_write
from strawpot.model.kinds import KIND_ORDER, Kind
from strawpot.model.layout import LOCK_NAME

LOCK_VERSION = 1


class LockfileError(UsageError):
    """strawpot.lock cannot be read; the message names the file and the position."""


@dataclass(frozen=True)
class LockedFile:
    path: str
    sha256: str
    size: int
    executable: bool = False


@dataclass(frozen=True)
class LockedDependency:
    kind: Kind
    name: str
    spec: str


@dataclass(frozen=True)
class LockedTool:
    name: str
    description: str
    install: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class LockedPackage:
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

    @property
    def key(self) -> tuple[Kind, str]:
        return (self.kind, self.name)


@dataclass(frozen=True)
class Lockfile:
    packages: tuple[LockedPackage, ...]
    manifest_hash: str
    generated_by: str = ""
    version: int = LOCK_VERSION

    def __post_init__(self) -> None:
        order = {k: i for i, k in enumerate(KIND_ORDER)}
        ordered = tuple(sorted(self.packages, key=lambda p: (order[p.kind], p.name)))
        object.__setattr__(self, "packages", ordered)
        object.__setattr__(self, "_index", {p.key: p for p in ordered})

    def get(self, kind: Kind, name: str) -> LockedPackage | None:
        index: dict[tuple[Kind, str], LockedPackage] = self._index  # type: ignore[attr-defined]
        return index.get((kind, name))

    # -- reading ------------------------------------------------------------------------------------

    @classmethod
    def load(cls, path: Path) -> Lockfile:
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise LockfileError(f"{path}: no lockfile", hint="run `strawpot lock` to create it") from None
        except UnicodeDecodeError as exc:
            raise LockfileError(f"{path}: not UTF-8 text (byte {exc.start})") from None
        except tomllib.TOMLDecodeError as exc:
            raise LockfileError(f"{path}: invalid TOML: {exc}", hint="regenerate it with `strawpot lock`") from None
        return cls.from_dict(data, where=str(path))

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, where: str = LOCK_NAME) -> Lockfile:
        version = data.get("version")
        reader = _READERS.get(version) if isinstance(version, int) else None
        if reader is None:
            raise LockfileError(
                f"{where}: lockfile format version {version!r} is not one this strawpot reads (1)",
                hint="upgrade strawpot, or regenerate the lock with `strawpot lock`",
            )
        try:
            return reader(data)
        except (KeyError, TypeError, ValueError) as exc:
            raise LockfileError(f"{where}: malformed lockfile: {exc}", hint="regenerate it with `strawpot lock`") from None

    # -- writing ------------------------------------------------------------------------------------

    def dumps(self) -> str:
        out = [
            "# This file is written by strawpot; do not edit it by hand.",
            f"version = {self.version}",
            f"generated-by = {_s(self.generated_by)}",
            f"manifest-hash = {_s(self.manifest_hash)}",
        ]
        for pkg in self.packages:
            out += ["", "[[package]]", f"kind = {_s(pkg.kind.value)}", f"name = {_s(pkg.name)}",
                    f"version = {_s(pkg.version)}", f"source = {_s(pkg.source)}"]
            if pkg.archive_sha256 is not None:
                out.append(f"archive = {{ sha256 = {_s(pkg.archive_sha256)}, size = {pkg.archive_size or 0} }}")
            if pkg.default_agent:
                out.append(f"default-agent = {_s(pkg.default_agent)}")
            out.append("dependencies = " + _array(
                f"{{ kind = {_s(d.kind.value)}, name = {_s(d.name)}, spec = {_s(d.spec)} }}"
                for d in sorted(pkg.dependencies, key=lambda d: (d.kind.value, d.name))
            ))
            if pkg.tools:
                out.append("tools = " + _array(
                    f"{{ name = {_s(t.name)}, description = {_s(t.description)}, install = {{ "
                    + ", ".join(f"{k} = {_s(v)}" for k, v in sorted(t.install.items())) + " } }"
                    for t in sorted(pkg.tools, key=lambda t: t.name)
                ))
            out.append("files = " + _array(
                f"{{ path = {_s(f.path)}, sha256 = {_s(f.sha256)}, size = {f.size}, "
                f"executable = {'true' if f.executable else 'false'} }}"
                for f in sorted(pkg.files, key=lambda f: f.path)
            ))
        return "\n".join(out) + "\n"

    def write(self, path: Path) -> None:
        atomic_write(path, self.dumps())


def _s(text: str) -> str:
    """A TOML basic string (JSON escapes are valid TOML escapes)."""
    return json.dumps(text, ensure_ascii=False)


def _array(items: Iterable[str]) -> str:
    rows = list(items)
    return "[]" if not rows else "[\n" + "".join(f"  {row},\n" for row in rows) + "]"


def _read_v1(data: dict[str, Any]) -> Lockfile:
    packages = []
    for i, raw in enumerate(data.get("package", [])):
        try:
            packages.append(_read_package_v1(raw))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"package #{i + 1} ({raw.get('name', '?')}): {exc!r}") from None
    return Lockfile(
        packages=tuple(packages),
        manifest_hash=str(data.get("manifest-hash", "")),
        generated_by=str(data.get("generated-by", "")),
        version=1,
    )


def _read_package_v1(raw: dict[str, Any]) -> LockedPackage:
    archive = raw.get("archive") or {}
    return LockedPackage(
        kind=Kind(raw["kind"]),
        name=str(raw["name"]),
        version=str(raw["version"]),
        source=str(raw.get("source", "")),
        archive_sha256=archive.get("sha256"),
        archive_size=archive.get("size"),
        files=tuple(
            LockedFile(str(f["path"]), str(f["sha256"]), int(f["size"]), bool(f.get("executable", False)))
            for f in raw.get("files", [])
        ),
        dependencies=tuple(
            LockedDependency(Kind(d["kind"]), str(d["name"]), str(d.get("spec", "*")))
            for d in raw.get("dependencies", [])
        ),
        tools=tuple(
            LockedTool(str(t["name"]), str(t.get("description", "")), {str(k): str(v) for k, v in t.get("install", {}).items()})
            for t in raw.get("tools", [])
        ),
        default_agent=raw.get("default-agent"),
    )


_READERS = {1: _read_v1}
