"""Parsing the registry's JSON into frozen models: the /versions extension and the v1 detail fallback."""

from __future__ import annotations

import pytest

from hub_client import FileInfo, PackageVersions, VersionInfo
from valueclass import FrozenRecordError

CONTRACT_EXAMPLE = {
    "kind": "role",
    "slug": "reviewer",
    "versions": [
        {
            "version": "1.2.0",
            "dependencies": {"skills": ["code-review^1.0"], "roles": ["implementer>=1"]},
            "defaultAgent": "stub-agent",
            "tools": {"git": {"description": "Git", "install": {"linux": "apt-get install -y git"}}},
            "sha256": "c" * 64,
            "size": 1234,
            "files": [{"path": "ROLE.md", "size": 321, "sha256": "d" * 64, "executable": False}],
            "yanked": False,
            "createdAt": 1763700000000,
        }
    ],
}


def test_versions_body_from_the_contract_parses_every_field() -> None:
    parsed = PackageVersions.from_versions_json(CONTRACT_EXAMPLE)
    assert parsed == PackageVersions(
        kind="role",
        slug="reviewer",
        has_archives=True,
        versions=(
            VersionInfo(
                version="1.2.0",
                dependencies={"skills": ["code-review^1.0"], "roles": ["implementer>=1"]},
                default_agent="stub-agent",
                tools={"git": {"description": "Git", "install": {"linux": "apt-get install -y git"}}},
                sha256="c" * 64,
                size=1234,
                files=(FileInfo(path="ROLE.md", size=321, sha256="d" * 64, executable=False),),
                yanked=False,
                created_at=1763700000000,
            ),
        ),
    )
    assert parsed.get("1.2.0") is parsed.versions[0]
    assert parsed.get("9.9.9") is None


def test_models_are_frozen() -> None:
    parsed = PackageVersions.from_versions_json(CONTRACT_EXAMPLE)
    with pytest.raises(FrozenRecordError):
        parsed.versions[0].version = "2.0.0"  # type: ignore[misc]


def test_yanked_and_executable_flags_and_null_dependencies() -> None:
    body = {
        "kind": "agent",
        "slug": "stub",
        "versions": [
            {
                "version": "0.1.0",
                "dependencies": None,
                "files": [{"path": "bin/run", "size": 3, "sha256": None, "executable": True}],
                "yanked": True,
            }
        ],
    }
    (only,) = PackageVersions.from_versions_json(body).versions
    assert only.yanked is True
    assert only.dependencies == {}
    assert only.files == (FileInfo("bin/run", 3, None, True),)
    assert only.sha256 is None and only.size is None and only.created_at is None


@pytest.mark.parametrize(
    "body",
    [
        [],
        {"kind": "role", "slug": "x"},
        {"kind": "widget", "slug": "x", "versions": []},
        {"kind": "role", "slug": "x", "versions": [{"version": 1}]},
        {"kind": "role", "slug": "x", "versions": [{"version": "1.0.0", "size": True}]},
        {"kind": "role", "slug": "x", "versions": [{"version": "1.0.0", "dependencies": {"skills": "a"}}]},
        {"kind": "role", "slug": "x", "versions": [{"version": "1.0.0", "files": [{"path": "A"}]}]},
    ],
)
def test_bad_shapes_are_rejected(body: object) -> None:
    with pytest.raises((TypeError, ValueError)):
        PackageVersions.from_versions_json(body)


def test_detail_fallback_knows_only_the_latest_version() -> None:
    detail = {
        "slug": "git-workflow",
        "dependencies": {"skills": ["base"]},
        "latestVersion": {
            "version": "1.4.0",
            "changelog": "",
            "files": [{"path": "SKILL.md", "size": 42}],
            "createdAt": 1763700000000.7,
        },
    }
    parsed = PackageVersions.from_detail_json("skill", detail)
    assert parsed.has_archives is False
    assert parsed.kind == "skill" and parsed.slug == "git-workflow"
    (only,) = parsed.versions
    assert only.version == "1.4.0"
    assert only.sha256 is None and only.size is None
    assert only.dependencies == {"skills": ["base"]}  # latestVersion had none: the package's are used
    assert only.files == (FileInfo("SKILL.md", 42),)
    assert only.created_at == 1763700000000


def test_detail_without_latest_version_has_no_versions() -> None:
    parsed = PackageVersions.from_detail_json("role", {"slug": "empty", "latestVersion": None})
    assert parsed.versions == () and parsed.has_archives is False
