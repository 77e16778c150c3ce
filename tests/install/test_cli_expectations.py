"""What a uv or cargo user expects of the command line (issue 13), against a live registry: project discovery, file
modes, honest answers when something is off. Commands run through main() in this process (tests/_cli.strawpot_here)
but where stdin or the process itself (Ctrl-C, a server) is the subject: there a real subprocess."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
from pathlib import Path
from typing import Any

from tests._cli import STRAWPOT, strawpot, strawpot_here


def run(*args: str, cwd: Path, url: str, env: dict[str, str] | None = None,
        input: str | None = None) -> subprocess.CompletedProcess[str]:
    home = cwd.parent / "home"
    base = {k: v for k, v in os.environ.items() if not k.startswith(("STRAWPOT_", "STRAWHUB_"))}
    base.update(HOME=str(home), STRAWPOT_CONFIG_DIR=str(home / "config"), STRAWPOT_CACHE_DIR=str(home / "cache"),
                STRAWPOT_HOME=str(home / "global"), STRAWPOT_REGISTRY_URL=url, NO_COLOR="1", COLUMNS="200")
    if input is None:
        return strawpot_here(*args, cwd=cwd, env=base, extra_env=env)
    return strawpot(*args, cwd=cwd, env=base, extra_env=env, input=input, timeout=120)


def new_project(tmp_path: Path) -> Path:
    folder = tmp_path / "p"
    folder.mkdir()
    return folder


# -- finding 2: the nearest ancestor holding strawpot.toml is the project ---------------------------------------

def test_a_subfolder_of_a_project_works_on_that_project(tmp_path: Path, registry: Any) -> None:
    project = new_project(tmp_path)
    first = run("install", "skill", "code-style", "--skip-tools", cwd=project, url=registry.url)
    assert first.returncode == 0, first.stderr
    deeper = project / "sub" / "deeper"
    deeper.mkdir(parents=True)

    tree = run("tree", cwd=deeper, url=registry.url)
    assert tree.returncode == 0, tree.stderr
    assert "code-style" in tree.stdout

    added = run("install", "skill", "git-workflow", "--skip-tools", cwd=deeper, url=registry.url)
    assert added.returncode == 0, added.stderr
    assert sorted(p.name for p in deeper.iterdir()) == []
    assert "git-workflow" in (project / "strawpot.toml").read_text()
    assert "new project" not in added.stderr


def test_project_overrides_discovery(tmp_path: Path, registry: Any) -> None:
    project = new_project(tmp_path)
    (project / "strawpot.toml").write_text("[skills]\n")
    other = project / "other"
    other.mkdir()
    result = run("install", "skill", "code-style", "--skip-tools", "--project", str(other), cwd=project,
                 url=registry.url)
    assert result.returncode == 0, result.stderr
    assert "code-style" in (other / "strawpot.toml").read_text()
    assert "code-style" not in (project / "strawpot.toml").read_text()


def test_a_new_project_is_announced(tmp_path: Path, registry: Any) -> None:
    project = new_project(tmp_path)
    result = run("install", "skill", "code-style", "--skip-tools", cwd=project, url=registry.url)
    assert result.returncode == 0, result.stderr
    assert f"no strawpot.toml in {project.resolve()} or any folder above it, so this is a new project" \
        in result.stderr


def test_a_typo_makes_no_project_and_says_none(tmp_path: Path, registry: Any) -> None:
    project = new_project(tmp_path)
    result = run("install", "skill", "git-worflow", "--skip-tools", cwd=project, url=registry.url)
    assert result.returncode != 0 and "git-workflow" in result.stderr, result.stderr  # the suggestion
    assert "new project" not in result.stderr, result.stderr
    assert sorted(p.name for p in project.iterdir()) == []


def test_a_bare_install_outside_a_project_writes_nothing(tmp_path: Path, registry: Any) -> None:
    project = new_project(tmp_path)
    for extra in ([], ["--project", str(project)]):
        result = run("install", *extra, cwd=project, url=registry.url)
        assert result.returncode == 2, result.stderr
        assert result.stderr.startswith(f"error: no strawpot.toml or strawpot.lock in {project.resolve()}")
        assert "strawpot init" in result.stderr
        assert sorted(p.name for p in project.iterdir()) == []


# -- finding 3: strawpot.toml and strawpot.lock keep the mode the user gave them --------------------------------

def test_file_modes_are_kept(tmp_path: Path, registry: Any) -> None:
    project = new_project(tmp_path)
    assert run("install", "skill", "code-style", "--skip-tools", cwd=project, url=registry.url).returncode == 0
    for name in ("strawpot.toml", "strawpot.lock"):  # a new project's files are readable by others (umask 022)
        assert stat.S_IMODE((project / name).stat().st_mode) & 0o044 == 0o044, name
    os.chmod(project / "strawpot.toml", 0o640)
    os.chmod(project / "strawpot.lock", 0o664)
    result = run("install", "skill", "git-workflow", "--skip-tools", cwd=project, url=registry.url)
    assert result.returncode == 0, result.stderr
    assert stat.S_IMODE((project / "strawpot.toml").stat().st_mode) == 0o640
    assert stat.S_IMODE((project / "strawpot.lock").stat().st_mode) == 0o664


# -- finding 11: a failed first install leaves no empty .strawpot/ ------------------------------------------------

def test_a_failed_first_install_leaves_no_tree(tmp_path: Path, registry: Any) -> None:
    project = new_project(tmp_path)
    result = run("install", "skill", "no-such-skill-anywhere", "--skip-tools", cwd=project, url=registry.url)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert not (project / ".strawpot").exists()
    assert not (project / "strawpot.toml").exists()


def _json(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(result.stdout)
    return data


# -- finding 1: outdated with the registry down is an error, never "all newest" ---------------------------------

def test_outdated_with_the_registry_down_is_exit_6(tmp_path: Path, registry: Any) -> None:
    project = new_project(tmp_path)
    assert run("install", "skill", "code-style", "--skip-tools", cwd=project, url=registry.url).returncode == 0
    for extra in ([], ["--json"]):
        result = run("outdated", *extra, cwd=project, url="http://127.0.0.1:9")
        assert result.returncode == 6, result.stdout + result.stderr
        assert "newest published" not in result.stderr
        assert "registry unreachable" in result.stderr


def test_outdated_marks_a_yanked_lock_and_exit_code_fails(tmp_path: Path, registry: Any) -> None:
    slug = registry.unique("yankme")
    registry.publish("skill", slug, "2.0.0")
    registry.publish("skill", slug, "2.1.0")
    project = new_project(tmp_path)
    assert run("install", "skill", slug, "--skip-tools", cwd=project, url=registry.url).returncode == 0
    clean = run("outdated", "--exit-code", cwd=project, url=registry.url)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    registry.client.yank("skill", slug, "2.1.0")
    result = run("outdated", "--exit-code", cwd=project, url=registry.url)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "2.1.0 (yanked)" in result.stdout
    assert "was yanked" in result.stderr
    data = _json(run("outdated", "--json", cwd=project, url=registry.url))
    assert data["packages"][0]["locked_yanked"] is True


# -- finding 4: update with a specifier moves the requirement ----------------------------------------------------

def test_update_with_a_specifier_moves_the_requirement(tmp_path: Path, registry: Any) -> None:
    slug = registry.unique("alpha")
    registry.publish("skill", slug, "1.0.0")
    registry.publish("skill", slug, "2.0.0")
    project = new_project(tmp_path)
    assert run("install", "skill", f"{slug}@^1", "--skip-tools", cwd=project, url=registry.url).returncode == 0
    result = run("update", "skill", f"{slug}@^2", "--skip-tools", cwd=project, url=registry.url)
    assert result.returncode == 0, result.stderr
    assert "Already up to date" not in result.stdout + result.stderr
    assert f'{slug} = "^2"' in (project / "strawpot.toml").read_text()
    assert 'version = "2.0.0"' in (project / "strawpot.lock").read_text()


# -- finding 5: a mistyped table is refused --------------------------------------------------------------------

def test_a_mistyped_table_is_refused(tmp_path: Path, registry: Any) -> None:
    project = new_project(tmp_path)
    for table, said in (("skill", "unknown table [skill]; did you mean [skills]?"),
                        ("rolse", "unknown table [rolse]; did you mean [roles]?"),
                        ("memory", "[memory] has no setting 'code-style'; did you mean [memories]?")):
        (project / "strawpot.toml").write_text(f'[{table}]\ncode-style = "*"\n')
        result = run("install", "--skip-tools", cwd=project, url=registry.url)
        assert result.returncode == 2, result.stdout + result.stderr
        assert said in result.stderr
    assert not (project / "strawpot.lock").exists()


# -- finding 6: uninstall's hint names uninstall; add/remove are the names uv users type ------------------------

def test_uninstall_hint_and_add_remove_aliases(tmp_path: Path, registry: Any) -> None:
    project = new_project(tmp_path)
    bad = run("uninstall", "beta", cwd=project, url=registry.url)
    assert bad.returncode == 2
    assert "strawpot uninstall skill beta" in bad.stderr
    assert "strawpot install" not in bad.stderr
    assert run("add", "skill", "code-style", "--skip-tools", cwd=project, url=registry.url).returncode == 0
    assert "code-style" in (project / "strawpot.toml").read_text()
    dry = run("uninstall", "skill", "code-style", "--dry-run", cwd=project, url=registry.url)
    assert dry.returncode == 0, dry.stderr
    assert "code-style" in (project / "strawpot.toml").read_text()
    assert (project / ".strawpot" / "skills" / "code-style").is_dir()
    assert run("remove", "skill", "code-style", cwd=project, url=registry.url).returncode == 0
    assert "code-style" not in (project / "strawpot.toml").read_text()
    assert run("add", cwd=project, url=registry.url).returncode == 2


# -- finding 11: the smaller ones ------------------------------------------------------------------------------

def test_a_url_that_is_not_http_is_a_usage_error(tmp_path: Path) -> None:
    project = new_project(tmp_path)
    for args, env in ((["install", "skill", "x", "--registry", "htp://host"], {}),
                      (["search", "abc"], {"STRAWPOT_REGISTRY_URL": "htp://host"})):
        result = run(*args, cwd=project, url="http://127.0.0.1:9", env=env)
        assert result.returncode == 2, result.stdout + result.stderr
        assert "'htp://host'" in result.stderr and "is not an http:// or https:// URL" in result.stderr
    assert sorted(p.name for p in project.iterdir()) == []


def test_offline_does_not_claim_to_resolve_against_the_registry(tmp_path: Path, registry: Any) -> None:
    project = new_project(tmp_path)
    assert run("install", "skill", "code-style", "--skip-tools", cwd=project, url=registry.url).returncode == 0
    (project / "strawpot.lock").unlink()
    result = run("install", "--offline", "--skip-tools", cwd=project, url=registry.url)
    assert result.returncode == 0, result.stderr
    assert "Resolving against" not in result.stderr
    assert "Resolving from the cache (offline)" in result.stderr


def test_tables_piped_to_a_file_do_not_wrap(tmp_path: Path, registry: Any) -> None:
    slug = registry.unique("a-long-package-name-so-that-the-row-is-wider-than-eighty-cols")
    registry.publish("skill", slug, "1.0.0")
    registry.publish("skill", slug, "1.1.0")
    project = new_project(tmp_path)
    assert run("install", "skill", f"{slug}@~1.0.0", "--skip-tools", cwd=project, url=registry.url).returncode == 0
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS" and not k.startswith("STRAWPOT_")}
    env.update(HOME=str(tmp_path / "home"), STRAWPOT_CACHE_DIR=str(tmp_path / "home" / "c"),
               STRAWPOT_CONFIG_DIR=str(tmp_path / "home" / "cfg"), STRAWPOT_REGISTRY_URL=registry.url, NO_COLOR="1")
    result = strawpot("outdated", cwd=project, env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    row = next(line for line in result.stdout.splitlines() if slug in line)
    assert "1.0.0" in row and "1.1.0" in row, result.stdout


def test_registry_serve_stops_cleanly_on_ctrl_c_and_logs_requests_only_when_asked(tmp_path: Path) -> None:
    import re
    import signal
    import time

    import httpx

    for quiet in (True, False):  # quiet by default (a tour runs it in the background of its terminal)
        log = tmp_path / f"serve-{quiet}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [*STRAWPOT, "registry", "serve", "--port", "0", "--data", str(tmp_path / "data"),
                 *([] if quiet else ["--access-log"])], stdout=out, stderr=out, stdin=subprocess.DEVNULL,
                env={**os.environ, "PYTHONUNBUFFERED": "1"})
        try:
            deadline = time.monotonic() + 30
            while not (match := re.search(r"listening on (http://\S+)", log.read_text())):
                assert process.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.05)
            assert httpx.get(f"{match.group(1)}/api/v1/skills", timeout=10).status_code == 200
            deadline = time.monotonic() + 10
            while not quiet and "GET /api/v1/skills" not in log.read_text():
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.05)
            process.send_signal(signal.SIGINT)
            code = process.wait(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=10)
        text = log.read_text()
        assert code == 0, text
        assert "error" not in text and "Traceback" not in text, text
        assert ('"GET /api/v1/skills HTTP/1.1" 200' in text) is (not quiet), text


def test_tree_list_verify_say_when_the_manifest_is_ahead_of_the_lock(tmp_path: Path, registry: Any) -> None:
    project = new_project(tmp_path)
    assert run("install", "skill", "code-style", "--skip-tools", cwd=project, url=registry.url).returncode == 0
    for command in ("tree", "list", "verify"):
        quiet = run(command, cwd=project, url=registry.url)
        assert quiet.returncode == 0 and "changed since strawpot.lock" not in quiet.stderr, quiet.stderr
    with (project / "strawpot.toml").open("a") as fh:
        fh.write('git-workflow = "*"\n')
    for command in ("tree", "list", "verify"):
        result = run(command, cwd=project, url=registry.url)
        assert result.returncode == 0, result.stderr
        assert "strawpot.toml changed since strawpot.lock was written" in result.stderr, command


# -- finding 9: hints that point somewhere useful ---------------------------------------------------------------

def test_install_tools_does_not_ask_to_rerun_with_install_tools(tmp_path: Path, registry: Any) -> None:
    slug = registry.unique("needs-tool")
    tool = "strawpot-test-tool-that-is-never-on-path"
    registry.publish("agent", slug, "1.0.0", files={"bin/run": b"#!/bin/sh\n"}, extra={
        "bin": {"linux": "bin/run", "macos": "bin/run"},
        "tools": {tool: {"description": "never there", "install": {"linux": "true", "macos": "true"}}}})
    project = new_project(tmp_path)
    plain = run("install", "agent", slug, cwd=project, url=registry.url)
    assert plain.returncode == 0, plain.stderr
    assert "rerun with --install-tools" in plain.stderr
    assert run("trust", f"agent:{slug}", cwd=project, url=registry.url).returncode == 0
    (project / "strawpot.lock").unlink()
    result = run("install", "--install-tools", cwd=project, url=registry.url)
    assert result.returncode == 0, result.stderr
    assert "$ true" in result.stderr
    assert "rerun with --install-tools" not in result.stderr
    assert "the install commands ran" in result.stderr


def test_start_with_a_mistyped_role_suggests_the_installed_one(tmp_path: Path, registry: Any) -> None:
    project = new_project(tmp_path)
    assert run("install", "role", "lead", "--skip-tools", cwd=project, url=registry.url).returncode == 0
    result = run("start", "--role", "leed", "--headless", "--task", "x", cwd=project, url=registry.url)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "did you mean `--role lead`" in result.stderr
    assert "strawpot install role leed" not in result.stderr


# -- finding 7: login without a terminal reads the token from stdin ---------------------------------------------

def test_login_without_a_terminal_reads_stdin(tmp_path: Path, registry: Any) -> None:
    project = new_project(tmp_path)
    result = run("login", cwd=project, url=registry.url, input=registry.live.token + "\n")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "logged in to" in result.stdout and "as admin" in result.stdout
    assert "Warning" not in result.stderr and "getpass" not in result.stderr.lower(), result.stderr
    empty = run("login", cwd=project, url=registry.url, input="")
    assert empty.returncode == 2 and "no token given" in empty.stderr


# -- finding 8: info and search tell what a user needs -----------------------------------------------------------

def test_info_shows_owner_tools_params_yank_and_takes_slug_at_version(tmp_path: Path, registry: Any) -> None:
    project = new_project(tmp_path)
    info = run("info", "agent", "stub-agent", cwd=project, url=registry.url)
    assert info.returncode == 0, info.stderr
    assert "owner: admin" in info.stdout
    assert "tools: python3" in info.stdout
    assert "params: python, greeting" in info.stdout
    slug = registry.unique("yanked-info")
    registry.publish("skill", slug, "1.0.0")
    registry.publish("skill", slug, "1.1.0")
    registry.client.yank("skill", slug, "1.0.0")
    at = run("info", "skill", f"{slug}@1.0.0", cwd=project, url=registry.url)
    assert at.returncode == 0, at.stderr
    assert f"skill {slug} 1.0.0 (yanked)" in at.stdout


def test_search_has_a_version_column_and_an_empty_query_is_usage(tmp_path: Path, registry: Any) -> None:
    project = new_project(tmp_path)
    result = run("search", "code-style", cwd=project, url=registry.url)
    assert result.returncode == 0, result.stderr
    header = result.stdout.splitlines()[0].split()
    assert header[:3] == ["kind", "slug", "version"]
    row = next(line.split() for line in result.stdout.splitlines() if "code-style" in line.split())
    assert row[2] == "1.0.0"
    assert _json(run("search", "code-style", "--json", cwd=project, url=registry.url))["results"][0]["version"]
    empty = run("search", "", cwd=project, url=registry.url)
    assert empty.returncode == 2 and "QUERY is empty" in empty.stderr


def test_uninstall_says_why_a_package_stays_and_a_new_specifier_is_changed(tmp_path: Path, registry: Any) -> None:
    base = registry.unique("base")
    top = registry.unique("top")
    registry.publish("skill", base, "1.0.0")
    registry.publish("skill", top, "1.0.0", skills=[base])
    project = new_project(tmp_path)
    first = run("install", "skill", top, "skill", f"{base}@^1", "--skip-tools", cwd=project, url=registry.url)
    assert first.returncode == 0, first.stderr
    assert f'Added skill {base} = "^1"' in first.stderr
    changed = run("install", "skill", f"{base}@>=1", "--skip-tools", cwd=project, url=registry.url)
    assert changed.returncode == 0, changed.stderr
    assert f'Changed skill {base} from "^1" to ">=1" in strawpot.toml' in changed.stderr
    assert f"Added skill {base}" not in changed.stderr
    result = run("uninstall", "skill", base, cwd=project, url=registry.url)
    assert result.returncode == 0, result.stderr
    assert f"skill {base} stays installed: required by skill {top}" in result.stderr
    assert (project / ".strawpot" / "skills" / base).is_dir()


# -- what a uv user types beyond the findings: lock --dry-run, cache, completion ----------------------------------

def test_lock_dry_run_writes_nothing(tmp_path: Path, registry: Any) -> None:
    project = new_project(tmp_path)
    (project / "strawpot.toml").write_text('[skills]\ncode-style = "^1"\n')
    result = run("lock", "--dry-run", cwd=project, url=registry.url)
    assert result.returncode == 0, result.stderr
    assert "Would write strawpot.lock (1 package)" in result.stderr
    assert sorted(p.name for p in project.iterdir()) == ["strawpot.toml"]


def test_cache_dir_prune_and_clean(tmp_path: Path, registry: Any) -> None:
    project = new_project(tmp_path)
    assert run("install", "skill", "code-style", "--skip-tools", cwd=project, url=registry.url).returncode == 0
    where = run("cache", "dir", cwd=project, url=registry.url)
    cache = Path(where.stdout.strip())
    assert cache == tmp_path / "home" / "cache" and (cache / "archives-v1").is_dir() and (cache / "metadata-v1").is_dir()
    pruned = run("cache", "prune", cwd=project, url=registry.url)
    assert pruned.returncode == 0 and "freed" in pruned.stderr
    assert (cache / "archives-v1").is_dir() and not (cache / "metadata-v1").exists()
    cleaned = run("cache", "clean", cwd=project, url=registry.url)
    assert cleaned.returncode == 0 and not cache.exists()


def test_completion_scripts_come_from_click(tmp_path: Path) -> None:
    for shell, marker in (("bash", "_STRAWPOT_COMPLETE=bash_complete"), ("zsh", "#compdef strawpot"),
                          ("fish", "complete --no-files --command strawpot")):
        folder = tmp_path / shell
        folder.mkdir()
        result = run("completion", shell, cwd=new_project(folder), url="http://127.0.0.1:9")
        assert result.returncode == 0, result.stderr
        assert marker in result.stdout, result.stdout


def test_quiet_verbose_and_color(tmp_path: Path, registry: Any) -> None:
    project = new_project(tmp_path)
    loud = run("-v", "install", "skill", "code-style", "--skip-tools", cwd=project, url=registry.url)
    assert loud.returncode == 0, loud.stderr
    assert re.search(rf"GET {re.escape(registry.url)}/api/v1/skills/code-style\S* 200 OK \d+ ms$", loud.stderr, re.M), \
        loud.stderr
    (project / "strawpot.lock").unlink()
    quiet = run("-q", "install", "--skip-tools", cwd=project, url=registry.url)
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr
    failing = run("-q", "tree", "--project", str(tmp_path), cwd=project, url=registry.url)
    assert failing.returncode == 2 and "error:" in failing.stderr
    coloured = run("--color", "always", "tree", "--project", str(tmp_path), cwd=project, url=registry.url)
    assert "\x1b[" in coloured.stderr
    plain = run("--color", "never", "tree", "--project", str(tmp_path), cwd=project, url=registry.url,
                env={"FORCE_COLOR": "1"})
    assert "\x1b[" not in plain.stderr and "error:" in plain.stderr


def test_verbose_times_requests_and_shows_cache_hits_on_stderr_only(tmp_path: Path, registry: Any) -> None:
    cold = tmp_path / "cold"
    cold.mkdir()
    first = run("-v", "install", "role", "implementer", "--skip-tools", "--json", cwd=cold, url=registry.url)
    assert first.returncode == 0, first.stderr
    requests = re.findall(r"^hub_client: (GET|POST) (http://\S+) (\d{3}) .* (\d+) ms$", first.stderr, re.M)
    assert any(url.endswith("/archive") or url.endswith("/archives") for _, url, _, _ in requests), first.stderr
    assert "cache hit" not in first.stderr  # a cold cache (HOME is this test's own)
    assert isinstance(json.loads(first.stdout), dict)  # one JSON document: the log lines went to stderr

    warm = tmp_path / "warm"  # a clean project beside it: same HOME, so the same cache
    warm.mkdir()
    second = run("-v", "install", "role", "implementer", "--skip-tools", "--json", cwd=warm, url=registry.url)
    assert second.returncode == 0, second.stderr
    json.loads(second.stdout)
    hits = re.findall(r"^hub_client: cache hit: archive of (\w+) (\S+) (\S+) \(sha256 [0-9a-f]{12}…\)$",
                      second.stderr, re.M)
    assert hits and len(hits) == len({(h[0], h[1]) for h in hits}), second.stderr  # one line per archive
    assert ("role", "implementer") in {(h[0], h[1]) for h in hits}, second.stderr
    assert re.search(r"^hub_client: cache: role implementer metadata revalidated \(ETag ", second.stderr, re.M), \
        second.stderr
    assert not re.search(r"^hub_client: GET \S+/archive ", second.stderr, re.M), second.stderr


def test_registry_token_list_and_revoke(tmp_path: Path) -> None:
    import httpx

    from tests._live_registry import start_registry

    with start_registry(tmp_path) as live:
        other = live.create_token("bob")
        listed = run("registry", "token", "list", "--data", str(live.data_dir), cwd=new_project(tmp_path),
                     url=live.url)
        assert listed.returncode == 0, listed.stderr
        rows = [line.split() for line in listed.stdout.splitlines()]
        assert [r[1] for r in rows] == ["admin", "bob"]
        assert live.token not in listed.stdout and other not in listed.stdout
        headers = {"Authorization": f"Bearer {other}"}
        assert httpx.get(f"{live.url}/api/v1/whoami", headers=headers, timeout=10).status_code == 200
        revoked = run("registry", "token", "revoke", rows[1][0], "--data", str(live.data_dir), cwd=tmp_path / "p",
                      url=live.url)
        assert revoked.returncode == 0 and "Revoked token" in revoked.stderr, revoked.stderr
        assert httpx.get(f"{live.url}/api/v1/whoami", headers=headers, timeout=10).status_code == 401
        again = run("registry", "token", "revoke", rows[1][0], "--data", str(live.data_dir), cwd=tmp_path / "p",
                    url=live.url)
        assert again.returncode == 2 and "no token matches" in again.stderr


# -- issue 30, item 4: run state stays out of git -----------------------------------------------------------------

def test_the_first_install_in_a_git_repository_ignores_the_tree(tmp_path: Path, registry: Any) -> None:
    project = new_project(tmp_path)
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    first = run("install", "skill", "code-style", "--skip-tools", cwd=project, url=registry.url)
    assert first.returncode == 0, first.stderr
    assert (project / ".gitignore").read_text() == ".strawpot/\n"
    assert "Added .strawpot/ to .gitignore" in first.stderr
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=project, check=True,
                            capture_output=True, text=True).stdout
    assert sorted(status.splitlines()) == ["?? .gitignore", "?? strawpot.lock", "?? strawpot.toml"], status
    (project / ".gitignore").write_text("")  # the user took it out: later installs respect that
    again = run("install", "skill", "git-workflow", "--skip-tools", cwd=project, url=registry.url)
    assert again.returncode == 0 and (project / ".gitignore").read_text() == "", again.stderr


def test_init_in_a_git_repository_ignores_the_tree_and_nowhere_else(tmp_path: Path, registry: Any) -> None:
    plain, tracked = new_project(tmp_path), tmp_path / "tracked"
    tracked.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=tracked, check=True)
    assert run("init", cwd=plain, url=registry.url).returncode == 0
    assert sorted(p.name for p in plain.iterdir()) == ["strawpot.toml"]
    header = (plain / "strawpot.toml").read_text()  # no path of our repository in the user's file
    assert "docs/" not in header and "`strawpot config show\n# --origin`" in header
    result = run("init", cwd=tracked, url=registry.url)
    assert result.returncode == 0, result.stderr
    assert (tracked / ".gitignore").read_text() == ".strawpot/\n"
    assert "Added .strawpot/ to .gitignore" in result.stderr


# -- issue 30, item 7: remove says what it removed, and --dry-run what it would ----------------------------------

def test_remove_says_what_it_removed_and_dry_run_what_it_would(tmp_path: Path, registry: Any) -> None:
    project = new_project(tmp_path)
    added = run("install", "skill", "code-style", "skill", "git-workflow", "--skip-tools", cwd=project,
                url=registry.url)
    assert added.returncode == 0, added.stderr
    dry = run("remove", "--dry-run", "skill", "code-style", cwd=project, url=registry.url)
    assert dry.returncode == 0, dry.stderr
    assert "Would write strawpot.lock (1 package)" in dry.stderr
    assert 'Would remove skill code-style = "^1.0.0" from strawpot.toml' in dry.stderr
    assert "code-style" in (project / "strawpot.toml").read_text()
    done = run("remove", "skill", "code-style", cwd=project, url=registry.url)
    assert done.returncode == 0, done.stderr
    assert 'Removed skill code-style = "^1.0.0" from strawpot.toml' in done.stderr
    assert " - skill code-style 1.0.0" in done.stderr
    assert "code-style" not in (project / "strawpot.toml").read_text()
