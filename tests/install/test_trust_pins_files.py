"""Trust pins the command *and* every file its package ships (issue 35), on a live registry: v1 `sh build.sh`
trusted, v2 keeps the command and changes build.sh; the new file is a new trust question, shown as a file diff on a
terminal and skipped with one warning elsewhere. Pins written by an older strawpot (the text alone) are asked again."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from strawpot.model.install_record import script_sha256
from strawpot.model.lockfile import LockedTrust, Lockfile
from tests._cli import STRAWPOT, strawpot_here
from tests._pty import talk

COMMAND = "sh build.sh"


def publish(registry, slug: str, version: str, build: str, files: dict[str, bytes] | None = None) -> None:  # type: ignore[no-untyped-def]
    registry.publish("skill", slug, version, files={"build.sh": build.encode(), **(files or {})},
                     extra={"install": {"linux": COMMAND, "macos": COMMAND}})


def folder(project, slug: str) -> Path:  # type: ignore[no-untyped-def]
    return project.dir / ".strawpot" / "skills" / slug


def trusted_v1(cli, project, registry, prefix: str) -> str:  # type: ignore[no-untyped-def]
    slug = registry.unique(prefix)
    publish(registry, slug, "1.0.0", "echo v1 > built.txt\n")
    assert cli("install", "skill", slug, "--project", project.dir).code == 0
    assert cli("trust", f"skill:{slug}", "--project", project.dir).code == 0
    assert (folder(project, slug) / "built.txt").read_text() == "v1\n"
    return slug


def info(project, registry, slug: str) -> str:  # type: ignore[no-untyped-def]
    """`strawpot info skill SLUG` run in the project's folder, as a user reviewing it would."""
    done = strawpot_here("info", "skill", slug, cwd=project.dir,
                         extra_env={"STRAWPOT_REGISTRY_URL": registry.url, "COLUMNS": "400"})
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_changed_file_behind_the_same_command_waits_for_fresh_consent(cli, project, registry, tmp_path):
    marker = tmp_path / "v2-build-ran"
    slug = trusted_v1(cli, project, registry, "same-command")
    publish(registry, slug, "2.0.0", f"touch {marker}\necho v2 > built.txt\n")
    project.manifest_path.write_text(project.manifest_path.read_text().replace('"^1.0.0"', '"*"'))

    dry = cli("update", "skill", slug, "--dry-run", "--project", project.dir)
    assert dry.code == 0 and f"Would not run the install script of skill:{slug} (not trusted): {COMMAND}" in dry.err, \
        dry.text
    result = cli("update", "skill", slug, "--project", project.dir)
    assert result.code == 0, result.text
    assert not marker.exists(), "a changed build.sh ran under the trust given to the same command text"
    assert (folder(project, slug) / ".version").read_text() == "2.0.0\n"  # installed as published, not built
    warnings = [line for line in result.err.splitlines() if line.startswith("warning: install scripts not run")]
    assert warnings == [f"warning: install scripts not run (changed since you trusted them): skill:{slug}; review "
                        f"the new text (`strawpot info KIND SLUG`), then run `strawpot trust skill:{slug}`"]
    review = info(project, registry, slug)  # what the warning sends the user to: it says what changed
    assert f"install script (linux): {COMMAND}" in review
    assert (f"trust: not trusted in {project.dir}: since the trusted 1.0.0: SKILL.md changed, build.sh changed; "
            f"review it, then run `strawpot trust skill:{slug}`") in review, review

    again = cli("trust", f"skill:{slug}", "--project", project.dir)
    assert again.code == 0 and marker.exists(), again.text
    assert (f"trust: this install script, with these files, is confirmed on this machine for {project.dir}"
            in info(project, registry, slug))
    assert (folder(project, slug) / "built.txt").read_text() == "v2\n"
    [pin] = Lockfile.load(project.lock_path).trust
    assert len(pin.sha256) == 2  # v1 and v2, each with its files
    marker.unlink()
    (folder(project, slug) / "built.txt").unlink()  # rebuilt from the lock: the same files, trusted, no question
    rebuilt = cli("install", "--project", project.dir)
    assert rebuilt.code == 0 and marker.exists() and "warning" not in rebuilt.err, rebuilt.text


def test_an_added_file_is_a_changed_trust_question_too(cli, project, registry, tmp_path):
    marker = tmp_path / "helper-ran"
    slug = trusted_v1(cli, project, registry, "added-file")
    publish(registry, slug, "1.1.0", "echo v1 > built.txt\n", files={"helper.sh": f"touch {marker}\n".encode()})
    result = cli("update", "skill", slug, "--project", project.dir)
    assert result.code == 0 and "changed since you trusted them" in result.err, result.text
    assert (folder(project, slug) / "helper.sh").is_file() and not (folder(project, slug) / "built.txt").exists()


def _pty_run(args: list[str], cwd: Path, env: dict[str, str], answer: bytes) -> tuple[int, str]:
    import fcntl
    import pty
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 250, 0, 0))
    proc = subprocess.Popen([*STRAWPOT, *args], cwd=cwd, env=env, stdin=slave,
                            stdout=slave, stderr=slave)
    os.close(slave)
    try:
        transcript = talk(master, proc, {b"(recorded in [scripts] trusted)?": answer})
        return proc.wait(timeout=30), transcript
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()


def test_on_a_terminal_the_changed_files_are_shown_with_their_diff(cli, project, registry, tmp_path):
    marker = tmp_path / "shown-ran"
    slug = trusted_v1(cli, project, registry, "shown")
    publish(registry, slug, "2.0.0", f"touch {marker}\necho v2 > built.txt\n",
            files={"extra.txt": b"new helper\n", "big.bin": bytes(range(256)) * 4})
    env = {**os.environ, "STRAWPOT_REGISTRY_URL": registry.url, "TERM": "dumb", "NO_COLOR": "1"}
    code, transcript = _pty_run(["update", "skill", f"{slug}@^2"], project.dir, env, b"n\n")
    assert code == 0, transcript
    assert not marker.exists()
    assert (f"The install script of skill {slug} 2.0.0 is the same command as the one you trusted, but files its "
            "package ships changed since:") in transcript
    assert f"    {COMMAND}" in transcript
    assert "    changed build.sh" in transcript
    assert "        -echo v1 > built.txt" in transcript and f"        +touch {marker}" in transcript
    assert "    added extra.txt" in transcript and "        +new helper" in transcript
    assert "    added big.bin (binary, 1024 bytes: no diff shown)" in transcript
    assert f"warning: install scripts not run (changed since you trusted them): skill:{slug}" in transcript

    code, transcript = _pty_run(["install"], project.dir, env, b"y\n")
    assert code == 0 and marker.exists(), transcript
    assert "    changed build.sh" not in transcript  # v2 is installed: nothing to diff it with, but what was trusted
    assert (f"The install script of skill {slug} 2.0.0 or the files it runs changed (since the trusted 1.0.0: "
            "SKILL.md changed, big.bin added, build.sh changed, extra.txt added); the command, run in its package "
            f"folder:\r\n    {COMMAND}") in transcript, transcript


def _old_pins(project, slug: str, isolated_env: Path) -> None:  # type: ignore[no-untyped-def]
    """What the previous strawpot wrote after `strawpot trust`: the command text's sha256, in the lock and here."""
    pid, legacy = f"skill:{slug}", script_sha256(COMMAND)
    lock = Lockfile.load(project.lock_path)
    lock = Lockfile(lock.packages, lock.manifest_hash, lock.generated_by, trust=(LockedTrust(pid, (legacy,)),))
    lock.write(project.lock_path)
    local = Path(os.environ["STRAWPOT_CONFIG_DIR"]) / "trusted-scripts.json"
    local.parent.mkdir(parents=True, exist_ok=True)
    local.write_text(json.dumps({"version": 1, "projects": {str(project.dir.resolve()): {pid: [legacy]}}}))


def test_a_pin_of_the_text_alone_from_an_older_strawpot_is_asked_again(cli, project, registry, tmp_path, isolated_env,
                                                                        monkeypatch):
    marker = tmp_path / "old-pin-ran"
    slug = registry.unique("old-pin")
    publish(registry, slug, "1.0.0", f"touch {marker}\n")
    assert cli("install", "skill", slug, "-y", "--project", project.dir).code == 0
    project.manifest_path.write_text(project.manifest_path.read_text() + f'\n[scripts]\ntrusted = ["skill:{slug}"]\n')
    _old_pins(project, slug, isolated_env)

    for ci in (False, True):  # on this machine, and in CI with the lock's pins
        if ci:
            monkeypatch.setenv("STRAWPOT_TRUST_PROJECT", "1")
        result = cli("install", "--project", project.dir)
        assert result.code == 0 and not marker.exists(), result.text
        assert "Traceback" not in result.err
        assert (f"warning: install scripts not run (trusted by an older strawpot, which pinned the command text "
                f"only, not the files it runs): skill:{slug}; review them (`strawpot info KIND SLUG`), then run "
                f"`strawpot trust skill:{slug}`") in result.err, result.err
    assert (f"trust: not trusted in {project.dir}: an older strawpot pinned the command text only, not the files "
            f"it runs; review it, then run `strawpot trust skill:{slug}`") in info(project, registry, slug)
    trusted = cli("trust", f"skill:{slug}", "--project", project.dir)
    assert trusted.code == 0 and marker.exists(), trusted.text


def test_a_tool_hint_is_pinned_with_the_agents_files_too(cli, project, registry, tmp_path):
    marker = tmp_path / "hint-ran"
    agent, role = registry.unique("hinted-files"), registry.unique("hinted-files-role")
    hint = f"sh {project.dir}/.strawpot/agents/{agent}/get-tool.sh"
    tools = {"absent-tool-35": {"description": "x", "install": {"linux": hint, "macos": hint}}}
    registry.publish("agent", agent, "1.0.0", files={"get-tool.sh": b"true\n"}, extra={"tools": tools})
    registry.publish("role", role, "1.0.0", default_agent=agent)
    assert cli("install", "role", role, "--project", project.dir).code == 0
    assert cli("trust", f"agent:{agent}", "--project", project.dir).code == 0
    registry.publish("agent", agent, "1.0.1", files={"get-tool.sh": f"touch {marker}\n".encode()},
                     extra={"tools": tools})
    assert cli("update", "agent", agent, "--skip-tools", "--project", project.dir).code == 0

    result = cli("install", "--install-tools", "--project", project.dir)
    assert result.code == 0 and not marker.exists(), result.text
    assert (f"the install command of tool absent-tool-35 was not run: agent {agent} is not trusted for it; review "
            f"it, then run `strawpot trust agent:{agent}`") in result.err
    assert cli("trust", f"agent:{agent}", "--project", project.dir).code == 0
    ran = cli("install", "--install-tools", "--project", project.dir)
    assert ran.code == 0 and marker.exists(), ran.text
