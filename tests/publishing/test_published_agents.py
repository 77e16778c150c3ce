"""Publishing agents shaped like the real ones: the version in metadata.version, a wrapper the install script
builds; `validate` shows the install script and warns once when nothing covers this OS."""

from __future__ import annotations

from pathlib import Path

import pytest

from strawpot.cli import main
from strawpot.model.kinds import Kind
from strawpot.model.package import parse_package
from strawpot.model.platform import current_os
from strawpot.publishing.prepare import prepare_upload, set_frontmatter_version

FIXTURE_CODER = Path(__file__).resolve().parents[2] / "fixtures" / "agents" / "fixture-coder"
NESTED = "---\nname: a\ndescription: d\nmetadata:\n  version: \"0.1.0\"\n  strawpot:\n    params: {}\n---\nbody\n"


def test_version_override_rewrites_metadata_version_and_adds_no_second_one() -> None:
    text = set_frontmatter_version(NESTED, "0.3.0")
    assert text == NESTED.replace('version: "0.1.0"', "version: 0.3.0")
    assert parse_package({"AGENT.md": text.encode()}, kind=Kind.AGENT).version == "0.3.0"
    both = "---\nname: a\ndescription: d\nversion: 0.1.0\nmetadata:\n  version: 0.1.0\n---\n"
    assert parse_package({"AGENT.md": set_frontmatter_version(both, "1.0.0").encode()}, kind=Kind.AGENT).version == "1.0.0"
    deeper = "---\nname: a\ndescription: d\nmetadata:\n  strawpot:\n    version: x\n---\n"  # not metadata.version
    assert set_frontmatter_version(deeper, "1.0.0").startswith("---\nversion: 1.0.0\nname: a")


def test_the_fixture_agent_publishes_its_metadata_version_with_no_executable() -> None:
    upload = prepare_upload(FIXTURE_CODER)
    assert upload.version == "0.1.0" and upload.fields["version"] == "0.1.0"
    assert not upload.version_rewritten
    assert [f.path for f in upload.files] == ["AGENT.md", "build/install.sh", "build/wrapper.py"]
    assert not any(f.registry_executable for f in upload.files)
    again = prepare_upload(FIXTURE_CODER, version="0.2.0")
    assert again.package.version == "0.2.0" and again.package.install == upload.package.install


def test_validate_shows_install_scripts_and_warns_once_when_this_os_is_not_covered(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = "windows" if current_os() != "windows" else "linux"
    (tmp_path / "AGENT.md").write_text(
        f"---\nname: far-agent\ndescription: d\nmetadata:\n  version: 1.0.0\n  strawpot:\n"
        f"    bin: {{{other}: w.exe}}\n    install: {{{other}: build.cmd}}\n---\nbody\n"
    )
    assert main(["validate", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == ["ok: agent far-agent 1.0.0: dependencies none", f"install script ({other}): build.cmd"]
    assert err.count("warning:") == 1
    assert f"agent far-agent has no wrapper for {current_os()}" in err
    assert main(["validate", str(FIXTURE_CODER)]) == 0
    out, err = capsys.readouterr()
    assert "warning" not in err and "install script (linux): sh build/install.sh" in out


def test_publish_dry_run_shows_the_install_scripts(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    assert main(["publish", str(FIXTURE_CODER), "--dry-run", "--registry", "http://127.0.0.1:9"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[0] == "would publish agent fixture-coder 0.1.0 to http://127.0.0.1:9"
    assert "install script (linux): sh build/install.sh" in out and "warning" not in err
    assert main(["publish", str(FIXTURE_CODER), "--dry-run", "--json", "--registry", "http://127.0.0.1:9"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["install"] == {"linux": "sh build/install.sh", "macos": "sh build/install.sh"}
