"""The one way tests run the `strawpot` command: a real subprocess of this interpreter (no stdin, text out), or
main() in the test's own process."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
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
