"""Hostile input on the command line as a whole: every expected failure is one line and a documented exit
code, never a traceback, and nothing is written before the refusal."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from tests._cli import strawpot, strawpot_here

SHA = "a" * 64


def run(*args: str, cwd: Path, env: dict[str, str] | None = None, input: str | None = None,
        timeout: float | None = None) -> subprocess.CompletedProcess[str]:
    """The command in a user's own folders: in this process (what it says, its exit code, what it writes), or a
    real subprocess where the test is about the process (its stdin, a `timeout` it must finish within)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("STRAWPOT_", "STRAWHUB_"))}
    base.update(HOME=str(cwd), STRAWPOT_CONFIG_DIR=str(cwd / ".config"), STRAWPOT_CACHE_DIR=str(cwd / ".cache"),
                STRAWPOT_HOME=str(cwd / ".global"), STRAWPOT_REGISTRY_URL="http://127.0.0.1:9", NO_COLOR="1",
                COLUMNS="200")
    if input is None and timeout is None:
        return strawpot_here(*args, cwd=cwd, env=base, extra_env=env)
    return strawpot(*args, cwd=cwd, env=base, extra_env=env, input=input, timeout=timeout or 60)


def assert_clean_failure(result: subprocess.CompletedProcess[str], code: int, *needles: str) -> None:
    out = result.stdout + result.stderr
    assert "Traceback" not in out, out
    assert result.returncode == code, out
    assert "error:" in result.stderr, out
    for needle in needles:
        assert needle in out, out


def snapshot(root: Path) -> dict[str, bytes | None]:
    return {p.relative_to(root).as_posix(): (p.read_bytes() if p.is_file() else None) for p in root.rglob("*")}


# -- strawpot.lock is input: a tampered one is refused before the tree is touched -------------------------------

_LOCK = (
    'version = 1\nmanifest-hash = "sha256:x"\n\n[[package]]\nkind = "skill"\nname = "{name}"\nversion = "1.0.0"\n'
    'source = "http://127.0.0.1:9"\narchive = {{ sha256 = "{sha}", size = 10 }}\ndependencies = []\n'
    'files = [\n  {{ path = "{path}", sha256 = "{sha}", size = 3, executable = false }},\n]\n'
)


@pytest.mark.parametrize(
    ("name", "path", "message"),
    [
        ("x", "../../x", "files[0].path"),
        ("x", "/etc/passwd", "files[0].path: absolute path"),
        ("../../../evil", "SKILL.md", "is not a valid slug"),
        ("a/b", "SKILL.md", "is not a valid slug"),
    ],
)
@pytest.mark.parametrize("command", [["install", "--frozen"], ["sync", "--frozen"], ["install"], ["verify"],
                                     ["tree"], ["list"], ["outdated"]])
def test_a_lock_whose_paths_escape_is_refused(tmp_path: Path, name: str, path: str, message: str,
                                              command: list[str]) -> None:
    project = tmp_path / "p"
    project.mkdir()
    (project / "strawpot.toml").write_text('[skills]\nx = "*"\n')
    (project / "strawpot.lock").write_text(_LOCK.format(name=name, path=path, sha=SHA))
    before = snapshot(tmp_path)
    skip_tools = ["--skip-tools"] if command[0] in ("install", "sync") else []
    result = run(*command, *skip_tools, cwd=project)
    assert_clean_failure(result, 2, "malformed lockfile", message)
    written = {k for k in snapshot(tmp_path) if k not in before}
    # at most the project's (empty) tree folder and its advisory lock file; never a package or anything outside
    assert written <= {"p/.strawpot", "p/.strawpot/.lock"}, written
    assert hashlib.sha256((project / "strawpot.lock").read_bytes()).hexdigest() == hashlib.sha256(
        _LOCK.format(name=name, path=path, sha=SHA).encode()).hexdigest()


# -- strawpot.toml ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[skills]\n"../x" = "*"\n', "'../x' is not a valid slug"),
        ('[registry]\nurl = 3\n[skills]\nx = "*"\n', "registry.url must be a string"),
        ("[skills]\nx = 3\n", "skills.x must be a version specifier"),
        ('roles = "a"\n', "[roles] must be a table"),
        ("\x00\x01", "invalid TOML"),
    ],
)
@pytest.mark.parametrize("command", [["lock"], ["install"], ["sync"], ["update"]])
def test_a_bad_manifest_is_refused_before_any_write(tmp_path: Path, text: str, message: str,
                                                    command: list[str]) -> None:
    (tmp_path / "strawpot.toml").write_text(text)
    result = run(*command, cwd=tmp_path)
    assert_clean_failure(result, 2, message)
    assert not (tmp_path / "strawpot.lock").exists()
    assert (tmp_path / "strawpot.toml").read_text() == text


# -- the command line ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [["lock"], ["install"], ["sync"], ["tree"], ["verify"], ["list"]])
def test_project_that_does_not_exist_is_a_usage_error_and_is_not_created(tmp_path: Path, command: list[str]) -> None:
    missing = tmp_path / "typo" / "deeper"
    result = run(*command, "--project", str(missing), cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "does not exist" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "typo").exists()


@pytest.mark.parametrize("command", [["lock"], ["install"], ["tree"]])
def test_project_that_is_a_file_is_a_usage_error(tmp_path: Path, command: list[str]) -> None:
    (tmp_path / "f").write_text("x")
    result = run(*command, "--project", str(tmp_path / "f"), cwd=tmp_path)
    assert result.returncode == 2 and "is a file" in result.stderr, result.stderr


@pytest.mark.parametrize("slug", ["../x", "a/b", "X"])
def test_info_refuses_a_bad_slug_without_asking_the_registry(tmp_path: Path, slug: str) -> None:
    result = run("info", "skill", slug, cwd=tmp_path)  # the registry URL is a closed port: no exit 6
    assert_clean_failure(result, 2, "is not a valid slug")


# -- a registry that answers nonsense --------------------------------------------------------------------------


class _NonsenseRegistry:
    """A loopback HTTP server answering every request with 200 and a JSON object of the wrong shapes."""

    BODY = b'{"items": "x", "versions": 3, "results": "x", "slug": 5, "latestVersion": "x", "handle": 3}'

    def __enter__(self) -> str:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        body = self.BODY

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                return None

            def do_GET(self) -> None:
                if self.command == "POST":
                    self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_POST = do_GET

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (["search", "x"], "unexpected search answer"),
        (["whoami"], "answered whoami without a user handle"),
        (["yank", "skill", "x", "1.0.0"], "did not confirm that skill x 1.0.0 is yanked"),
        (["publish", "{fixtures}/skills/git-workflow"], "did not confirm skill git-workflow"),
    ],
)
def test_a_registry_answer_that_confirms_nothing_is_not_a_success(tmp_path: Path, command: list[str],
                                                                   message: str) -> None:
    fixtures = str(Path(__file__).resolve().parents[2] / "fixtures")
    with _NonsenseRegistry() as url:
        result = run(*(a.format(fixtures=fixtures) for a in command), cwd=tmp_path,
                     env={"STRAWPOT_REGISTRY_URL": url, "STRAWPOT_TOKEN": "sh_" + "0" * 40})
    assert_clean_failure(result, 1, message)
    assert "yanked skill 5" not in result.stdout and "published" not in result.stdout


# -- login and the config file ---------------------------------------------------------------------------------


def test_login_with_no_terminal_and_empty_stdin_is_a_usage_error(tmp_path: Path) -> None:
    result = run("login", "--registry", "http://127.0.0.1:9", cwd=tmp_path, input="")
    assert_clean_failure(result, 2, "no token given", "--token-stdin")
    assert not (tmp_path / ".config" / "config.toml").exists()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('registry = "x"\n', "[registry] must be a table"),
        ("[registry]\nurl = 3\n", "config.toml:2: registry.url must be a string, not 3"),
        ("tokens = 3\n", "[tokens] must be a table"),
        ('[tokens]\n"http://127.0.0.1:9" = 5\n', "[tokens] must be a table"),
    ],
)
@pytest.mark.parametrize("command", [["config"], ["whoami"], ["logout"], ["search", "x"], ["lock"]])
def test_a_config_file_of_the_wrong_shape_is_one_line(tmp_path: Path, text: str, message: str,
                                                      command: list[str]) -> None:
    (tmp_path / ".config").mkdir()
    (tmp_path / ".config" / "config.toml").write_text(text)
    (tmp_path / "strawpot.toml").write_text('[skills]\nx = "*"\n')
    result = run(*command, cwd=tmp_path, env={"STRAWPOT_REGISTRY_URL": ""})
    assert_clean_failure(result, 2, message)
    assert (tmp_path / ".config" / "config.toml").read_text() == text


def test_a_config_file_that_is_a_folder_is_one_line(tmp_path: Path) -> None:
    (tmp_path / ".config" / "config.toml").mkdir(parents=True)
    result = run("config", cwd=tmp_path, env={"STRAWPOT_REGISTRY_URL": ""})
    assert_clean_failure(result, 2, "config.toml: cannot read it")


# -- the file system says no -----------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [["install"], ["sync"], ["uninstall", "skill", "x"], ["install", "skill", "y"]])
def test_a_file_where_the_tree_folder_must_be_is_one_line(tmp_path: Path, command: list[str]) -> None:
    (tmp_path / "strawpot.toml").write_text('[skills]\nx = "*"\n')
    (tmp_path / ".strawpot").write_text("not a folder")
    result = run(*command, cwd=tmp_path)
    assert_clean_failure(result, 1, f"File exists: {tmp_path / '.strawpot'}")
    assert (tmp_path / ".strawpot").read_text() == "not a folder"
    assert (tmp_path / "strawpot.toml").read_text() == '[skills]\nx = "*"\n'


@pytest.mark.parametrize("command", [["verify"], ["list"]])
def test_a_version_file_that_is_a_folder_means_not_installed(tmp_path: Path, command: list[str]) -> None:
    (tmp_path / "strawpot.lock").write_text(_LOCK.format(name="x", path="SKILL.md", sha=SHA))
    (tmp_path / ".strawpot" / "skills" / "x" / ".version").mkdir(parents=True)
    result = run(*command, cwd=tmp_path)
    out = result.stdout + result.stderr
    assert "Traceback" not in out
    assert result.returncode == (5 if command == ["verify"] else 0), out
    expected = "skill x: not installed (lock has 1.0.0)" if command == ["verify"] else "lock has 1.0.0"
    assert expected in out, out


def test_the_hint_for_a_broken_lock_is_one_that_works(tmp_path: Path) -> None:
    (tmp_path / "strawpot.toml").write_text("")
    (tmp_path / "strawpot.lock").write_text("version = 1\npackage = 3\n")
    broken = run("lock", cwd=tmp_path)
    assert_clean_failure(broken, 2, "malformed lockfile", "move it aside and run `strawpot lock`")
    (tmp_path / "strawpot.lock").rename(tmp_path / "strawpot.lock.bad")
    assert run("lock", cwd=tmp_path).returncode == 0  # what the hint says does work
    assert "manifest-hash" in (tmp_path / "strawpot.lock").read_text()


@pytest.mark.parametrize("command", [["verify"], ["tree"], ["why", "skill", "x"], ["outdated"],
                                     ["install", "--frozen"], ["start", "--headless", "--task", "echo:x"]])
def test_a_missing_lock_is_a_usage_error_everywhere_and_writes_nothing(tmp_path: Path, command: list[str]) -> None:
    (tmp_path / "strawpot.toml").write_text('[skills]\ngit-workflow = "*"\n')
    before = snapshot(tmp_path)
    result = run(*command, cwd=tmp_path)
    assert_clean_failure(result, 2, "strawpot.lock")
    assert snapshot(tmp_path) == before


def test_publish_refuses_a_fifo_without_blocking(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "SKILL.md").write_text("---\nname: pkg\ndescription: d\nversion: 1.0.0\n---\nbody\n")
    os.mkfifo(package / "notes.md")
    result = run("validate", str(package), cwd=tmp_path, timeout=20)
    assert_clean_failure(result, 2, "notes.md", "links and special files are not allowed")


@pytest.mark.parametrize("command", [["install"], ["sync"], ["lock"], ["update", "--all"], ["install", "skill", "x"]])
@pytest.mark.parametrize("broken", ["strawpot.toml", "strawpot.lock"])
def test_a_malformed_manifest_or_lock_is_refused_before_anything_is_written(
    tmp_path: Path, command: list[str], broken: str
) -> None:
    (tmp_path / "strawpot.toml").write_text('[skills]\ngit-workflow = "*"\n')
    (tmp_path / broken).write_text("this is [not toml\n")
    before = snapshot(tmp_path)
    result = run(*command, cwd=tmp_path)
    assert_clean_failure(result, 2, broken)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("command", ["install", "sync"])
def test_locked_and_frozen_together_are_a_usage_error(tmp_path: Path, command: str) -> None:
    (tmp_path / "strawpot.toml").write_text('[skills]\nx = "*"\n')
    before = snapshot(tmp_path)
    assert_clean_failure(run(command, "--locked", "--frozen", cwd=tmp_path), 2, "--locked and --frozen cannot be used together")
    assert snapshot(tmp_path) == before
