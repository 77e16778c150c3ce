"""Package text with characters a terminal draws as nothing or uses to reorder a line (U+202E RIGHT-TO-LEFT
OVERRIDE, U+200B ZERO WIDTH SPACE, bidi isolates, BOM, soft hyphen, tag characters, the line separator) is shown
escaped by `info`, `validate`, `install --dry-run` and the trust prompt, so what a user reviews is what runs
(issue 35). Real CLI processes against a live registry; the prompt on a pseudo-terminal."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests._cli import STRAWPOT, strawpot_here
from tests._pty import talk

HIDDEN = "\u202e\u200b\u2066\ufeff\u00ad\U000e0041\u2028"
SHOWN = "<U+202E><U+200B><U+2066><U+FEFF><U+00AD><U+E0041><U+2028>"
SCRIPT = f"echo harmless{HIDDEN} > built.txt"


def run(*args: str | Path, cwd: Path, registry_url: str) -> subprocess.CompletedProcess[str]:
    return strawpot_here(*args, cwd=cwd,
                         extra_env={"STRAWPOT_REGISTRY_URL": registry_url, "NO_COLOR": "1", "COLUMNS": "400"})


def assert_escaped(text: str) -> None:
    hidden = [hex(ord(c)) for c in HIDDEN if c in text]
    assert not hidden, f"printed raw: {hidden}\n{text}"


def publish(registry) -> str:  # type: ignore[no-untyped-def]
    slug = registry.unique("hidden")
    registry.publish("skill", slug, "1.0.0", extra={"install": {"linux": SCRIPT, "macos": SCRIPT}})
    return slug


def test_info_shows_format_characters_escaped(registry, tmp_path):
    slug = publish(registry)
    result = run("info", "skill", slug, cwd=tmp_path, registry_url=registry.url)
    assert result.returncode == 0, result.stderr
    assert f"install script (linux): echo harmless{SHOWN} > built.txt" in result.stdout, result.stdout
    assert_escaped(result.stdout + result.stderr)


def test_validate_shows_format_characters_escaped(registry, tmp_path):
    import yaml

    folder = tmp_path / "pkg"
    folder.mkdir()
    meta = {"name": "hidden-pkg", "description": "d", "version": "1.0.0",
            "metadata": {"strawpot": {"install": {"linux": SCRIPT, "macos": SCRIPT}}}}
    (folder / "SKILL.md").write_text(f"---\n{yaml.safe_dump(meta, allow_unicode=True)}---\n# x\n", encoding="utf-8")
    result = run("validate", folder, cwd=tmp_path, registry_url=registry.url)
    assert result.returncode == 0, result.stderr
    assert f"install script (linux): echo harmless{SHOWN} > built.txt" in result.stdout, result.stdout
    assert_escaped(result.stdout + result.stderr)


def test_install_dry_run_shows_format_characters_escaped(registry, project):
    slug = publish(registry)
    result = run("install", "skill", slug, "--dry-run", cwd=project.dir, registry_url=registry.url)
    assert result.returncode == 0, result.stderr
    assert (f"Would not run the install script of skill:{slug} (not trusted): echo harmless{SHOWN} > built.txt"
            in result.stderr), result.stderr
    assert_escaped(result.stdout + result.stderr)


def test_the_trust_prompt_shows_format_characters_escaped(registry, project):
    import fcntl
    import pty
    import struct
    import termios

    slug = publish(registry)
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 250, 0, 0))
    env = {**os.environ, "STRAWPOT_REGISTRY_URL": registry.url, "TERM": "dumb", "NO_COLOR": "1"}
    proc = subprocess.Popen([*STRAWPOT, "install", "skill", slug], cwd=project.dir,
                            env=env, stdin=slave, stdout=slave, stderr=slave)
    os.close(slave)
    try:
        transcript = talk(master, proc, {b"(recorded in [scripts] trusted)?": b"n\n"})
        assert proc.wait(timeout=30) == 0, transcript
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    assert f"    echo harmless{SHOWN} > built.txt" in transcript, transcript
    assert_escaped(transcript)
    assert not (project.dir / ".strawpot" / "skills" / slug / "built.txt").exists()
