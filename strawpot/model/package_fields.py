"""Reading a main file's `metadata.strawpot` fields into Package values, one Issue per problem found."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from strawpot.model.dependencies import GROUPS, read_edges, v1_groups
from strawpot.model.display import short_repr, short_text
from strawpot.model.kinds import Kind
from strawpot.model.package_types import Dependency, EnvSpec, Issue, Package, ToolSpec, slug_error
from strawpot.model.params import ParamSpec, parse_specs
from strawpot.model.paths import UnsafePath, safe_relative_path
from strawpot.model.platform import OPERATING_SYSTEMS


class FieldReader:
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
            entry_point=self.entry_point(),
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

    def entry_point(self) -> tuple[str, ...]:
        """`metadata.strawpot.entry_point` (`python adapter.py`): the command an integration runs in its folder;
        required of an integration, refused on other kinds. Split as a shell would, but never run by one."""
        fld, raw = "metadata.strawpot.entry_point", self.sp.get("entry_point")
        if raw is None:
            if self.kind is Kind.INTEGRATION:
                self.error(fld, "is required of an integration (the command that runs it, e.g. 'python adapter.py')")
            return ()
        if self.kind is not Kind.INTEGRATION:
            self.error(fld, f"only integrations have an entry point, not a {self.kind.value}")
            return ()
        import shlex

        try:
            words = tuple(shlex.split(raw)) if isinstance(raw, str) else ()
        except ValueError as exc:
            self.error(fld, f"is not a command line ({exc})")
            return ()
        if not words:
            self.error(fld, "must be a command line (a non-empty string such as 'python adapter.py')")
        return words

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


def tool_specs(meta: Mapping[str, object]) -> dict[str, dict[str, str]]:
    """{tool: {os: install command}} of `metadata.strawpot.tools`, the well-formed entries only."""
    metadata = meta.get("metadata")
    strawpot = metadata.get("strawpot") if isinstance(metadata, dict) else None
    tools = strawpot.get("tools") if isinstance(strawpot, dict) else None
    if not isinstance(tools, dict):
        return {}
    found: dict[str, dict[str, str]] = {}
    for name, spec in tools.items():
        install = spec.get("install") if isinstance(spec, dict) else None
        found[str(name)] = ({str(k): v for k, v in install.items() if isinstance(v, str)}
                            if isinstance(install, dict) else {})
    return found
