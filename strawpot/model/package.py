"""Package formats: read a SKILL/ROLE/AGENT/MEMORY/INTEGRATION.md package and validate it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from resolver.requirement import SLUG_MAX_LENGTH, SLUG_PATTERN
from strawpot.model.dependencies import GROUPS, published_form_problems, read_edges, v1_groups
from strawpot.model.display import short_repr, short_text
from strawpot.model.kinds import Kind
from strawpot.model.params import ParamSpec, parse_specs
from strawpot.model.paths import UnsafePath, safe_relative_path
from strawpot.model.platform import OPERATING_SYSTEMS, current_os
from strawpot.model.plural import count

MAX_FILES = 100
MAX_FILE_SIZE = 10 * 1024 * 1024
MAX_TOTAL_SIZE = 50 * 1024 * 1024


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
        super().__init__(f"{head}{count(len(issues), 'problem')}: " + "; ".join(map(str, issues)))


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
    params: dict[str, ParamSpec] = field(default_factory=dict)
    bin: dict[str, str] = field(default_factory=dict)
    install: dict[str, str] = field(default_factory=dict)  # OS -> shell command (metadata.strawpot.install)
    default_agent: str | None = None
    roles_wildcard: bool = False
    skills_wildcard: bool = False  # a role's `skills: ["*"]`: every installed skill, resolved at staging
    resume: bool = False  # metadata.strawpot.session.resume: the wrapper takes --session-id / --resume
    files: dict[str, bytes] = field(default_factory=dict, repr=False)
    executables: frozenset[str] = frozenset()

    @property
    def total_size(self) -> int:
        return sum(len(data) for data in self.files.values())

    def install_script(self, os_name: str | None = None) -> str | None:
        """The install command for `os_name` (default: this machine), if the package has one."""
        return self.install.get(os_name or current_os())

    def bin_path(self, os_name: str | None = None) -> str | None:
        """The program this package declares for `os_name` (default: this machine), relative to its folder."""
        return self.bin.get(os_name or current_os())

    def warnings(self, os_name: str | None = None) -> list[str]:
        """What will not work as declared: a `bin` that nothing provides on its OS (neither shipped nor built
        by that OS's install command), and an agent with no wrapper for `os_name` (default: this machine)."""
        notes = [
            f"metadata.strawpot.bin.{os} names {rel!r}, which is neither in the package nor built by "
            f"metadata.strawpot.install.{os}: the {self.kind.value} has no program on {os}"
            for os, rel in sorted(self.bin.items()) if rel not in self.files and os not in self.install
        ]
        if (os_name or current_os()) not in self.bin and (wrapper := self.wrapper_warning(os_name)):
            notes.append(wrapper)
        return notes

    def wrapper_warning(self, os_name: str | None = None) -> str | None:
        """Why this agent cannot run on `os_name` (default: this machine): neither a shipped wrapper nor
        an install script covers it. None when one does, or for other kinds."""
        os_name = os_name or current_os()
        if self.kind is not Kind.AGENT or os_name in self.install:
            return None
        rel = self.bin.get(os_name)
        if rel is not None and rel in self.files:
            return None
        return (f"agent {self.name} has no wrapper for {os_name}: set metadata.strawpot.bin.{os_name} to a file "
                f"in the package, or metadata.strawpot.install.{os_name} to a command that builds it")

    @property
    def declared_dependencies(self) -> Any:
        """`metadata.strawpot.dependencies` as the main file writes it (any shape; None when absent)."""
        metadata = self.frontmatter.get("metadata")
        strawpot = metadata.get("strawpot") if isinstance(metadata, dict) else None
        return strawpot.get("dependencies") if isinstance(strawpot, dict) else None

    def published_form_issues(self) -> list[Issue]:
        """The dependency entries a registry refuses at publish: StrawHub takes `slug`, `slug==X.Y.Z` and `*` only
        (a registry started with `--allow-ranges` takes ranges too)."""
        where = "metadata.strawpot.dependencies"
        return [Issue(self.kind.main_file, f"{where}.{bad.group}[{bad.index}]", bad.message)
                for bad in published_form_problems(self.kind, v1_groups(self.kind, self.declared_dependencies))]

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
    from strawpot.model.storable import value_problems

    issues.extend(Issue(main, place, problem) for place, problem in value_problems(meta))
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
        self._all_roles = self._all_skills = False  # set by dependencies()

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
            install=self.install(),
            default_agent=self.default_agent(),
            roles_wildcard=self.roles_wildcard(),
            skills_wildcard=self._all_skills,
            resume=self.resume(),
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
        """`metadata.version` (as published agents carry it) or a top-level `version`; both must agree."""
        metadata = self.meta.get("metadata")
        nested = metadata.get("version") if isinstance(metadata, dict) else None
        top = self.parse_version("version", self.meta.get("version"))
        inner = self.parse_version("metadata.version", nested)
        if top is not None and inner is not None and top != inner:
            self.error("version", f"is {top} but metadata.version is {inner}; keep one, or make them equal")
            return None
        return top or inner

    def parse_version(self, fld: str, raw: Any) -> str | None:
        if raw is None:
            return None
        from resolver import InvalidVersion, Version

        try:
            return str(Version.parse(str(raw)))
        except InvalidVersion as exc:
            self.error(fld, str(exc))
            return None

    def dependencies(self) -> tuple[Dependency, ...]:
        raw = self.sp.get("dependencies")
        if raw is None:
            return ()
        fld = "metadata.strawpot.dependencies"
        if self.kind is Kind.SKILL and not isinstance(raw, list):
            self.error(fld, "must be a list of skill names for a skill")
            return ()
        if self.kind is Kind.ROLE and (not isinstance(raw, dict) or set(raw) - set(GROUPS[Kind.ROLE])):
            self.error(fld, "must be a mapping with 'skills' and/or 'roles' lists for a role")
            return ()
        if self.kind not in GROUPS:
            self.error(fld, f"a {self.kind.value} may not declare package dependencies")
            return ()
        found = read_edges(self.kind, v1_groups(self.kind, raw))
        for bad in found.bad:
            where = fld if self.kind is Kind.SKILL else f"{fld}.{bad.group}"
            self.error(where if bad.index < 0 else f"{where}[{bad.index}]", bad.message)
        self._all_roles, self._all_skills = found.all_roles, found.all_skills
        return tuple(Dependency(edge.kind, edge.name, edge.spec) for edge in found.edges)

    def roles_wildcard(self) -> bool:
        return self._all_roles

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

    def params(self) -> dict[str, ParamSpec]:
        specs, problems = parse_specs(self.mapping("params"))
        for fld, message in problems:
            self.error(fld, message)
        return specs

    def bin(self) -> dict[str, str]:
        """Program paths by OS, for any kind (an agent's wrapper, a skill's command-line tool); optional. A path
        names a shipped file or one the install command of that OS builds; neither is a warning (Package.warnings),
        as a package may declare a program for an OS it does not support yet."""
        raw = self.mapping("bin")
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
            bins[os_name] = rel
        return bins

    def install(self) -> dict[str, str]:
        """`metadata.strawpot.install`: one shell command per OS, for any kind."""
        raw = self.mapping("install")
        for os_name, command in raw.items():
            fld = f"metadata.strawpot.install.{os_name}"
            if os_name not in OPERATING_SYSTEMS:
                self.error(fld, "unknown OS (use linux, macos, windows)")
            elif not isinstance(command, str) or not command.strip():
                self.error(fld, "must be a shell command (a non-empty string)")
        return install_commands(self.meta)

    def resume(self) -> bool:
        """`metadata.strawpot.session: {resume: true}`: an agent whose conversations can be resumed by id."""
        raw = self.mapping("session")
        if not raw:
            return False
        if self.kind is not Kind.AGENT:
            self.error("metadata.strawpot.session", f"only agents declare sessions, not a {self.kind.value}")
            return False
        unknown = sorted(str(k) for k in raw if k != "resume")
        if unknown:
            self.error("metadata.strawpot.session", f"unknown key(s) {', '.join(unknown)} (known: resume)")
        resume = raw.get("resume", False)
        if not isinstance(resume, bool):
            self.error("metadata.strawpot.session.resume", "must be true or false")
            return False
        return resume

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


def install_commands(meta: Mapping[str, Any]) -> dict[str, str]:
    """The well-formed entries of `metadata.strawpot.install` ({os: command}); validation reports the rest."""
    return {
        os_name: command for os_name, command in _strawpot_mapping(meta, "install").items()
        if isinstance(command, str) and command.strip()
    }


def declared_bins(meta: Mapping[str, Any]) -> dict[str, str]:
    """The well-formed entries of `metadata.strawpot.bin` ({os: path in the package}); validation reports the rest."""
    bins = {}
    for os_name, path in _strawpot_mapping(meta, "bin").items():
        if isinstance(path, str):
            try:
                bins[os_name] = safe_relative_path(path.removeprefix("./"))
            except UnsafePath:
                continue
    return bins


def _strawpot_mapping(meta: Mapping[str, Any], key: str) -> dict[str, Any]:
    """`metadata.strawpot.<key>` restricted to the known OS names ({} when it is not a mapping)."""
    metadata = meta.get("metadata")
    strawpot = metadata.get("strawpot") if isinstance(metadata, dict) else None
    raw = strawpot.get(key) if isinstance(strawpot, dict) else None
    if not isinstance(raw, dict):
        return {}
    return {str(os_name): value for os_name, value in raw.items() if os_name in OPERATING_SYSTEMS}


def slug_error(slug: str) -> str | None:
    """Why `slug` is not a valid package name, or None when it is."""
    if len(slug) > SLUG_MAX_LENGTH:
        return f"{short_repr(slug)} is longer than {SLUG_MAX_LENGTH} characters"
    if not SLUG_PATTERN.fullmatch(slug):  # match() would let a trailing newline through ('$')
        return f"{slug!r} is not a valid slug (lowercase letters, digits and '-', starting with a letter or digit)"
    return None
