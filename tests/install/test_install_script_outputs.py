"""Install scripts as their authors write them: cwd = the package folder, INSTALL_DIR = a fresh folder whose files
join the package after; the script succeeds only if the package's `bin` for this OS exists and is executable."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from strawpot.model.install_record import load_record
from strawpot.model.platform import current_os
from tests._cli import STRAWPOT

OSES = ("linux", "macos")
THIS_OS = current_os()


@pytest.fixture(autouse=True)
def _project_trust_counts(monkeypatch):
    """These tests write `[scripts] trusted` by hand: honour it as CI would (the trust model is tested apart)."""
    monkeypatch.setenv("STRAWPOT_TRUST_PROJECT", "1")


def publish(registry, script: str, *, slug: str | None = None, version: str = "1.0.0", bin: str | None = "tool",
            files: dict[str, bytes] | None = None) -> str:
    """A skill shaped like the denden skill: a program per OS (and one for Windows that nothing builds)."""
    slug = slug or registry.unique("prog")
    extra: dict[str, object] = {"install": dict.fromkeys(OSES, script)}
    if bin is not None:
        extra["bin"] = {**dict.fromkeys(OSES, bin), "windows": "tool.exe"}
    registry.publish("skill", slug, version, files={"notes.md": b"notes\n", **(files or {})}, extra=extra)
    return slug


def trusted(project, slug: str, spec: str = "*") -> None:
    project.manifest_path.write_text(f'[skills]\n{slug} = "{spec}"\n\n[scripts]\ntrusted = ["skill:{slug}"]\n')


def folder(project, slug: str) -> Path:
    return project.dir / ".strawpot" / "skills" / slug


def log_of(project, slug: str) -> Path:
    return project.dir / ".strawpot" / "logs" / f"install-skill-{slug}.log"


def error_line(err: str) -> str:
    [line] = [line for line in err.splitlines() if line.startswith("error: ")]
    return line


MAKE_TOOL = 'printf "#!/bin/sh\\necho tool\\n" > "$INSTALL_DIR/tool" && chmod +x "$INSTALL_DIR/tool"'
# what the published Claude Code install script does: download into cwd, then move into $INSTALL_DIR
DOWNLOAD_THEN_MOVE = ('printf "#!/bin/sh\\necho tool\\n" > tool && chmod +x tool && mkdir -p "$INSTALL_DIR" && '
                      'mv tool "$INSTALL_DIR/tool"')


def test_a_script_that_downloads_into_cwd_then_moves_into_install_dir_works(cli, project, registry):
    slug = publish(registry, DOWNLOAD_THEN_MOVE)
    trusted(project, slug)
    result = cli("install", "--project", project.dir)
    assert result.code == 0, result.text
    tool = folder(project, slug) / "tool"
    assert tool.read_text() == "#!/bin/sh\necho tool\n" and os.access(tool, os.X_OK)
    record = load_record(folder(project, slug))
    assert record is not None and [(f.path, f.executable) for f in record.outputs] == [("tool", True)]
    assert cli("verify", "--project", project.dir).code == 0
    kind_dir = project.dir / ".strawpot" / "skills"
    assert sorted(p.name for p in kind_dir.iterdir()) == [slug]  # the INSTALL_DIR folder is gone


def test_cwd_is_the_package_folder_and_install_dir_starts_empty(cli, project, registry):
    script = ('test -f notes.md && test -z "$(ls -A "$INSTALL_DIR")" && test "$INSTALL_DIR" != "$PWD" && '
              'mkdir -p "$INSTALL_DIR/sub" && cp notes.md "$INSTALL_DIR/sub/copied.md" && sh ./make.sh')
    slug = publish(registry, script, bin="bin/tool", files={"make.sh": b'mkdir -p bin && printf "#!/bin/sh\\n" > bin/tool'
                                                                       b' && chmod 755 bin/tool\n'})
    trusted(project, slug)
    result = cli("install", "--project", project.dir)
    assert result.code == 0, result.text
    assert (folder(project, slug) / "sub" / "copied.md").read_text() == "notes\n"
    assert os.access(folder(project, slug) / "bin" / "tool", os.X_OK)


def test_exit_0_without_the_declared_bin_fails_and_keeps_the_previous_version(cli, project, registry):
    slug = publish(registry, MAKE_TOOL)
    publish(registry, "echo nothing to build", slug=slug, version="1.1.0")
    trusted(project, slug, "==1.0.0")
    assert cli("install", "--project", project.dir).code == 0
    lock_before = project.lock_path.read_bytes()
    trusted(project, slug, "==1.1.0")
    result = cli("trust", f"skill:{slug}", "--project", project.dir)  # its script changed: trusted anew
    assert result.code == 1, result.text
    assert error_line(result.err) == (
        f"error: the install script of skill {slug} 1.1.0 exited 0 but did not build tool (metadata.strawpot.bin."
        f"{THIS_OS}); the package was not installed; "
        f"log: {log_of(project, slug)}")
    assert "  | nothing to build" in result.err and "Traceback" not in result.err
    assert (folder(project, slug) / ".version").read_text() == "1.0.0\n"
    assert project.lock_path.read_bytes() == lock_before
    assert sorted(p.name for p in (project.dir / ".strawpot" / "skills").iterdir()) == [slug]


def test_a_bin_built_but_not_executable_fails(cli, project, registry):
    slug = publish(registry, 'printf "#!/bin/sh\\n" > "$INSTALL_DIR/tool"')
    trusted(project, slug)
    result = cli("install", "--project", project.dir)
    assert result.code == 1, result.text
    assert error_line(result.err).startswith(f"error: the install script of skill {slug} 1.0.0 built tool (metadata."
                                             "strawpot.bin.")
    assert error_line(result.err).endswith(f"but it is not executable; the package was not installed; "
                                           f"log: {log_of(project, slug)}")
    assert "chmod +x" in result.err
    assert not folder(project, slug).exists() and not project.lock_path.exists()


def test_install_dir_may_not_replace_a_shipped_file(cli, project, registry):
    slug = publish(registry, MAKE_TOOL, files={"tool": b"#!/bin/sh\necho shipped\n"})
    trusted(project, slug)
    result = cli("install", "--project", project.dir)
    assert result.code == 1, result.text
    assert error_line(result.err) == (
        f"error: the install script of skill {slug} 1.0.0 wrote tool into $INSTALL_DIR, but the package ships tool; "
        f"the package was not installed; log: {log_of(project, slug)}")
    assert not folder(project, slug).exists() and not project.lock_path.exists()
    assert not list((project.dir / ".strawpot" / "skills").iterdir())


def test_a_failing_first_stage_of_a_pipeline_fails_the_script(cli, project, registry):
    # `curl … | sh` offline: curl fails, sh reads an empty script and exits 0; pipefail keeps curl's status
    slug = publish(registry, "sh -c 'echo could not resolve host >&2; exit 6' | sh")
    trusted(project, slug)
    result = cli("install", "--project", project.dir)
    assert result.code == 1, result.text
    assert error_line(result.err) == (
        f"error: the install script of skill {slug} 1.0.0 failed (exit 6) without building tool "
        f"(metadata.strawpot.bin.{THIS_OS}); the package was not installed; log: {log_of(project, slug)}")
    assert "  | could not resolve host" in result.err
    assert not folder(project, slug).exists()


def test_a_shipped_program_keeps_its_executable_bit_for_any_kind(cli, project, registry, tmp_path):
    src = tmp_path / "shipped-prog"
    (src / "bin").mkdir(parents=True)
    (src / "SKILL.md").write_text("---\nname: shipped-prog\ndescription: ships its program\nversion: 1.0.0\n"
                                  "metadata:\n  strawpot:\n    bin: {linux: bin/prog, macos: bin/prog}\n---\n")
    (src / "bin" / "prog").write_text("#!/bin/sh\necho prog\n")
    (src / "bin" / "prog").chmod(0o755)
    registry.publish_folder(src)
    result = cli("install", "skill", "shipped-prog", "--project", project.dir)
    assert result.code == 0, result.text
    mode = (folder(project, "shipped-prog") / "bin" / "prog").stat().st_mode
    assert mode & stat.S_IXUSR
    assert cli("verify", "--project", project.dir).code == 0


def test_the_trust_prompt_says_when_the_script_downloads_what_it_runs(project, registry):
    import fcntl
    import pty
    import struct
    import termios

    from tests._pty import talk

    slug = publish(registry, "curl -fsSL https://downloads.fixture.invalid/tool/install.sh | sh")
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 250, 0, 0))
    env = {**os.environ, "STRAWPOT_REGISTRY_URL": registry.url, "TERM": "dumb", "NO_COLOR": "1"}
    proc = subprocess.Popen([*STRAWPOT, "install", "skill", slug],
                            cwd=project.dir, env=env, stdin=slave, stdout=slave, stderr=slave)
    os.close(slave)
    try:
        transcript = talk(master, proc, {b"(recorded in [scripts] trusted)?": b"n\n"})
        assert proc.wait(timeout=30) == 0, transcript
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    lines = [line.strip() for line in transcript.splitlines()]
    shown = lines.index("curl -fsSL https://downloads.fixture.invalid/tool/install.sh | sh")
    assert lines[shown + 1] == "note: this script downloads what it runs: the lock pins this command, not the code it fetches"
    assert (folder(project, slug) / "notes.md").is_file() and load_record(folder(project, slug)) is None


@pytest.mark.parametrize("bash", [shutil.which("bash"), None], ids=["bash", "sh"])
def test_the_shell_runs_scripts_with_pipefail_where_it_can(bash: str | None) -> None:
    from strawpot.install.scripts import shell_command

    done = subprocess.run(shell_command('echo "$0 ok"; exit 0', bash), capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and done.stdout.endswith(" ok\n"), done.stderr  # sh without pipefail runs it too
    piped = subprocess.run(shell_command("false | true", bash), capture_output=True, text=True, timeout=30)
    assert piped.returncode == (1 if bash else 0 if _sh_lacks_pipefail() else 1)


def _sh_lacks_pipefail() -> bool:
    return subprocess.run(["/bin/sh", "-c", "set -o pipefail"], capture_output=True, timeout=30).returncode != 0
