"""The one way tests run the `strawpot` command: a real subprocess of this interpreter (no stdin, text out), or
main() in the test's own process (with a process's environment and folder, or under the test's monkeypatch)."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest

# -P: the folder it runs in is not on sys.path, as for the installed `strawpot` (a project cannot shadow a module)
STRAWPOT: list[str] = [sys.executable, "-P", "-m", "strawpot.cli"]


def strawpot(*args: str | Path, cwd: str | Path, env: Mapping[str, str] | None = None,
             extra_env: Mapping[str, str] | None = None, timeout: float = 90,
             stdin: int | None = subprocess.DEVNULL, input: str | None = None,
             program: Sequence[str] = STRAWPOT) -> subprocess.CompletedProcess[str]:
    """Run `strawpot ARGS` in `cwd` and wait: `env` replaces this process's environment, `extra_env` adds to it;
    `input` is the text on its stdin (else `stdin`, no stdin by default); `program` is another installation's
    `strawpot` (its console script), when not this interpreter's."""
    environ = {**(os.environ if env is None else env), **(extra_env or {})}
    return subprocess.run([*program, *map(str, args)], cwd=cwd, env=environ, input=input,
                          stdin=None if input is not None else stdin, capture_output=True, text=True,
                          encoding="utf-8", errors="replace", timeout=timeout, check=False)


def in_process(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    """`strawpot ARGS` through main() in this process (monkeypatch and respx reach it): its exit code, stdout and
    stderr; output printed before the call is dropped, and a traceback fails the test."""
    from strawpot.cli import main

    capsys.readouterr()
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err
    return code, out, err


def strawpot_here(*args: str | Path, cwd: str | Path, env: Mapping[str, str] | None = None,
                  extra_env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`strawpot(...)` through main() in this process, for a test about what a command says and does rather than
    about the process (its signals, its start-up, its stdin): for the call, the environment is exactly what
    `strawpot(...)` would give the subprocess, the working folder is `cwd`, stdin is empty and the consoles are a
    fresh process's. An interpreter start-up saved per call; a traceback fails the test (it escapes)."""
    from strawpot.cli import main

    environ = {**(os.environ if env is None else env), **(extra_env or {})}
    out, err = io.StringIO(), io.StringIO()
    with _as_a_process(environ, Path(cwd)), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in args])
        except SystemExit as exc:  # as the interpreter turns it into an exit code
            code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
    return subprocess.CompletedProcess(["strawpot", *map(str, args)], code, out.getvalue(), err.getvalue())


@contextlib.contextmanager
def _as_a_process(environ: Mapping[str, str], cwd: Path) -> Iterator[None]:
    from strawpot import console

    saved_env, saved_cwd, saved_stdin = dict(os.environ), os.getcwd(), sys.stdin
    consoles = (console.out_console, console.err_console)
    os.environ.clear()
    os.environ.update(environ)
    os.chdir(cwd)
    sys.stdin = io.StringIO()
    for made in consoles:  # a new process makes its consoles on first use, for its own streams and COLUMNS
        object.__setattr__(made, "_real", None)
        object.__setattr__(made, "_quiet", False)
    try:
        yield
    finally:
        for made in consoles:
            object.__setattr__(made, "_real", None)
            object.__setattr__(made, "_quiet", False)
        sys.stdin = saved_stdin
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
