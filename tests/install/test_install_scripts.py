"""Install scripts under a trust policy, against a live registry: trusted ones run in the staged package and
leave an install record; untrusted ones wait for `strawpot trust`; failures leave the previous version."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from strawpot.model.install_record import RECORD_FILE, load_record
from strawpot.model.lockfile import Lockfile
from tests._cli import STRAWPOT
from tests._pty import talk

BUILD = 'printf "built in %s\\n" "$(basename "$INSTALL_DIR")" > built.txt && mkdir -p bin && ' \
        'printf "#!/bin/sh\\necho hi\\n" > bin/tool && chmod +x bin/tool && echo build-done'


def publish_skill(registry, script: str, *, slug: str | None = None, version: str = "1.0.0") -> str:
    slug = slug or registry.unique("scripted")
    registry.publish("skill", slug, version, files={"notes.md": b"notes\n"},
                     extra={"install": {"linux": script, "macos": script}})
    return slug


def write_manifest(project, text: str) -> None:
    project.manifest_path.write_text(text, encoding="utf-8")


def package_dir(project, slug: str) -> Path:
    return project.dir / ".strawpot" / "skills" / slug


@pytest.fixture
def trust_project(monkeypatch):  # type: ignore[no-untyped-def]
    """These tests write [scripts] trusted themselves: honour it as CI does (no confirmation on this machine)."""
    monkeypatch.setenv("STRAWPOT_TRUST_PROJECT", "1")


def test_trusted_script_runs_in_the_package_and_its_record_is_verified(cli, project, registry, trust_project):
    slug = publish_skill(registry, BUILD)
    write_manifest(project, f'[skills]\n{slug} = "*"\n\n[scripts]\ntrusted = ["skill:{slug}"]\n')
    result = cli("install", "--project", project.dir)
    assert result.code == 0, result.text
    assert f"Ran the install script of skill:{slug}" in result.err
    folder = package_dir(project, slug)
    assert (folder / "built.txt").read_text().startswith("built in ")
    record = load_record(folder)
    assert record is not None
    assert {f.path: f.executable for f in record.outputs} == {"built.txt": False, "bin/tool": True}
    assert "build-done" in (project.dir / ".strawpot" / "logs" / f"install-skill-{slug}.log").read_text()
    assert RECORD_FILE not in Lockfile.load(project.lock_path).dumps()  # the record is local, never locked

    ok = cli("verify", "--project", project.dir)
    assert ok.code == 0, ok.text
    assert "2 built files of 1 package match their install records" in ok.err

    # a built file changed: verify reports it apart from the lock, and install rebuilds it
    (folder / "bin" / "tool").write_text("#!/bin/sh\necho evil\n")
    (folder / "stray.txt").write_text("x")
    bad = cli("verify", "--project", project.dir)
    assert bad.code == 5
    assert "differs from its install record:" in bad.out and "bin/tool: size" in bad.out
    assert f"skill {slug}: stray.txt: file not in the lock nor the install record" in bad.out
    again = cli("install", "--project", project.dir)
    assert again.code == 0, again.text
    assert (folder / "bin" / "tool").read_text() == "#!/bin/sh\necho hi\n" and not (folder / "stray.txt").exists()
    assert cli("verify", "--project", project.dir).code == 0

    # a built package whose files and record agree is kept as it is (the script does not run again)
    before = (folder / "built.txt").stat().st_mtime_ns
    for args in (("install",), ("sync",), ("install", "--frozen")):
        kept = cli(*args, "--project", project.dir)
        assert kept.code == 0 and "Ran the install script" not in kept.err, kept.text
        assert "Already up to date (1 package)" in kept.err  # the no-op check knows the install record
    assert (folder / "built.txt").stat().st_mtime_ns == before
    (folder / "built.txt").unlink()  # --frozen rebuilds too
    frozen = cli("install", "--frozen", "--project", project.dir)
    assert frozen.code == 0 and f"Ran the install script of skill:{slug}" in frozen.err, frozen.text
    assert (folder / "built.txt").is_file() and cli("verify", "--project", project.dir).code == 0


def test_the_no_op_check_reads_the_record_file_the_model_writes():
    from strawpot.install import fastcheck
    from strawpot.model import install_record, tree_facts

    assert fastcheck.RECORD_FILE is install_record.RECORD_FILE is RECORD_FILE is tree_facts.RECORD_FILE
    assert fastcheck.RECORD_FORMAT is install_record.RECORD_FORMAT  # one definition, imported by both


def test_untrusted_script_is_skipped_under_yes_then_trust_runs_it(cli, project, registry):
    slug = publish_skill(registry, BUILD)
    result = cli("install", "skill", slug, "-y", "--project", project.dir)
    assert result.code == 0, result.text
    folder = package_dir(project, slug)
    assert (folder / "notes.md").is_file() and not (folder / "built.txt").exists()
    assert load_record(folder) is None
    warnings = [line for line in result.err.splitlines() if "install scripts not run" in line]
    assert warnings == [f"warning: install scripts not run (not trusted): skill:{slug}; review them "
                        f"(`strawpot info KIND SLUG`), then run `strawpot trust skill:{slug}`"]
    assert cli("verify", "--project", project.dir).code == 0  # installed as published

    trusted = cli("trust", f"skill:{slug}", "--project", project.dir)
    assert trusted.code == 0, trusted.text
    assert (folder / "built.txt").is_file() and load_record(folder) is not None
    manifest = tomllib.loads(project.manifest_path.read_text())
    assert manifest["scripts"] == {"trusted": [f"skill:{slug}"]}
    assert cli("verify", "--project", project.dir).code == 0
    again = cli("trust", f"skill:{slug}", "--project", project.dir)
    assert again.code == 0 and f"skill:{slug} is already trusted in strawpot.toml" in again.err, again.text


def test_ignore_scripts_and_dry_run(cli, project, registry, trust_project):
    slug = publish_skill(registry, BUILD)
    write_manifest(project, f'[skills]\n{slug} = "*"\n\n[scripts]\ntrusted = ["skill:{slug}"]\n')
    dry = cli("install", "--dry-run", "--project", project.dir)
    assert dry.code == 0, dry.text
    assert f"Would run the install script of skill:{slug}: {BUILD}" in dry.err
    assert not (project.dir / ".strawpot" / "skills").exists()
    ignored = cli("install", "--ignore-scripts", "--project", project.dir)
    assert ignored.code == 0, ignored.text
    assert not (package_dir(project, slug) / "built.txt").exists() and "install scripts not run" not in ignored.err
    dry_pending = cli("install", "--dry-run", "--project", project.dir)  # installed, never built: would build now
    assert f"Would run the install script of skill:{slug}" in dry_pending.err
    built = cli("install", "--project", project.dir)
    assert built.code == 0 and (package_dir(project, slug) / "built.txt").is_file(), built.text


def test_failing_script_keeps_the_previous_version_and_shows_its_log(cli, project, registry, trust_project):
    slug = publish_skill(registry, "echo first-ok")
    publish_skill(registry, "echo preparing; echo 'compiler exploded' >&2; exit 3", slug=slug, version="1.1.0")
    write_manifest(project, f'[skills]\n{slug} = "==1.0.0"\n\n[scripts]\ntrusted = ["skill:{slug}"]\n')
    assert cli("install", "--project", project.dir).code == 0
    lock_before = project.lock_path.read_bytes()
    write_manifest(project, f'[skills]\n{slug} = "==1.1.0"\n\n[scripts]\ntrusted = ["skill:{slug}"]\n')
    result = cli("trust", f"skill:{slug}", "--project", project.dir)  # 1.1.0's script is another text: trusted anew
    assert result.code == 1, result.text
    log = project.dir / ".strawpot" / "logs" / f"install-skill-{slug}.log"
    assert (f"\nerror: the install script of skill {slug} 1.1.0 failed (exit 3); the package was not installed; "
            f"log: {log}\n") in result.err
    assert "  | compiler exploded\n" in result.err and "Traceback" not in result.err
    assert (package_dir(project, slug) / ".version").read_text() == "1.0.0\n"
    assert project.lock_path.read_bytes() == lock_before
    assert not [p for p in (project.dir / ".strawpot" / "skills").iterdir() if p.name.startswith(".")]


def test_script_past_its_timeout_is_killed_with_its_children(cli, project, registry, tmp_path, trust_project):
    pidfile = tmp_path / "child.pid"
    slug = publish_skill(registry, f"sleep 600 & echo $! > {pidfile}; echo started; wait")
    write_manifest(project, f'[skills]\n{slug} = "*"\n\n[scripts]\ntrusted = ["skill:{slug}"]\ntimeout = 1\n')
    started = time.monotonic()
    result = cli("install", "--project", project.dir)
    assert result.code == 1, result.text
    assert time.monotonic() - started < 30
    assert "ran longer than 1 s and was stopped" in result.err and "started" in result.err
    assert not package_dir(project, slug).exists()
    child = int(pidfile.read_text())
    deadline = time.monotonic() + 60
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    _killed_or_fail(child, "the script's background child outlived the timeout")  # it sleeps 600 s: no passing by waiting


def _killed_or_fail(pid: int, why: str) -> None:
    if _alive(pid):
        os.kill(pid, 9)  # leave nothing behind, then say what went wrong
        raise AssertionError(why)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_script_printing_megabytes_streams_to_its_log(project, registry, tmp_path, trust_project):
    """The script's output goes to the log file, not through strawpot's memory (peak RSS, measured)."""
    loud = publish_skill(registry, "head -c 67108864 /dev/zero | tr '\\0' 'x'; echo; echo loud-done")
    quiet = publish_skill(registry, "echo quiet-done")
    peaks = {}
    for slug in (quiet, loud):
        folder = tmp_path / slug
        folder.mkdir()
        (folder / "strawpot.toml").write_text(f'[skills]\n{slug} = "*"\n\n[scripts]\ntrusted = ["skill:{slug}"]\n')
        probe = ("import resource, subprocess, sys; "
                 "code = subprocess.run(sys.argv[1:]).returncode; "
                 "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(code)")
        env = {**os.environ, "STRAWPOT_REGISTRY_URL": registry.url, "STRAWPOT_CACHE_DIR": str(tmp_path / "cache")}
        done = subprocess.run([sys.executable, "-c", probe, *STRAWPOT, "install"],
                              cwd=folder, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        peaks[slug] = int(done.stdout.split()[-1])  # KiB on Linux
    log = tmp_path / loud / ".strawpot" / "logs" / f"install-skill-{loud}.log"
    assert log.stat().st_size > 64 * 1024 * 1024 and log.read_bytes()[-10:] == b"loud-done\n"
    assert peaks[loud] - peaks[quiet] < 24 * 1024, peaks  # 64 MB of output, far less than that held


def test_script_text_changed_on_the_registry_after_locking_exits_5(cli, project, registry, tmp_path):
    marker = tmp_path / "evil-ran"
    slug = publish_skill(registry, "echo honest")
    write_manifest(project, f'[skills]\n{slug} = "*"\n\n[scripts]\ntrusted = ["skill:{slug}"]\n')
    assert cli("lock", "--project", project.dir).code == 0
    # the registry now serves an archive whose SKILL.md runs another script
    from strawpot.model.archive import build_archive

    sha = registry.client.package_versions("skill", slug).versions[-1].sha256
    main = registry.client.fetch_file("skill", slug, "SKILL.md", "1.0.0").replace(b"echo honest", f"touch {marker}".encode())
    registry.blob_path(sha).write_bytes(build_archive({"SKILL.md": main, "notes.md": b"notes\n"}, set()))
    result = cli("install", "--project", project.dir)
    assert result.code == 5, result.text
    assert f"integrity failure: archive of skill {slug} 1.0.0" in result.err
    assert not marker.exists() and not package_dir(project, slug).exists()


def test_trusted_naming_a_package_that_is_not_installed_warns(cli, project, registry):
    slug = publish_skill(registry, "echo ok")
    write_manifest(project, f'[skills]\n{slug} = "*"\n\n[scripts]\ntrusted = ["skill:{slug}", "agent:not-here"]\n')
    result = cli("install", "--project", project.dir)
    assert result.code == 0, result.text
    assert "warning: strawpot.toml: [scripts] trusted names agent:not-here, which is not installed" in result.err
    bad = cli("trust", "agent", "--project", project.dir)
    assert bad.code == 2 and "'agent' is not KIND:SLUG" in bad.err


def test_on_a_terminal_the_script_is_shown_and_yes_records_trust(project, registry, isolated_env):
    """The service asks its reporter (a terminal prompt in the CLI); yes runs the script and saves the trust."""
    from hub_client import Cache, HubClient
    from strawpot.install.options import Edit, Options, Requested
    from strawpot.install.outcome import QuietReporter
    from strawpot.install.service import run
    from strawpot.model.kinds import Kind

    slug = publish_skill(registry, BUILD)
    shown: list[tuple[str, str]] = []

    class Yes(QuietReporter):
        def confirm_script(self, script) -> bool:  # type: ignore[no-untyped-def]
            shown.append((script.id, script.text))
            return True

    project.manifest_path.write_text("# my project\n[orchestrator]\nrole = \"x\"  # kept\n")
    with HubClient(registry.url, cache=Cache(isolated_env / "cache")) as client:
        out = run(project, Edit(add=(Requested(Kind.SKILL, slug),)), Options(registry=registry.url),
                  reporter=Yes(), client=client)
    assert shown == [(f"skill:{slug}", BUILD)]
    assert out.builds.trusted_now == [f"skill:{slug}"] and out.builds.ran == [f"skill:{slug}"]
    text = project.manifest_path.read_text()
    assert text.startswith("# my project\n[orchestrator]\nrole = \"x\"  # kept\n")
    assert tomllib.loads(text)["scripts"]["trusted"] == [f"skill:{slug}"]
    assert (package_dir(project, slug) / "built.txt").is_file()
    assert json.loads((package_dir(project, slug) / RECORD_FILE).read_text())["format"] == 1


@pytest.mark.parametrize("value", ['"agent:x"', '["agent"]', '["Agent:X"]'])
def test_malformed_trusted_list_is_a_usage_error(cli, project, value):
    write_manifest(project, f"[scripts]\ntrusted = {value}\n")
    result = cli("install", "--project", project.dir)
    assert result.code == 2 and "scripts.trusted must be a list" in result.err, result.text


def test_ctrl_c_stops_the_script_and_its_children_and_installs_nothing(project, registry, tmp_path, trust_project):
    import signal

    pidfile = tmp_path / "child.pid"
    slug = publish_skill(registry, f"sleep 600 & echo $! > {pidfile}.tmp; mv {pidfile}.tmp {pidfile}; wait")
    write_manifest(project, f'[skills]\n{slug} = "*"\n\n[scripts]\ntrusted = ["skill:{slug}"]\n')
    env = {**os.environ, "STRAWPOT_REGISTRY_URL": registry.url}
    proc = subprocess.Popen([*STRAWPOT, "install"], cwd=project.dir, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not pidfile.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert pidfile.exists(), proc.communicate(timeout=10)
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    child = int(pidfile.read_text())
    deadline = time.monotonic() + 60
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    _killed_or_fail(child, "the script's child outlived Ctrl-C")
    assert not (project.dir / ".strawpot" / "skills" / slug).exists() and not project.lock_path.exists()
    assert not [p for p in (project.dir / ".strawpot" / "skills").iterdir() if p.name.startswith(".tmp-")]
    log = project.dir / ".strawpot" / "logs" / f"install-skill-{slug}.log"
    assert f"Running the install script of skill {slug} 1.0.0 (log: {log})" in err  # where to look, at once
    assert log.read_text().endswith("[strawpot] aborted (Ctrl-C): the script was stopped; the package was not "
                                    "installed\n"), log.read_text()


def test_on_a_terminal_install_shows_the_script_in_full_and_asks(project, registry):
    import fcntl
    import pty
    import struct
    import termios

    slug = publish_skill(registry, "echo step one\necho step two > built.txt")
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 250, 0, 0))
    env = {**os.environ, "STRAWPOT_REGISTRY_URL": registry.url, "TERM": "dumb", "NO_COLOR": "1"}
    proc = subprocess.Popen([*STRAWPOT, "install", "skill", slug, "-y"],
                            cwd=project.dir, env=env, stdin=slave, stdout=slave, stderr=slave)
    os.close(slave)
    try:
        transcript = talk(master, proc, {b"(recorded in [scripts] trusted)?": b"y\n"})
        assert proc.wait(timeout=30) == 0, transcript
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    assert f"skill {slug} 1.0.0 has an install script, run in its package folder:" in transcript
    assert "    echo step one" in transcript and "    echo step two > built.txt" in transcript
    assert f"Trust skill:{slug} and run it" in transcript
    assert (package_dir(project, slug) / "built.txt").read_text() == "step two\n"
    assert tomllib.loads(project.manifest_path.read_text())["scripts"]["trusted"] == [f"skill:{slug}"]


def test_on_a_terminal_a_changed_script_shows_its_diff_and_asks(cli, project, registry):
    slug = publish_skill(registry, "echo one\necho same")
    assert cli("install", "skill", slug, "--project", project.dir).code == 0
    assert cli("trust", f"skill:{slug}", "--project", project.dir).code == 0
    publish_skill(registry, "echo two > built.txt\necho same", slug=slug, version="2.0.0")
    import fcntl
    import pty
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 250, 0, 0))
    env = {**os.environ, "STRAWPOT_REGISTRY_URL": registry.url, "TERM": "dumb", "NO_COLOR": "1"}
    proc = subprocess.Popen([*STRAWPOT, "install", "skill", f"{slug}@^2"],
                            cwd=project.dir, env=env, stdin=slave, stdout=slave, stderr=slave)
    os.close(slave)
    try:
        transcript = talk(master, proc, {b"(recorded in [scripts] trusted)?": b"y\n"})
        assert proc.wait(timeout=30) == 0, transcript
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    assert f"The install script of skill {slug} 2.0.0 changed since you trusted it:" in transcript
    assert "    -echo one" in transcript and "    +echo two > built.txt" in transcript
    assert "     echo same" in transcript
    assert (package_dir(project, slug) / "built.txt").read_text() == "two\n"
