"""What a package is once read: the Package value, its dependency, tool and env entries, and validation issues."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from strawpot.model.dependencies import published_form_problems, v1_groups
from strawpot.model.kinds import Kind
from strawpot.model.params import ParamSpec
from strawpot.model.platform import current_os
from strawpot.model.plural import count
from strawpot.model.slugs import slug_error as slug_error  # re-exported: where the package model is read


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
    """A dependency a package's main file declares: kind, name and version specifier."""

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
    """A system tool an agent's AGENT.md declares, with its install command per OS."""

    name: str
    description: str
    install: dict[str, str]


@dataclass(frozen=True)
class EnvSpec:
    """An environment variable an agent declares: whether it is required, what it is for, its default."""

    name: str
    required: bool
    description: str
    default: str | None


@dataclass(frozen=True)
class Package:
    """A package read from its folder: its main file's frontmatter and body, and what they declare."""

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
    entry_point: tuple[str, ...] = ()  # an integration's metadata.strawpot.entry_point, split as a shell would
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
