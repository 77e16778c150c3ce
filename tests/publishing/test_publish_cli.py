"""`strawpot publish` without a real registry: the dry-run report, local refusals that send nothing, server errors."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from strawpot.model.package import MAX_FILE_SIZE
from strawpot.model.plural import count
from strawpot.publishing.prepare import set_frontmatter_version
from tests._cli import in_process

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
SKILL = "---\nname: demo\ndescription: A demo skill.\nversion: 1.0.0\n---\n\n# Demo\n"
AGENT = (
    "---\nname: demo-agent\ndescription: d\nversion: 0.1.0\nmetadata:\n  strawpot:\n    bin:\n"
    "      linux: {linux}\n      macos: bin/wrapper\n---\nbody\n"
)


def write(dest: Path, files: dict[str, str | bytes], executables: tuple[str, ...] = ()) -> Path:
    for rel, content in files.items():
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        (dest / rel).write_bytes(content.encode() if isinstance(content, str) else content)
        if rel in executables:
            (dest / rel).chmod(0o755)
    return dest




# -- dry run ---------------------------------------------------------------------------------------------


def test_dry_run_shows_fields_files_and_total_and_sends_nothing(
    capsys: pytest.CaptureFixture[str], recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STRAWPOT_TOKEN", "sh_" + "0" * 40)
    code, out, err = in_process(capsys, "publish", str(FIXTURES / "agents" / "stub-agent"), "--version", "0.1.0",
                         "--changelog", "first", "--dry-run", "--registry", recorder.url)
    assert code == 0
    assert recorder.requests == []
    assert out.splitlines()[0] == f"would publish agent stub-agent 0.1.0 to {recorder.url}"
    assert f"POST {recorder.url}/api/v1/agents  (multipart/form-data)" in out
    assert "  slug       stub-agent" in out
    assert "  version    0.1.0" in out
    assert "  changelog  first" in out
    assert "dependencies" not in out
    root = FIXTURES / "agents" / "stub-agent"
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    main_size = len(set_frontmatter_version((root / "AGENT.md").read_text(), "0.1.0").encode())
    sizes = {rel: main_size if rel == "AGENT.md" else (root / rel).stat().st_size for rel in files}
    for rel in files:
        mode = "rwxr-xr-x" if rel == "bin/stub-wrapper" else "rw-r--r--"
        assert any(line.split() == [str(sizes[rel]), mode, rel] for line in out.splitlines()), rel
    total = sum(sizes.values())
    assert out.rstrip().splitlines()[-1] == f"total: {count(total, 'byte')} in {count(len(files), 'file')}"
    assert "nothing was sent" in err


def test_dry_run_needs_no_token_and_no_server(capsys: pytest.CaptureFixture[str], closed_port_url: str) -> None:
    code, out, _ = in_process(capsys, "publish", str(FIXTURES / "roles" / "reviewer"), "--dry-run", "--registry", closed_port_url)
    assert code == 0
    assert '  dependencies  {"skills":["code-review","security-baseline"],"roles":["implementer"]}' in out


def test_dry_run_json_is_versioned_and_complete(capsys: pytest.CaptureFixture[str], closed_port_url: str) -> None:
    code, out, _ = in_process(capsys, "publish", str(FIXTURES / "skills" / "code-review"), "--dry-run", "--json",
                       "--registry", closed_port_url)
    assert code == 0
    report = json.loads(out)
    assert report["schema_version"] == 2 and report["dry_run"] is True
    assert report["package"] == {"kind": "skill", "name": "code-review", "version": "1.2.0"}
    assert report["fields"]["dependencies"] == '{"skills":["diff-reading","code-style"]}'
    data = (FIXTURES / "skills" / "code-review" / "SKILL.md").read_bytes()
    [entry] = report["files"]
    assert entry["path"] == "SKILL.md" and entry["size"] == len(data) == report["total_size"]
    assert entry["executable"] is False


def test_version_conflict_is_warned_and_the_flag_wins(capsys: pytest.CaptureFixture[str], closed_port_url: str) -> None:
    code, out, err = in_process(capsys, "publish", str(FIXTURES / "skills" / "git-workflow"), "--version", "1.1.0",
                         "--dry-run", "--registry", closed_port_url)
    assert code == 0
    assert ["version", "1.1.0"] in [line.split() for line in out.splitlines()]
    assert "SKILL.md says version 1.0.0; uploading it with `version: 1.1.0` (--version wins)" in err


# -- refused locally: exit 2, the file named, and no request made --------------------------------------------


@pytest.fixture
def token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STRAWPOT_TOKEN", "sh_" + "0" * 40)


def test_over_the_limit_is_refused_before_any_request(
    capsys: pytest.CaptureFixture[str], recorder, tmp_path: Path, token: None
) -> None:
    pkg = write(tmp_path / "demo", {"SKILL.md": SKILL, "assets/model.bin": b""})
    with open(pkg / "assets" / "model.bin", "wb") as fh:
        fh.truncate(MAX_FILE_SIZE + 1)
    code, _, err = in_process(capsys, "publish", str(pkg), "--registry", recorder.url)
    assert code == 2
    assert f"assets/model.bin: {MAX_FILE_SIZE + 1} bytes, more than the limit of {MAX_FILE_SIZE} a file" in err
    assert recorder.requests == []


def test_main_file_not_utf8(capsys: pytest.CaptureFixture[str], recorder, token: None) -> None:
    code, _, err = in_process(capsys, "publish", str(FIXTURES / "broken" / "not-utf8"), "--registry", recorder.url)
    assert code == 2
    assert "SKILL.md: not UTF-8 text (byte" in err
    assert recorder.requests == []


def test_missing_wrapper_for_a_declared_os_is_a_warning(capsys: pytest.CaptureFixture[str], recorder, tmp_path: Path,
                                                       token: None) -> None:
    pkg = write(tmp_path / "agent", {"AGENT.md": AGENT.format(linux="bin/wrapper-linux"), "bin/wrapper": "#!/bin/sh\n"},
                executables=("bin/wrapper",))
    code, out, err = in_process(capsys, "publish", str(pkg), "--dry-run", "--registry", recorder.url)
    assert code == 0, err
    assert ("metadata.strawpot.bin.linux names 'bin/wrapper-linux', which is neither in the package nor built by "
            "metadata.strawpot.install.linux: the agent has no program on linux") in " ".join((out + err).split())
    assert recorder.requests == []


@pytest.mark.parametrize("outside", ["../outside", "/usr/bin/env", "bin/../../x"])
def test_bin_path_outside_the_package(
    capsys: pytest.CaptureFixture[str], recorder, tmp_path: Path, token: None, outside: str
) -> None:
    pkg = write(tmp_path / "agent", {"AGENT.md": AGENT.format(linux=outside), "bin/wrapper": "#!/bin/sh\n"})
    code, _, err = in_process(capsys, "publish", str(pkg), "--registry", recorder.url)
    assert code == 2
    assert "AGENT.md: metadata.strawpot.bin.linux: is outside the package" in err
    assert recorder.requests == []


def test_a_link_in_the_package_is_refused(capsys: pytest.CaptureFixture[str], recorder, tmp_path: Path, token: None) -> None:
    pkg = write(tmp_path / "demo", {"SKILL.md": SKILL})
    os.symlink("/etc/passwd", pkg / "passwd")
    code, _, err = in_process(capsys, "publish", str(pkg), "--registry", recorder.url)
    assert code == 2 and "passwd: links and special files are not allowed" in err
    assert recorder.requests == []


def test_every_problem_is_reported_at_once(capsys: pytest.CaptureFixture[str], recorder, token: None) -> None:
    code, _, err = in_process(capsys, "publish", str(FIXTURES / "broken" / "bad-skill"), "--registry", recorder.url)
    assert code == 2
    assert "6 problems found" in err
    for fld in ("name", "version", "description", "metadata.strawpot.dependencies[0]",
                "metadata.strawpot.dependencies[1]", "metadata.strawpot.bin.plan9"):
        assert f"SKILL.md: {fld}: " in err
    assert recorder.requests == []


def test_no_version_anywhere(capsys: pytest.CaptureFixture[str], recorder, tmp_path: Path, token: None) -> None:
    pkg = write(tmp_path / "demo", {"SKILL.md": SKILL.replace("version: 1.0.0\n", "")})
    code, _, err = in_process(capsys, "publish", str(pkg), "--registry", recorder.url)
    assert code == 2 and "no version to publish" in err and "--version" in err
    assert recorder.requests == []


def test_no_token_says_how_to_get_one(capsys: pytest.CaptureFixture[str], recorder) -> None:
    code, _, err = in_process(capsys, "publish", str(FIXTURES / "skills" / "git-workflow"), "--registry", recorder.url)
    assert code == 1
    assert f"error: no token for the registry {recorder.url}" in err
    assert "strawpot login" in err and "strawpot registry token create" in err and "STRAWPOT_TOKEN" in err
    assert recorder.requests == []


def test_a_missing_folder(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = in_process(capsys, "publish", str(tmp_path / "nope"), "--dry-run")
    assert code == 2 and "no such package folder" in err


# -- what the server says is shown as it said it ------------------------------------------------------------


SERVER_TEXT = "publish refused, 2 problems:\n  version: 1.0.0 already exists [immutable]\n  dependencies: skill 'x' not found"


@pytest.mark.parametrize("status", [400, 409, 413, 422, 500])
def test_server_errors_are_shown_verbatim_in_one_block(
    capsys: pytest.CaptureFixture[str], recorder, token: None, status: int
) -> None:
    recorder.reply[0] = (status, json.dumps({"error": SERVER_TEXT}).encode())
    code, out, err = in_process(capsys, "publish", str(FIXTURES / "skills" / "git-workflow"), "--registry", recorder.url)
    assert code == 1
    assert recorder.requests == [("POST", "/api/v1/skills")]
    assert f"error: the registry {recorder.url} refused skill git-workflow 1.0.0 (HTTP {status}):\n{SERVER_TEXT}\n" in err
    assert out == ""


@pytest.mark.parametrize("status", [401, 403])
def test_auth_refusals_show_the_server_text_and_how_to_log_in(
    capsys: pytest.CaptureFixture[str], recorder, token: None, status: int
) -> None:
    recorder.reply[0] = (status, json.dumps({"error": "invalid token [sh_…]"}).encode())
    code, _, err = in_process(capsys, "publish", str(FIXTURES / "skills" / "git-workflow"), "--registry", recorder.url)
    assert code == 1
    assert f"(HTTP {status}):\ninvalid token [sh_…]" in err
    assert "strawpot login" in err


def test_unreachable_registry_is_exit_6(capsys: pytest.CaptureFixture[str], closed_port_url: str, token: None) -> None:
    code, _, err = in_process(capsys, "publish", str(FIXTURES / "skills" / "git-workflow"), "--registry", closed_port_url)
    assert code == 6 and "registry unreachable" in err


# -- success --------------------------------------------------------------------------------------------------


def test_success_prints_kind_name_version_and_registry(capsys: pytest.CaptureFixture[str], recorder, token: None) -> None:
    recorder.reply[0] = (201, json.dumps({"skillId": "s1", "versionId": "v1", "version": "1.2.0"}).encode())
    code, out, _ = in_process(capsys, "publish", str(FIXTURES / "skills" / "code-review"), "--registry", recorder.url)
    assert code == 0
    size = (FIXTURES / "skills" / "code-review" / "SKILL.md").stat().st_size
    assert out == f"published skill code-review 1.2.0 to {recorder.url} (1 file, {size} bytes)\n"
    assert recorder.requests == [("POST", "/api/v1/skills")]


def test_success_json_carries_the_server_answer(capsys: pytest.CaptureFixture[str], recorder, token: None) -> None:
    recorder.reply[0] = (201, json.dumps({"roleId": "r1", "versionId": "v9", "version": "1.0.0"}).encode())
    code, out, _ = in_process(capsys, "publish", str(FIXTURES / "roles" / "scout"), "--json", "--registry", recorder.url)
    assert code == 0
    report = json.loads(out)
    assert report["dry_run"] is False
    assert report["result"] == {"role_id": "r1", "version_id": "v9", "version": "1.0.0"}
    assert report["package"] == {"kind": "role", "name": "scout", "version": "1.0.0"}


def test_the_main_file_path_works_like_its_folder(capsys: pytest.CaptureFixture[str], closed_port_url: str) -> None:
    code, out, _ = in_process(capsys, "publish", str(FIXTURES / "skills" / "code-review" / "SKILL.md"), "--dry-run",
                       "--registry", closed_port_url)
    assert code == 0 and out.startswith("would publish skill code-review 1.2.0")


def test_the_registry_comes_from_the_project_manifest(capsys: pytest.CaptureFixture[str], recorder, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "strawpot.toml").write_text(f'[registry]\nurl = "{recorder.url}/"\n')
    monkeypatch.chdir(tmp_path)
    code, out, _ = in_process(capsys, "publish", str(FIXTURES / "skills" / "git-workflow"), "--dry-run")
    assert code == 0 and out.splitlines()[0] == f"would publish skill git-workflow 1.0.0 to {recorder.url}"
    monkeypatch.setenv("STRAWPOT_REGISTRY_URL", "http://from-env.test")
    code, out, _ = in_process(capsys, "publish", str(FIXTURES / "skills" / "git-workflow"), "--dry-run")
    assert out.splitlines()[0].endswith("to http://from-env.test")
    code, out, _ = in_process(capsys, "publish", str(FIXTURES / "skills" / "git-workflow"), "--dry-run", "--registry", "http://flag.test")
    assert out.splitlines()[0].endswith("to http://flag.test")


def test_validate_names_every_dependency_outside_strawhubs_grammar(capsys: pytest.CaptureFixture[str],
                                                                  tmp_path: Path) -> None:
    folder = tmp_path / "ranged"
    folder.mkdir()
    (folder / "ROLE.md").write_text("---\nname: ranged\ndescription: Ranges.\nmetadata:\n  strawpot:\n"
                                    "    dependencies:\n      skills: [\"a^1.0\", \"b==1.0.0\", \"*\"]\n"
                                    "      roles: [\"c>=2\"]\n---\n\nBody.\n")
    code, out, err = in_process(capsys, "validate", str(folder))
    assert code == 2 and out == ""
    assert "ROLE.md: metadata.strawpot.dependencies.skills[0]: 'a^1.0' is not a published dependency: use 'slug' " \
           "(latest), 'slug==X.Y.Z' (exact) or '*'" in err
    assert "ROLE.md: metadata.strawpot.dependencies.roles[0]: 'c>=2' is not a published dependency" in err
    assert "b==1.0.0" not in err
    assert f"{folder}: 2 problems found" in err and "a registry started with `--allow-ranges` takes ranges" in err
    (folder / "ROLE.md").write_text((folder / "ROLE.md").read_text().replace("a^1.0", "a").replace("c>=2", "c"))
    code, out, err = in_process(capsys, "validate", str(folder))
    assert code == 0 and out.startswith("ok: role ranged")
