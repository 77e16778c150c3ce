"""The client against hostile registries and hostile project trees, through the command line (main() in this
process, as tests/_cli.strawpot_here runs it): deadlines end in exit 6, registry names are values, links out of
the project and bad TOML are refused before anything is written, and nothing refused stays in the download cache."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import subprocess
import tarfile
import time
from pathlib import Path

import pytest

from strawpot.model.archive import build_archive
from tests._cli import strawpot_here
from tests._loopback_servers import scripted_server, silent_server, trickling_server


def run(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("STRAWPOT_", "STRAWHUB_"))}
    base.update(HOME=str(cwd), STRAWPOT_CONFIG_DIR=str(cwd / ".config"), STRAWPOT_CACHE_DIR=str(cwd / ".cache"),
                STRAWPOT_HOME=str(cwd / ".global"), NO_COLOR="1", COLUMNS="300")
    return strawpot_here(*args, cwd=cwd, env=base, extra_env=env)


def assert_one_line_failure(result: subprocess.CompletedProcess[str], code: int, *needles: str) -> str:
    """The failure is `error: ...` on one line (plus at most a hint line), the exit code as documented."""
    out = result.stdout + result.stderr
    assert "Traceback" not in out, out
    assert result.returncode == code, out
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    for needle in needles:
        assert needle in errors[0], errors[0]
    return errors[0]


def files_under(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()} if root.exists() else set()


def versions_body(slug: str, archive: bytes, *, deps: list[str] | None = None, size: int | None = None,
                  files: dict[str, bytes] | None = None) -> bytes:
    entry = {
        "version": "1.0.0", "dependencies": {"skills": deps or []}, "yanked": False, "createdAt": 1,
        "sha256": hashlib.sha256(archive).hexdigest(), "size": len(archive) if size is None else size,
        "files": [{"path": p, "size": len(d), "sha256": hashlib.sha256(d).hexdigest(), "executable": False}
                  for p, d in sorted((files or {}).items())],
    }
    return json.dumps({"kind": "skill", "slug": slug, "versions": [entry]}).encode()


# -- Finding 3: deadlines ------------------------------------------------------------------------------------


def test_install_against_a_trickling_registry_ends_with_exit_6_within_its_deadline(tmp_path: Path) -> None:
    """One byte every 0.3 s: every read succeeds, so only a total deadline can end it."""
    with trickling_server(interval=0.3) as url:
        start = time.monotonic()
        result = run("install", "skill", "anything", cwd=tmp_path,
                     env={"STRAWPOT_REGISTRY_URL": url, "STRAWPOT_HTTP_TIMEOUT": "2"})
        took = time.monotonic() - start
    line = assert_one_line_failure(result, 6, "timed out", "within 2 s")
    assert "STRAWPOT_HTTP_TIMEOUT" in result.stderr, line
    assert took < 2 + 15, took  # start-up plus the deadline; without one this runs for an hour
    assert not (tmp_path / "strawpot.lock").exists()


def test_install_against_a_registry_that_never_answers_ends_with_exit_6_within_its_deadline(tmp_path: Path) -> None:
    with silent_server() as url:
        start = time.monotonic()
        result = run("install", "skill", "anything", cwd=tmp_path,
                     env={"STRAWPOT_REGISTRY_URL": url, "STRAWPOT_HTTP_TIMEOUT": "1.5"})
        took = time.monotonic() - start
    assert_one_line_failure(result, 6, "timed out")
    assert took < 1.5 + 15, took


def test_the_command_deadline_comes_from_the_project_or_the_environment(tmp_path: Path) -> None:
    (tmp_path / "strawpot.toml").write_text('[registry]\ndeadline = 1.5\n[skills]\nanything = "*"\n')
    with trickling_server(interval=0.3) as url:
        start = time.monotonic()
        result = run("install", cwd=tmp_path, env={"STRAWPOT_REGISTRY_URL": url})
        took = time.monotonic() - start
    assert_one_line_failure(result, 6, "the deadline for all registry requests")
    assert "STRAWPOT_REGISTRY_DEADLINE" in result.stderr
    assert took < 1.5 + 15, took


@pytest.mark.parametrize(("env", "needle"), [
    ({"STRAWPOT_HTTP_TIMEOUT": "soon"}, "STRAWPOT_HTTP_TIMEOUT: registry.timeout must be a number"),
    ({"STRAWPOT_REGISTRY_DEADLINE": "-1"}, "STRAWPOT_REGISTRY_DEADLINE: registry.deadline must be at least"),
])
def test_a_bad_time_limit_is_a_usage_error(tmp_path: Path, env: dict[str, str], needle: str) -> None:
    result = run("install", "skill", "x", cwd=tmp_path, env={"STRAWPOT_REGISTRY_URL": "http://127.0.0.1:9", **env})
    assert_one_line_failure(result, 2, needle)


# -- Finding 3: nothing refused stays in the cache --------------------------------------------------------------


def test_an_archive_declared_over_the_limit_is_refused_before_download_and_not_cached(tmp_path: Path) -> None:
    archive = build_archive({"SKILL.md": b"---\nname: big\ndescription: d\n---\n"})
    routes = {
        "/api/v1/skills/big/versions": (200, versions_body("big", archive, size=200 * 1024 * 1024)),
        "/api/v1/skills/big/versions/1.0.0/archive": (200, archive),
    }
    with scripted_server(routes) as url:
        result = run("install", "skill", "big", "--skip-tools", cwd=tmp_path, env={"STRAWPOT_REGISTRY_URL": url})
    assert_one_line_failure(result, 1, "over the limit", "refused before downloading")
    assert not any(p.startswith("archives-v1/") for p in files_under(tmp_path / ".cache"))
    assert not (tmp_path / ".strawpot" / "skills").exists()


def test_an_archive_refused_after_download_does_not_stay_in_the_cache(tmp_path: Path) -> None:
    info = tarfile.TarInfo("././@PaxHeader")
    info.size, info.type = 20 * 1024 * 1024, tarfile.XHDTYPE
    bomb = gzip.compress(info.tobuf(format=tarfile.USTAR_FORMAT)) + gzip.compress(b"\0" * (1 << 20)) * 20
    routes = {
        "/api/v1/skills/bomb/versions": (200, versions_body("bomb", bomb)),
        "/api/v1/skills/bomb/versions/1.0.0/archive": (200, bomb),
    }
    with scripted_server(routes) as url:
        result = run("install", "skill", "bomb", "--skip-tools", cwd=tmp_path, env={"STRAWPOT_REGISTRY_URL": url})
    assert_one_line_failure(result, 5, "refused the archive of skill bomb 1.0.0", "pax header")
    assert not any(p.startswith("archives-v1/") for p in files_under(tmp_path / ".cache"))
    assert not (tmp_path / ".strawpot" / "skills").exists()


# -- Finding 7: registry-supplied names are values ----------------------------------------------------------------


@pytest.mark.parametrize("bad", ["../../etc", "/etc/passwd", "a/b", "Evil", "x" * 300])
def test_a_dependency_name_that_is_not_a_slug_is_one_line_and_exit_1(tmp_path: Path, bad: str) -> None:
    archive = build_archive({"SKILL.md": b"---\nname: top\ndescription: d\n---\n"})
    routes = {"/api/v1/skills/top/versions": (200, versions_body("top", archive, deps=[bad]))}
    with scripted_server(routes) as url:
        result = run("install", "skill", "top", cwd=tmp_path, env={"STRAWPOT_REGISTRY_URL": url})
    assert_one_line_failure(result, 1, "skills/top/versions", bad[:64])
    assert not (tmp_path / ".strawpot" / "skills").exists()
    assert not (tmp_path / "etc").exists() and not (tmp_path / "strawpot.lock").exists()


@pytest.mark.parametrize("body", [b'{"a":' * 50_000 + b"1" + b"}" * 50_000, b"[" * 100_000 + b"]" * 100_000,
                                  b'{"kind": "skill", "slug": "top", "versions": [' + b"[" * 40 + b"]" * 40 + b"]}"])
def test_nested_json_from_the_registry_is_one_line_and_exit_1(tmp_path: Path, body: bytes) -> None:
    with scripted_server({"/api/v1/skills/top/versions": (200, body)}) as url:
        result = run("install", "skill", "top", cwd=tmp_path, env={"STRAWPOT_REGISTRY_URL": url})
    assert_one_line_failure(result, 1, "skills/top/versions")
    assert not (tmp_path / "strawpot.lock").exists()


def test_a_default_agent_that_is_not_a_slug_is_refused(tmp_path: Path) -> None:
    archive = build_archive({"ROLE.md": b"---\nname: r\ndescription: d\n---\n"})
    entry = json.loads(versions_body("r", archive))
    entry["kind"] = "role"
    entry["versions"][0]["defaultAgent"] = "../../bin"
    with scripted_server({"/api/v1/roles/r/versions": (200, json.dumps(entry).encode())}) as url:
        result = run("install", "role", "r", cwd=tmp_path, env={"STRAWPOT_REGISTRY_URL": url})
    assert_one_line_failure(result, 1, "defaultAgent '../../bin' is not a valid package name")


# -- Finding 7: links out of the project ------------------------------------------------------------------------


@pytest.mark.parametrize("link", [".strawpot", ".strawpot/skills", ".strawpot/skills/code-style", ".strawpot/.lock"])
@pytest.mark.parametrize("command", [["install", "skill", "code-style"], ["install"], ["sync"], ["lock"],
                                     ["uninstall", "skill", "code-style"]])
def test_a_tree_with_a_link_out_of_the_project_is_refused_before_anything_is_written(
    tmp_path: Path, link: str, command: list[str]
) -> None:
    project, outside = tmp_path / "project", tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    (project / "strawpot.toml").write_text('[skills]\ncode-style = "*"\n')
    path = project / link
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(outside, target_is_directory=True)
    before = {p.as_posix() for p in project.rglob("*")}
    result = run(*command, cwd=project, env={"STRAWPOT_REGISTRY_URL": "http://127.0.0.1:9"})
    assert_one_line_failure(result, 1, str(path), "outside", "refused")
    assert list(outside.iterdir()) == []
    assert {p.as_posix() for p in project.rglob("*")} == before
    assert (project / "strawpot.toml").read_text() == '[skills]\ncode-style = "*"\n'


def test_a_link_that_stays_inside_the_project_is_allowed(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "vendor" / "tree").mkdir(parents=True)
    (project / ".strawpot").symlink_to(project / "vendor" / "tree", target_is_directory=True)
    (project / "strawpot.toml").write_text("")  # a project (lock outside one stops before looking at the tree)
    result = run("lock", "--project", str(project), cwd=tmp_path, env={"STRAWPOT_REGISTRY_URL": "http://127.0.0.1:9"})
    assert "outside" not in result.stderr and result.returncode == 0, result.stderr


# -- Finding 7: manifest and lock parse errors ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('[skills]\nb = "^1"\nb = "^2"\n', ":3:"),
        ('[skills]\na = "1"\n[skills]\nb = "2"\n', ":3:"),
        ('[skills]\na.b = "1"\na = "2"\n', ":3:"),
        ('[skills]\na = "\\uD800"\n', ":2:"),
        ("a = " + "[" * 3000 + "]" * 3000 + "\n", ":1:"),
        ('[skills]\na = "x"\n\n\n[roles\n', ":5:"),
        ('[skills]\na = "x"\nb = "\xff"\n'.encode("latin-1").decode("latin-1"), None),
    ],
)
@pytest.mark.parametrize("name", ["strawpot.toml", "strawpot.lock"])
def test_every_toml_parse_error_is_one_line_with_file_and_line(tmp_path: Path, text: str, where: str | None,
                                                                 name: str) -> None:
    if where is None:  # bytes that are not UTF-8, on line 3
        (tmp_path / name).write_bytes(b'[skills]\na = "x"\nb = "\xff"\n')
        where = ":3:"
    else:
        (tmp_path / name).write_text(text, encoding="utf-8")
    if name == "strawpot.lock":
        (tmp_path / "strawpot.toml").write_text("")
    result = run("install", "--skip-tools", cwd=tmp_path, env={"STRAWPOT_REGISTRY_URL": "http://127.0.0.1:9"})
    assert_one_line_failure(result, 2, f"{tmp_path / name}{where}")
    assert not (tmp_path / ".strawpot").exists()
