"""Package formats: read a SKILL/ROLE/AGENT/MEMORY/INTEGRATION.md package and validate it."""

from __future__ import annotations

import fnmatch
import os
import re
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from strawpot.model.display import short_repr, short_text
from strawpot.model.kinds import Kind
from strawpot.model.paths import UnsafePath, safe_relative_path

SLUG_RE = re.compile(r"^[a-z0-9][a-z0-9-]*$")
MAX_SLUG_LENGTH = 64
MAX_FILES = 100
MAX_FILE_SIZE = 10 * 1024 * 1024
MAX_TOTAL_SIZE = 50 * 1024 * 1024
OPERATING_SYSTEMS = ("linux", "macos", "windows")
IGNORE_FILE = ".strawpotignore"
_VCS_DIRS = {".git", ".hg", ".svn", ".bzr", "__pycache__", "node_modules"}


@dataclass(frozen=True)
class Issue:
    """One validation problem: the file, the field (dotted) and what is wrong."""

    file: str
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}: {self.field}" if self.field else self.file
        return f"{where}: {self.message}"


class PackageInvalid(ValueError):
    """A package failed validation; `issues` holds every problem found."""

    def __init__(self, issues: list[Issue], *, where: str = "") -> None:
        self.issues = issues
        self.where = where
        head = f"{where}: " if where else ""
        super().__init__(f"{head}{len(issues)} problem(s): " + "; ".join(map(str, issues)))


@dataclass(frozen=True)
class Dependency:
    kind: Kind
    name: str
    spec: str

    def __str__(self) -> str:
        if self.spec in ("", "*"):
            return self.name
        # a bare version (from `name@1.2.0`) needs its `@` back, or it would run into the name
        return f"{self.name}@{self.spec}" if self.spec[0].isdigit() else f"{self.name}{self.spec}"


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    install: dict[str, str]


@dataclass(frozen=True)
class EnvSpec:
    name: str
    required: bool
    description: str
    default: str | None


@dataclass(frozen=True)
class Package:
    kind: Kind
    name: str
    version: str | None
    description: str
    display_name: str
    frontmatter: dict[str, Any]
    body: str
    dependencies: tuple[Dependency, ...] = ()
    tools: dict[str, ToolSpec] = field(default_factory=dict)
    env: dict[str, EnvSpec] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    bin: dict[str, str] = field(default_factory=dict)
    default_agent: str | None = None
    roles_wildcard: bool = False
    files: dict[str, bytes] = field(default_factory=dict, repr=False)
    executables: frozenset[str] = frozenset()

    @property
    def total_size(self) -> int:
        return sum(len(data) for data in self.files.values())

    def summary(self) -> str:
        deps = ", ".join(f"{d.kind.value} {d}" for d in self.dependencies) or "none"
        return f"{self.kind.value} {self.name} {self.version or '(no version)'}: dependencies {deps}"


def detect_kind(paths: Iterable[str]) -> Kind | None:
    """The kind whose main file sits at the top of the package, if exactly one does."""
    found = {kind for p in paths if (kind := Kind.from_main_file(p)) is not None}
    return found.pop() if len(found) == 1 else None


def parse_package(
    files: Mapping[str, bytes],
    *,
    kind: Kind | None = None,
    executables: Iterable[str] = (),
    expected_name: str | None = None,
    where: str = "",
) -> Package:
    """Validate a package given as {relative path: bytes}; raise PackageInvalid with every issue."""
    issues: list[Issue] = []
    clean: dict[str, bytes] = {}
    for raw_path, data in files.items():
        try:
            clean[safe_relative_path(raw_path)] = data
        except UnsafePath as exc:
            issues.append(Issue(raw_path, "", str(exc)))
    if kind is None:
        kind = detect_kind(clean)
    if kind is None:
        mains = ", ".join(k.main_file for k in Kind)
        raise PackageInvalid([Issue(where or ".", "", f"no single main file found (one of {mains})")], where=where)
    issues.extend(_check_limits(kind, clean))
    main = kind.main_file
    if main not in clean:
        issues.append(Issue(main, "", "main file is missing"))
        raise PackageInvalid(issues, where=where)
    from strawpot.model.frontmatter import FrontmatterError, split_frontmatter

    try:
        text = clean[main].decode("utf-8")
    except UnicodeDecodeError as exc:
        issues.append(Issue(main, "", f"not UTF-8 text (byte {exc.start})"))
        raise PackageInvalid(issues, where=where) from None
    try:
        meta, body = split_frontmatter(text)
    except FrontmatterError as exc:
        issues.append(Issue(main, "frontmatter", str(exc)))
        raise PackageInvalid(issues, where=where) from None
    reader = _FieldReader(kind, main, meta, set(clean), issues)
    package = reader.build(body, clean, frozenset(executables) & set(clean))
    if expected_name is not None and package.name and package.name != expected_name:
        issues.append(Issue(main, "name", f"is {package.name!r} but the package slug is {expected_name!r}"))
    if issues:
        raise PackageInvalid(issues, where=where)
    return package


def _check_limits(kind: Kind, files: Mapping[str, bytes]) -> list[Issue]:
    issues: list[Issue] = []
    if len(files) > MAX_FILES:
        issues.append(Issue(".", "", f"{len(files)} files, more than the limit of {MAX_FILES}"))
    total = 0
    for path, data in sorted(files.items()):
        total += len(data)
        if len(data) > MAX_FILE_SIZE:
            issues.append(Issue(path, "", f"{len(data)} bytes, more than the limit of {MAX_FILE_SIZE} a file"))
    if total > MAX_TOTAL_SIZE:
        issues.append(Issue(".", "", f"{total} bytes in all, more than the limit of {MAX_TOTAL_SIZE}"))
    if kind is Kind.ROLE and set(files) != {Kind.ROLE.main_file}:
        extra = ", ".join(sorted(set(files) - {Kind.ROLE.main_file}))
        issues.append(Issue(".", "", f"a role is exactly ROLE.md; remove: {extra}"))
    return issues


class _FieldReader:
    """Reads the frontmatter of one main file, appending an Issue per problem found."""

    def __init__(self, kind: Kind, main: str, meta: dict[str, Any], paths: set[str], issues: list[Issue]) -> None:
        self.kind, self.main, self.meta, self.paths, self.issues = kind, main, meta, paths, issues
        strawpot = meta.get("metadata", {})
        strawpot = strawpot.get("strawpot", {}) if isinstance(strawpot, dict) else {}
        if not isinstance(strawpot, dict):
            self.error("metadata.strawpot", "must be a mapping")
            strawpot = {}
        self.sp: dict[str, Any] = strawpot

    def error(self, fld: str, message: str) -> None:
        self.issues.append(Issue(self.main, fld, message))

    def build(self, body: str, files: dict[str, bytes], executables: frozenset[str]) -> Package:
        return Package(
            kind=self.kind,
            name=self.name(),
            version=self.version(),
            description=self.text("description", required=True),
            display_name=self.text("displayName") or self.text("display_name") or self.meta.get("name", ""),
            frontmatter=self.meta,
            body=body,
            dependencies=self.dependencies(),
            tools=self.tools(),
            env=self.env(),
            params=self.params(),
            bin=self.bin(),
            default_agent=self.default_agent(),
            roles_wildcard=self.roles_wildcard(),
            files=files,
            executables=executables,
        )

    def text(self, key: str, *, required: bool = False) -> str:
        value = self.meta.get(key)
        if value is None:
            if required:
                self.error(key, "is required")
            return ""
        if not isinstance(value, str) or (required and not value.strip()):
            self.error(key, "must be a non-empty string")
            return ""
        return value.strip()

    def name(self) -> str:
        name = self.text("name", required=True)
        if name and (err := slug_error(name)):
            self.error("name", err)
        return name

    def version(self) -> str | None:
        raw = self.meta.get("version")
        if raw is None:
            return None
        from resolver import InvalidVersion, Version

        try:
            return str(Version.parse(str(raw)))
        except InvalidVersion as exc:
            self.error("version", str(exc))
            return None

    def dependencies(self) -> tuple[Dependency, ...]:
        raw = self.sp.get("dependencies")
        if raw is None:
            return ()
        fld = "metadata.strawpot.dependencies"
        if self.kind is Kind.SKILL:
            if not isinstance(raw, list):
                self.error(fld, "must be a list of skill names for a skill")
                return ()
            return tuple(self.requirements(Kind.SKILL, raw, fld))
        if self.kind is Kind.ROLE:
            if not isinstance(raw, dict) or set(raw) - {"skills", "roles"}:
                self.error(fld, "must be a mapping with 'skills' and/or 'roles' lists for a role")
                return ()
            deps = list(self.requirements(Kind.SKILL, raw.get("skills") or [], f"{fld}.skills"))
            roles = [r for r in (raw.get("roles") or []) if r != "*"] if isinstance(raw.get("roles"), list) else raw.get("roles")
            deps += self.requirements(Kind.ROLE, roles or [], f"{fld}.roles")
            return tuple(deps)
        self.error(fld, f"a {self.kind.value} may not declare package dependencies")
        return ()

    def requirements(self, kind: Kind, entries: Any, fld: str) -> list[Dependency]:
        from resolver import ResolverError, parse_requirement

        if not isinstance(entries, list):
            self.error(fld, "must be a list")
            return []
        deps: list[Dependency] = []
        for i, entry in enumerate(entries):
            if not isinstance(entry, str):
                self.error(f"{fld}[{i}]", f"must be a string like 'slug' or 'slug>=1.0', not {short_repr(entry)}")
                continue
            try:
                req = parse_requirement(entry)
            except ResolverError as exc:
                self.error(f"{fld}[{i}]", str(exc))
                continue
            deps.append(Dependency(kind, req.name, req.text))
        return deps

    def roles_wildcard(self) -> bool:
        raw = self.sp.get("dependencies")
        return isinstance(raw, dict) and isinstance(raw.get("roles"), list) and "*" in raw["roles"]

    def mapping(self, key: str) -> dict[str, Any]:
        raw = self.sp.get(key)
        if raw is None:
            return {}
        if not isinstance(raw, dict):
            self.error(f"metadata.strawpot.{key}", "must be a mapping")
            return {}
        return raw

    def tools(self) -> dict[str, ToolSpec]:
        tools: dict[str, ToolSpec] = {}
        for name, spec in self.mapping("tools").items():
            fld = f"metadata.strawpot.tools.{short_text(name, 64)}"
            spec = spec if spec is not None else {}
            if not isinstance(spec, dict):
                self.error(fld, "must be a mapping with 'description' and 'install'")
                continue
            install = spec.get("install") or {}
            if not isinstance(install, dict) or not all(isinstance(v, str) for v in install.values()):
                self.error(f"{fld}.install", "must map an OS (linux, macos, windows) to a command")
                install = {}
            if unknown := set(install) - set(OPERATING_SYSTEMS):
                self.error(f"{fld}.install", f"unknown OS {short_repr(sorted(map(str, unknown)))} (use linux, macos, windows)")
            description = spec.get("description", "")
            if isinstance(description, (dict, list)):
                self.error(f"{fld}.description", "must be text")
                description = ""
            tools[str(name)] = ToolSpec(str(name), str(description), dict(install))
        return tools

    def env(self) -> dict[str, EnvSpec]:
        raw = self.sp.get("env")
        if raw is None:
            return {}
        if isinstance(raw, list):
            raw = {str(name): {} for name in raw}
        if not isinstance(raw, dict):
            self.error("metadata.strawpot.env", f"must be a mapping or a list of names, not {type(raw).__name__}")
            return {}
        envs: dict[str, EnvSpec] = {}
        for name, spec in raw.items():
            spec = spec if isinstance(spec, dict) else {"default": spec}
            default, description = spec.get("default"), spec.get("description", "")
            if isinstance(default, (dict, list)) or isinstance(description, (dict, list)):
                self.error(f"metadata.strawpot.env.{short_text(name, 64)}", "default and description must be text")
                continue
            envs[str(name)] = EnvSpec(
                str(name), bool(spec.get("required", default is None)), str(description),
                None if default is None else str(default),
            )
        return envs

    def params(self) -> dict[str, Any]:
        return {
            str(name): spec.get("default") if isinstance(spec, dict) else spec
            for name, spec in self.mapping("params").items()
        }

    def bin(self) -> dict[str, str]:
        raw = self.mapping("bin")
        if self.kind is not Kind.AGENT:
            if raw:
                self.error("metadata.strawpot.bin", f"only agents carry wrapper binaries, not a {self.kind.value}")
            return {}
        if not raw:
            self.error("metadata.strawpot.bin", "an agent must name its wrapper for at least one of linux, macos, windows")
        bins: dict[str, str] = {}
        for os_name, path in raw.items():
            fld = f"metadata.strawpot.bin.{os_name}"
            if os_name not in OPERATING_SYSTEMS:
                self.error(fld, "unknown OS (use linux, macos, windows)")
                continue
            if not isinstance(path, str):
                self.error(fld, "must be a path inside the package")
                continue
            try:
                rel = safe_relative_path(path.removeprefix("./"))
            except UnsafePath as exc:
                self.error(fld, f"is outside the package: {exc}")
                continue
            if rel not in self.paths:
                self.error(fld, f"names {rel!r}, which is not in the package")
            bins[os_name] = rel
        return bins

    def default_agent(self) -> str | None:
        raw = self.sp.get("default_agent", self.meta.get("default_agent"))
        if raw is None:
            return None
        if self.kind is not Kind.ROLE:
            self.error("metadata.strawpot.default_agent", "only roles name a default agent")
            return None
        if not isinstance(raw, str):
            self.error("metadata.strawpot.default_agent", "must be an agent slug")
            return None
        if err := slug_error(raw):
            self.error("metadata.strawpot.default_agent", err)
            return None
        return raw


def slug_error(slug: str) -> str | None:
    """Why `slug` is not a valid package name, or None when it is."""
    if len(slug) > MAX_SLUG_LENGTH:
        return f"{short_repr(slug)} is longer than {MAX_SLUG_LENGTH} characters"
    if not SLUG_RE.fullmatch(slug):  # match() would let a trailing newline through ('$')
        return f"{slug!r} is not a valid slug (lowercase letters, digits and '-', starting with a letter or digit)"
    return None


def collect_files(root: Path) -> tuple[dict[str, bytes], frozenset[str], list[Issue]]:
    """Read a package folder: every file but dot-files, VCS folders and ignore-file matches."""
    patterns = _ignore_patterns(root)
    files: dict[str, bytes] = {}
    executables: set[str] = set()
    issues: list[Issue] = []
    for dirpath, dirnames, filenames in os.walk(root):
        base = Path(dirpath).relative_to(root)
        dirnames[:] = sorted(
            d for d in dirnames
            if not d.startswith(".") and d not in _VCS_DIRS and not _ignored((base / d).as_posix(), d, patterns)
        )
        for d in [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            # os.walk lists a link to a folder here and never enters it: say so, as for a link to a file
            issues.append(Issue((base / d).as_posix(), "", "links and special files are not allowed in a package"))
            dirnames.remove(d)
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            full = Path(dirpath) / name
            rel = full.relative_to(root).as_posix()
            if _ignored(rel, name, patterns):
                continue
            data, st, problem = _read_regular_file(full)
            if problem:
                issues.append(Issue(rel, "", problem))
                continue
            files[rel] = data
            if st is not None and st.st_mode & stat.S_IXUSR:
                executables.add(rel)
    return files, frozenset(executables), issues


def _ignored(rel: str, name: str, patterns: list[str]) -> bool:
    """A file or folder matches an ignore pattern by its relative path or by its own name."""
    return any(fnmatch.fnmatch(rel, p) or fnmatch.fnmatch(name, p) for p in patterns)


def _read_regular_file(path: Path) -> tuple[bytes, os.stat_result | None, str | None]:
    """Open once (never following a link, never blocking on a FIFO), then check and read that handle,
    so a file swapped between the check and the read cannot slip through."""
    special = "links and special files are not allowed in a package"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return b"", None, special if os.path.islink(path) else f"cannot be read: {path}"
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            return b"", st, special
        if st.st_size > MAX_FILE_SIZE:
            return b"", st, f"{st.st_size} bytes, more than the limit of {MAX_FILE_SIZE} a file"
        data = fh.read(MAX_FILE_SIZE + 1)
    if len(data) > MAX_FILE_SIZE:
        return b"", st, f"more than the limit of {MAX_FILE_SIZE} bytes a file"
    return data, st, None


def _ignore_patterns(root: Path) -> list[str]:
    ignore = root / IGNORE_FILE
    if not ignore.is_file():
        return []
    lines = ignore.read_text(encoding="utf-8", errors="replace").splitlines()
    return [line.strip().rstrip("/") for line in lines if line.strip() and not line.startswith("#")]


def load_package(path: Path, kind: Kind | None = None) -> Package:
    """Read and validate the package in folder `path` (or the folder of a main file)."""
    root = path.parent if path.is_file() else path
    if not root.is_dir():
        raise PackageInvalid([Issue(str(path), "", "no such package folder")], where=str(path))
    files, executables, issues = collect_files(root)
    try:
        package = parse_package(files, kind=kind, executables=executables, where=str(root))
    except PackageInvalid as exc:
        raise PackageInvalid(issues + exc.issues, where=str(root)) from None
    if issues:
        raise PackageInvalid(issues, where=str(root))
    return package
