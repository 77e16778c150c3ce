"""`validate --run-wrapper`: run an agent's wrapper `build` for this OS and check what it prints."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from strawpot.model.errors import UsageError
from strawpot.model.kinds import Kind
from strawpot.model.package import Package
from strawpot.model.params import defaults as param_defaults

DEFAULT_TIMEOUT = 30.0
_TAIL_LINES = 15


@dataclass(frozen=True)
class WrapperOutput:
    wrapper: str
    cmd: list[str]
    cwd: str


def current_os() -> str:
    """This machine as named in `metadata.strawpot.bin`: linux, macos or windows."""
    if sys.platform == "darwin":
        return "macos"
    if sys.platform.startswith(("win", "cygwin", "msys")):
        return "windows"
    return "linux"


def sample_arguments(workdir: Path, params: dict[str, Any]) -> list[str]:
    """The WrapperRuntime `build` arguments a runtime would pass, with sample values."""
    working, workspace = workdir / "work", workdir / "workspace"
    working.mkdir(exist_ok=True)
    workspace.mkdir(exist_ok=True)
    return [
        "build",
        "--agent-id", "validate-agent",
        "--working-dir", str(working),
        "--agent-workspace-dir", str(workspace),
        "--role-prompt", "You are the role under test.",
        "--memory-prompt", "",
        "--task", "Say hello.",
        "--config", json.dumps(params),
    ]


def check_wrapper(
    package: Package, root: Path, *, timeout: float = DEFAULT_TIMEOUT, quiet: bool = False
) -> WrapperOutput:
    """Run the wrapper's `build` from a fresh copy of the package in a temp dir; UsageError says what is wrong."""
    if package.kind is not Kind.AGENT:
        raise UsageError(f"--run-wrapper checks an agent's wrapper; {package.name} is a {package.kind.value}")
    os_name = current_os()
    rel = package.bin.get(os_name)
    if rel is None:
        declared = ", ".join(sorted(package.bin)) or "none"
        raise UsageError(
            f"{package.name}: no wrapper for {os_name} (metadata.strawpot.bin.{os_name} is not set; declared: {declared})"
        )
    with tempfile.TemporaryDirectory(prefix="strawpot-wrapper-") as tmp:
        copy = _copy_package(package, Path(tmp) / "package", rel)
        argv = [str(copy / rel), *sample_arguments(Path(tmp), param_defaults(package.params))]
        proc = _run(argv, cwd=Path(tmp), rel=rel, timeout=timeout)
    output = parse_output(rel, proc)
    if not quiet:
        from strawpot.console import out_console

        out_console.print(f"wrapper ok: {rel} build → cmd {output.cmd[0]!r} (+{len(output.cmd) - 1} args), cwd {output.cwd}",
                          markup=False)
    return output


def _copy_package(package: Package, dest: Path, wrapper: str) -> Path:
    """The package as it will be installed: its files, with the wrapper executable."""
    for path, data in package.files.items():
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        if path == wrapper or path in package.executables:
            target.chmod(0o755)
    return dest


def _run(argv: list[str], *, cwd: Path, rel: str, timeout: float) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(
            argv, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout, check=False,
            env={**os.environ, "STRAWPOT_WRAPPER_CHECK": "1"},
        )
    except subprocess.TimeoutExpired as exc:
        raise UsageError(
            f"wrapper {rel}: `build` did not finish within {timeout:g} s" + _tail("stderr", exc.stderr)
        ) from None
    except OSError as exc:
        raise UsageError(
            f"wrapper {rel}: cannot run it: {exc.strerror or exc}",
            hint="is it a script with a `#!` line, or a binary for this OS and CPU?",
        ) from None


def parse_output(rel: str, proc: subprocess.CompletedProcess[bytes]) -> WrapperOutput:
    """Check the `build` result: exit 0 and one JSON object with `cmd` (list of strings) and `cwd` (string)."""
    stderr = _tail("stderr", proc.stderr)
    if proc.returncode != 0:
        raise UsageError(f"wrapper {rel}: `build` exited with status {proc.returncode}{stderr}")
    text = proc.stdout.decode("utf-8", errors="replace").strip()
    if not text:
        raise UsageError(f"wrapper {rel}: `build` printed nothing; it must print {{\"cmd\": [...], \"cwd\": \"...\"}}{stderr}")
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"wrapper {rel}: `build` output is not JSON ({exc}):{_block(text)}{stderr}") from None
    if not isinstance(data, dict):
        raise UsageError(f"wrapper {rel}: `build` must print a JSON object, not a {_json_type(data)}:{_block(text)}")
    problems = []
    missing = [key for key in ("cmd", "cwd") if key not in data]
    if missing:
        problems.append(f"missing key(s): {', '.join(missing)}")
    cmd, cwd = data.get("cmd"), data.get("cwd")
    if "cmd" in data and (not isinstance(cmd, list) or not cmd or not all(isinstance(a, str) for a in cmd)):
        problems.append(f"'cmd' must be a non-empty list of strings, got {json.dumps(cmd)}")
    if "cwd" in data and not isinstance(cwd, str):
        problems.append(f"'cwd' must be a string, got {_json_type(cwd)} {json.dumps(cwd)}")
    if problems:
        raise UsageError(f"wrapper {rel}: `build` output: " + "; ".join(problems) + _block(text))
    assert isinstance(cmd, list) and isinstance(cwd, str)
    return WrapperOutput(rel, cmd, cwd)


def _json_type(value: object) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def _block(text: str, limit: int = 2000) -> str:
    body = text if len(text) <= limit else text[:limit] + " …"
    return "\n  " + body.replace("\n", "\n  ")


def _tail(label: str, raw: bytes | str | None) -> str:
    if not raw:
        return ""
    text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
    lines = text.rstrip().splitlines()[-_TAIL_LINES:]
    return f"\n{label} (last {len(lines)} line(s)):" + _block("\n".join(lines)) if lines else ""
