"""Agents as they are really published: optional bin, a bin built by the install script, metadata.version."""

from __future__ import annotations

import pytest

from strawpot.model.kinds import Kind
from strawpot.model.package import PackageInvalid, parse_package


def agent(frontmatter: str, **files: bytes) -> dict[str, bytes]:
    return {"AGENT.md": f"---\nname: coder\ndescription: A coder.\n{frontmatter}---\n# coder\n".encode(), **files}


def issues(files: dict[str, bytes], kind: Kind = Kind.AGENT) -> list[str]:
    with pytest.raises(PackageInvalid) as info:
        parse_package(files, kind=kind)
    return [str(i) for i in info.value.issues]


BUILT = "metadata:\n  version: 0.1.0\n  strawpot:\n    bin: {linux: coder_wrapper, macos: coder_wrapper}\n" \
        "    install:\n      linux: sh build.sh\n      macos: sh build.sh\n"


def test_agent_whose_wrapper_the_install_script_builds_is_valid() -> None:
    pkg = parse_package(agent(BUILT, **{"build.sh": b"echo\n"}), kind=Kind.AGENT)
    assert pkg.version == "0.1.0"
    assert pkg.bin == {"linux": "coder_wrapper", "macos": "coder_wrapper"}
    assert pkg.install == {"linux": "sh build.sh", "macos": "sh build.sh"}
    assert pkg.install_script("linux") == "sh build.sh" and pkg.install_script("windows") is None
    assert pkg.wrapper_warning("linux") is None
    assert "no wrapper for windows" in (pkg.wrapper_warning("windows") or "")


def test_agent_without_any_bin_is_valid() -> None:
    pkg = parse_package(agent("metadata:\n  version: 1.2.3\n  strawpot:\n    install: {linux: make}\n"), kind=Kind.AGENT)
    assert pkg.bin == {} and pkg.version == "1.2.3"
    assert pkg.wrapper_warning("linux") is None
    assert pkg.wrapper_warning("macos") == (
        "agent coder has no wrapper for macos: set metadata.strawpot.bin.macos to a file in the package, "
        "or metadata.strawpot.install.macos to a command that builds it"
    )


def test_shipped_wrapper_covers_its_os_only() -> None:
    pkg = parse_package(agent("version: 1.0.0\nmetadata:\n  strawpot:\n    bin: {linux: w}\n", w=b"#!/bin/sh\n"),
                        kind=Kind.AGENT)
    assert pkg.wrapper_warning("linux") is None and pkg.wrapper_warning("macos") is not None


def test_bin_neither_shipped_nor_built_for_its_os_is_a_warning() -> None:
    fm = "version: 1.0.0\nmetadata:\n  strawpot:\n    bin: {linux: w, macos: w}\n    install: {linux: make}\n"
    pkg = parse_package(agent(fm), kind=Kind.AGENT)
    assert pkg.bin == {"linux": "w", "macos": "w"}
    expected = ("metadata.strawpot.bin.macos names 'w', which is neither in the package nor built by "
                "metadata.strawpot.install.macos: the agent has no program on macos")
    assert pkg.warnings("linux") == [expected]
    assert pkg.warnings("macos") == [expected]  # said once, not again as "no wrapper for macos"
    assert pkg.warnings("windows") == [expected, pkg.wrapper_warning("windows")]


@pytest.mark.parametrize("kind", [Kind.SKILL, Kind.ROLE, Kind.MEMORY, Kind.INTEGRATION, Kind.AGENT])
def test_any_kind_may_declare_a_program_built_by_its_install_command(kind: Kind) -> None:
    # the denden skill's shape: a program per OS, installed on macOS and Linux, declared for Windows too
    fm = ("metadata:\n  strawpot:\n    bin: {macos: denden, linux: denden, windows: denden.exe}\n"
          "    install:\n      macos: curl -fsSL https://example.invalid/install.sh | sh\n"
          "      linux: curl -fsSL https://example.invalid/install.sh | sh\n")
    if kind is Kind.INTEGRATION:
        fm += "    entry_point: python adapter.py\n"  # what an integration runs (required of one)
    main = kind.main_file
    pkg = parse_package({main: f"---\nname: tool\ndescription: d\n{fm}---\n# tool\n".encode()}, kind=kind)
    assert pkg.bin == {"macos": "denden", "linux": "denden", "windows": "denden.exe"}
    assert pkg.bin_path("linux") == "denden"
    assert pkg.warnings("linux")[0] == (
        "metadata.strawpot.bin.windows names 'denden.exe', which is neither in the package nor built by "
        f"metadata.strawpot.install.windows: the {kind.value} has no program on windows")


def test_a_skill_may_ship_its_program() -> None:
    files = {"SKILL.md": b"---\nname: t\ndescription: d\nmetadata:\n  strawpot:\n    bin: {linux: bin/t}\n---\n",
             "bin/t": b"#!/bin/sh\n"}
    pkg = parse_package(files, kind=Kind.SKILL, executables={"bin/t"})
    assert pkg.bin == {"linux": "bin/t"} and pkg.executables == {"bin/t"} and pkg.warnings("linux") == []


def test_install_scripts_are_checked_for_any_kind() -> None:
    fm = "version: 1.0.0\nmetadata:\n  strawpot:\n    install: {linux: 7, plan9: make, macos: ''}\n"
    files = {"SKILL.md": f"---\nname: coder\ndescription: d\n{fm}---\nbody\n".encode()}
    assert issues(files, Kind.SKILL) == [
        "SKILL.md: metadata.strawpot.install.linux: must be a shell command (a non-empty string)",
        "SKILL.md: metadata.strawpot.install.plan9: unknown OS (use linux, macos, windows)",
        "SKILL.md: metadata.strawpot.install.macos: must be a shell command (a non-empty string)",
    ]
    good = {"SKILL.md": b"---\nname: s\ndescription: d\nmetadata:\n  strawpot:\n    install: {linux: ./get.sh}\n---\n"}
    assert parse_package(good, kind=Kind.SKILL).install == {"linux": "./get.sh"}


def test_metadata_version_and_top_level_version() -> None:
    both = parse_package(agent("version: 1.0.0\nmetadata:\n  version: '1.0.0'\n"), kind=Kind.AGENT)
    assert both.version == "1.0.0"
    assert parse_package(agent("version: 2.0.0\n"), kind=Kind.AGENT).version == "2.0.0"
    assert issues(agent("version: 1.0.0\nmetadata:\n  version: 1.1.0\n")) == [
        "AGENT.md: version: is 1.0.0 but metadata.version is 1.1.0; keep one, or make them equal"
    ]
    assert issues(agent("metadata:\n  version: one\n"))[0].startswith("AGENT.md: metadata.version: ")
