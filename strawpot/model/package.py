"""Package formats: read a SKILL/ROLE/AGENT/MEMORY/INTEGRATION.md package and validate it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from strawpot.model.kinds import Kind
from strawpot.model.package_fields import FieldReader, declared_bins, install_commands
from strawpot.model.package_limits import (  # in __all__: read here too
    MAX_FILE_SIZE,
    MAX_FILES,
    MAX_TOTAL_SIZE,
)
from strawpot.model.package_types import (
    Dependency,
    EnvSpec,
    Issue,
    Package,
    PackageInvalid,
    ToolSpec,
    slug_error,
)
from strawpot.model.paths import UnsafePath, safe_relative_path

__all__ = [
    "MAX_FILES", "MAX_FILE_SIZE", "MAX_TOTAL_SIZE", "Dependency", "EnvSpec", "Issue", "Package", "PackageInvalid",
    "ToolSpec", "declared_bins", "detect_kind", "install_commands", "parse_package", "slug_error",
]



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
    reader = FieldReader(kind, main, meta, set(clean), issues)
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
