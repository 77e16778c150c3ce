"""Run one package's install script as its author wrote it, and check that it built what the package declares.

The script runs with cwd = the staged package folder (so `sh ./build.sh` finds its files) and `INSTALL_DIR` =
a fresh empty folder beside it: a script that downloads into the current directory and then moves the file to
`$INSTALL_DIR` (the published Claude Code wrapper's does) works, where cwd = INSTALL_DIR made GNU `mv` refuse
"the same file". After exit 0, what the script put in `INSTALL_DIR` is moved into the package folder (never over
a file the package ships), and the package's `bin` for this OS must exist and be executable. The command runs
under `pipefail` (bash when present), so `curl … | sh` with a failing curl fails instead of building nothing.

The script runs in its own process group (a new session) so a timeout or Ctrl-C ends it and everything
it started. Its output goes straight to the log file, never through our memory, however much it prints.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import stat
import subprocess
import tempfile
from collections.abc import Collection
from pathlib import Path

from sandbox.walls import SandboxSettings
from strawpot.model.child_env import EnvPolicy, child_env
from strawpot.model.display import terminal_safe
from strawpot.model.errors import StrawpotError
from valueclass import Record

TAIL_LINES = 15
_TAIL_BYTES = 8192
INSTALL_DIR_PREFIX = ".tmp-install-"  # beside the staged folders: `recover` removes what a killed run left


class ScriptFailed(StrawpotError):
    """An install script exited non-zero, ran past its timeout or did not build its `bin` (exit 1); the
    message ends with its log."""


class ScriptRun(Record):
    """What ran, where its output is, and the program it must build (`bin` for this OS, if any)."""

    what: str  # "agent fixture-coder 0.1.0"
    script: str
    log: Path
    bin: str | None = None  # relative to the package folder
    os_name: str = ""
    env_policy: EnvPolicy | None = None  # [session] pass_env / hide_env: the script inherits an allow-list only
    venv: bool = False  # an integration: the script runs with the package's own virtual environment first on PATH


def run_script(run: ScriptRun, package_dir: Path, *, timeout: float, shipped: Collection[str] = (),
               sandbox: SandboxSettings | None = None) -> None:
    """Run `run.script` in `package_dir` with a fresh INSTALL_DIR, move what it put there into `package_dir`
    and check `run.bin`; raise ScriptFailed (naming the log) if any step fails. `shipped` are the package's
    own files, which INSTALL_DIR may not replace. In a `sandbox` ([scripts] sandbox) the script may write only
    those two folders and a private /tmp (MissingToolError, exit 7, when the sandbox cannot work here)."""
    path_first = None
    if run.venv:
        from strawpot.install.venv import make_venv

        path_first = make_venv(package_dir, run.what, shipped)
    install_dir = Path(tempfile.mkdtemp(prefix=INSTALL_DIR_PREFIX, dir=package_dir.parent))
    try:
        code = _run(run, package_dir, install_dir, timeout=timeout, sandbox=sandbox or SandboxSettings(),
                    path_first=path_first)
        if code != 0:
            unbuilt = run.bin is not None and not any(os.path.lexists(d / run.bin) for d in (package_dir, install_dir))
            raise ScriptFailed(
                f"the install script of {run.what} failed (exit {code})"
                + (f" without building {run.bin} ({_declared(run)})" if unbuilt else "")
                + f"; the package was not installed; log: {run.log}" + _tail(run.log),
            )
        _move_outputs(run, install_dir, package_dir, set(shipped))
    finally:
        shutil.rmtree(install_dir, ignore_errors=True)
    _check_bin(run, package_dir)


def _declared(run: ScriptRun) -> str:
    return f"metadata.strawpot.bin.{run.os_name}" if run.os_name else "metadata.strawpot.bin"


def shell_command(script: str, bash: str | None) -> list[str] | str:
    """The argv that runs `script` with pipefail: `bash` if given, else sh, with pipefail when it has it (a
    failing `set` would end dash, so it is tried in a subshell first); on Windows the platform shell."""
    if os.name != "posix":  # pragma: no cover - the platform shell
        return script
    if bash is not None:
        return [bash, "-o", "pipefail", "-c", script]
    return ["/bin/sh", "-c", f"(set -o pipefail) 2>/dev/null && set -o pipefail\n{script}"]


def _run(run: ScriptRun, package_dir: Path, install_dir: Path, *, timeout: float, sandbox: SandboxSettings,
         path_first: Path | None = None) -> int:
    """Run the command to its end (or its timeout: ScriptFailed); its exit code. `path_first`: a virtual
    environment's bin folder, first on PATH (so `pip` and `python` are its own)."""
    run.log.parent.mkdir(parents=True, exist_ok=True)
    env = child_env(os.environ, run.env_policy, protocol={"INSTALL_DIR": str(install_dir)})
    if path_first is not None:
        env["PATH"] = os.pathsep.join([str(path_first), *filter(None, [env.get("PATH")])])
        env["VIRTUAL_ENV"] = str(path_first.parent)
        env.pop("PYTHONHOME", None)
        env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"  # no request to PyPI beyond what the command asks for
    env.pop("BASH_ENV", None)  # bash -c would source it first
    command = shell_command(run.script, shutil.which("bash"))
    if sandbox.confined and isinstance(command, list):
        home = Path(env["HOME"]) if env.get("HOME") else None
        command = sandbox.sandbox.command(command, sandbox.walls(home, writable=(package_dir, install_dir)), package_dir)
    with open(run.log, "wb") as log:
        log.write(f"$ {run.script}\n".encode())
        log.flush()
        process = subprocess.Popen(  # noqa: S602 - the package's install script, run only once trusted
            command, shell=isinstance(command, str), cwd=package_dir, env=env, stdin=subprocess.DEVNULL,
            stdout=log, stderr=subprocess.STDOUT, start_new_session=os.name == "posix",
        )
        try:
            code = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            raise ScriptFailed(
                f"the install script of {run.what} ran longer than {timeout:g} s and was stopped; "
                f"the package was not installed; log: {run.log}" + _tail(run.log),
                hint="raise [scripts] timeout in strawpot.toml if it needs longer",
            ) from None
        except BaseException:  # Ctrl-C, or anything else: the script must not outlive us
            _kill_group(process)
            raise
    return code


def _move_outputs(run: ScriptRun, install_dir: Path, package_dir: Path, shipped: set[str]) -> None:
    """Move every file and link under `install_dir` to the same place in `package_dir`; all or none are
    checked first: one that would replace a shipped file (or sit under one) fails the install."""
    moves: list[tuple[Path, Path]] = []
    for dirpath, dirnames, filenames in os.walk(install_dir):
        base = Path(dirpath)
        links = [d for d in dirnames if (base / d).is_symlink()]
        for name in [*filenames, *links]:
            source = base / name
            rel = source.relative_to(install_dir).as_posix()
            parts = rel.split("/")
            clash = next((p for p in ("/".join(parts[:i]) for i in range(1, len(parts) + 1)) if p in shipped), None)
            if clash is not None:
                raise ScriptFailed(
                    f"the install script of {run.what} wrote {rel} into $INSTALL_DIR, but the package ships "
                    f"{clash}; the package was not installed; log: {run.log}",
                    hint="build it under another name, or stop shipping the file (report it to the package's author)",
                )
            moves.append((source, package_dir / rel))
    for source, target in moves:
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)  # a folder the script made in the package folder, named like its output
        os.replace(source, target)


def _check_bin(run: ScriptRun, package_dir: Path) -> None:
    """The declared program exists and is executable, or the script did not do its job."""
    if run.bin is None:
        return
    path = package_dir / run.bin
    declared = _declared(run)
    try:
        mode = path.stat().st_mode
    except OSError:
        raise ScriptFailed(
            f"the install script of {run.what} exited 0 but did not build {run.bin} ({declared}); "
            f"the package was not installed; log: {run.log}" + _tail(run.log),
        ) from None
    if not stat.S_ISREG(mode) or not mode & stat.S_IXUSR:
        what = "is not a file" if not stat.S_ISREG(mode) else "is not executable"
        raise ScriptFailed(
            f"the install script of {run.what} built {run.bin} ({declared}), but it {what}; "
            f"the package was not installed; log: {run.log}",
            hint="the script must `chmod +x` what it builds (report it to the package's author)",
        )


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    if os.name == "posix":
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
    else:  # pragma: no cover - no process groups to kill
        process.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=10)


def _tail(log: Path) -> str:
    """The last lines of a log (read from its end only, whatever its size), indented."""
    try:
        with open(log, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - _TAIL_BYTES))
            data = fh.read()
    except OSError:
        return ""
    text = data.decode("utf-8", errors="replace")
    lines = [terminal_safe(line) for line in text.splitlines()[-TAIL_LINES:]]
    return "".join(f"\n  | {line[:400]}" for line in lines)
