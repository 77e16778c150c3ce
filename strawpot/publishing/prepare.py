"""Turn a package folder into the exact v1 multipart upload, refusing locally what the registry would refuse."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from strawpot.model.errors import UsageError
from strawpot.model.kinds import Kind
from strawpot.model.package import Package, PackageInvalid, parse_package
from strawpot.model.package_folder import load_package
from strawpot.model.plural import count

_VERSION_LINE = re.compile(r"^version[ \t]*:.*?(\r?)$", re.MULTILINE)


@dataclass(frozen=True)
class UploadFile:
    path: str
    data: bytes = field(repr=False)
    executable: bool
    """Executable in the source folder."""
    registry_executable: bool
    """Executable once published: the registry derives exec bits for an agent's wrappers only."""

    @property
    def size(self) -> int:
        return len(self.data)


@dataclass(frozen=True)
class Upload:
    """Everything one publish sends: the package, the form fields and the files, in upload order."""

    package: Package
    version: str
    fields: dict[str, str]
    files: tuple[UploadFile, ...]
    source_version: str | None = None
    """The version the main file's frontmatter says in the source folder."""
    version_rewritten: bool = False
    """The uploaded main file's `version:` line was set to `version`."""

    @property
    def kind(self) -> Kind:
        return self.package.kind

    @property
    def slug(self) -> str:
        return self.package.name

    @property
    def total_size(self) -> int:
        return sum(f.size for f in self.files)

    @property
    def lost_exec_bits(self) -> list[str]:
        """Files executable here whose bit the registry will not keep."""
        return [f.path for f in self.files if f.executable and not f.registry_executable]


def invalid_package(exc: PackageInvalid, path: Path | str) -> UsageError:
    """One UsageError listing every problem of a package, each on its own line."""
    lines = "\n".join(f"  {issue}" for issue in exc.issues)
    return UsageError(f"{exc.where or path}: {count(len(exc.issues), 'problem')} found:\n{lines}")


def prepare_upload(
    path: Path, *, version: str | None = None, changelog: str | None = None,
    pins: Mapping[tuple[Kind, str], str] | None = None,
) -> Upload:
    """Validate the package at `path` like the registry does and build its upload; nothing is sent.

    `pins`: (kind, slug) -> version of workspace members; a dependency on one of them that names no version
    is uploaded as `slug==VERSION` (cargo's rewrite of a path dependency, in StrawHub's grammar), so what the
    registry stores names the member it was published with.
    """
    from resolver import InvalidVersion, Version

    root = path.parent if path.is_file() else path
    try:
        package = load_package(root)
    except PackageInvalid as exc:
        raise invalid_package(exc, root) from None
    if version is not None:
        try:
            version = str(Version.parse(version.strip()))
        except InvalidVersion as exc:
            raise UsageError(f"--version: {exc}") from None
    chosen = version or package.version
    if chosen is None:
        raise UsageError(
            f"{root}: no version to publish",
            hint=f"add `metadata.version: 1.0.0` to the frontmatter of {package.kind.main_file}, or pass --version",
        )
    source_version = package.version
    files = dict(package.files)
    rewritten = chosen != package.version
    main = package.kind.main_file
    pinned = {(d.kind, d.name): pins[(d.kind, d.name)] for d in package.dependencies
              if pins and d.spec.strip() in ("", "*") and (d.kind, d.name) in pins}
    if pinned:
        files[main] = pin_dependencies(files[main].decode("utf-8"), package.kind, pinned).encode("utf-8")
    if rewritten or pinned:
        if rewritten:
            files[main] = set_frontmatter_version(files[main].decode("utf-8"), chosen).encode("utf-8")
        try:
            package = parse_package(files, kind=package.kind, executables=package.executables, where=str(root))
        except PackageInvalid as exc:  # pragma: no cover - a version line cannot break a valid package
            raise invalid_package(exc, root) from None
    if changelog is None:
        raw = package.frontmatter.get("changelog")
        changelog = raw if isinstance(raw, str) else ""
    return Upload(
        package=package,
        version=chosen,
        fields=form_fields(package, chosen, changelog),
        files=_upload_files(package),
        source_version=source_version,
        version_rewritten=rewritten,
    )


_LIST_ITEM = re.compile(r"^(?P<lead>[ \t]*-[ \t]+)(?P<q>[\"']?)(?P<slug>[a-z0-9][a-z0-9-]*)(?P=q)(?P<tail>[ \t]*(#.*)?\r?)$")
_GROUP = re.compile(r"^[ \t]*(skills|roles)[ \t]*:[ \t]*\r?$")


def pin_dependencies(text: str, kind: Kind, pins: Mapping[tuple[Kind, str], str]) -> str:
    """The main file with each block-list dependency `- slug` named in `pins` written `- slug==VERSION`; every
    other byte kept. A skill's list holds skills; a role's `skills:` and `roles:` lists say their kind."""
    lines = text.splitlines(keepends=True)
    fences = [i for i, line in enumerate(lines) if re.match(r"^-{3,}[ \t]*\r?\n?$", line)][:2]
    if len(fences) < 2:
        return text
    group = Kind.SKILL
    for i in range(fences[0] + 1, fences[1]):
        if heading := _GROUP.match(lines[i].rstrip("\n")):
            group = Kind.SKILL if heading.group(1) == "skills" or kind is Kind.SKILL else Kind.ROLE
            continue
        item = _LIST_ITEM.match(lines[i].rstrip("\n"))
        if item and (version := pins.get((group, item.group("slug")))):
            end = "\n" if lines[i].endswith("\n") else ""
            q, slug = item.group("q"), item.group("slug")
            lines[i] = f"{item.group('lead')}{q}{slug}=={version}{q}{item.group('tail')}{end}"
    return "".join(lines)


def set_frontmatter_version(text: str, version: str) -> str:
    """The main file with its version set to `version`: the top-level `version:` line and `metadata.version`
    where they exist (so the two still agree), else a top-level `version:` line added."""
    newline = "\r\n" if text.split("\n", 1)[0].endswith("\r") else "\n"
    head, sep, rest = text.partition(newline)  # the opening '---' line
    end = re.search(r"^-{3,}[ \t]*\r?$", rest, re.MULTILINE)
    block, tail = (rest[: end.start()], rest[end.start():]) if end else (rest, "")
    block, nested = _set_metadata_version(block, version)
    if _VERSION_LINE.search(block):
        block = _VERSION_LINE.sub(lambda m: f"version: {version}{m.group(1)}", block, count=1)
    elif not nested:
        block = f"version: {version}{newline}{block}"
    return head + sep + block + tail


def _set_metadata_version(block: str, version: str) -> tuple[str, bool]:
    """`block` with the `version:` line directly under a block-style `metadata:` replaced, if there is one."""
    lines = block.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if re.match(r"metadata[ \t]*:[ \t]*\r?\n?$", line)), None)
    if start is None:
        return block, False
    indent = None
    for i in range(start + 1, len(lines)):
        line = lines[i]
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        width = len(line) - len(line.lstrip(" "))
        if width == 0:
            break
        indent = width if indent is None else indent
        match = re.match(r"( +)version[ \t]*:.*?(\r?\n?)$", line)
        if width == indent and match:
            lines[i] = f"{match.group(1)}version: {version}{match.group(2)}"
            return "".join(lines), True
    return block, False


def dependencies_field(package: Package) -> dict[str, list[str]] | None:
    """The v1 `dependencies` field: `{"skills": [...]}` for a skill, plus `"roles"` for a role."""
    if package.kind not in (Kind.SKILL, Kind.ROLE):
        return None
    shape: dict[str, list[str]] = {"skills": [str(d) for d in package.dependencies if d.kind is Kind.SKILL]}
    if package.skills_wildcard:
        shape["skills"].append("*")
    if package.kind is Kind.ROLE:
        roles = [str(d) for d in package.dependencies if d.kind is Kind.ROLE]
        shape["roles"] = roles + (["*"] if package.roles_wildcard else [])
    return shape


def form_fields(package: Package, version: str, changelog: str) -> dict[str, str]:
    """The multipart form fields, in the order they are sent."""
    fields = {"slug": package.name, "version": version, "changelog": changelog}
    display = package.frontmatter.get("displayName") or package.frontmatter.get("display_name")
    if isinstance(display, str) and display.strip():
        fields["displayName"] = display.strip()
    deps = dependencies_field(package)
    if deps is not None:
        fields["dependencies"] = json.dumps(deps, separators=(",", ":"))
    return fields


def _upload_files(package: Package) -> tuple[UploadFile, ...]:
    wrappers = set(package.bin.values())  # any kind's declared programs keep their executable bit
    return tuple(
        UploadFile(path, package.files[path], path in package.executables, path in wrappers)
        for path in sorted(package.files)
    )
