"""`validate --run-wrapper`: run an agent's wrapper `build` for this OS and check what it prints."""

from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from strawpot.model import own_secrets
from strawpot.model.child_env import EnvPolicy, child_env, secret_values
from strawpot.model.errors import UsageError
from strawpot.model.kinds import Kind
from strawpot.model.package import Package
from strawpot.model.params import defaults as param_defaults
from strawpot.model.platform import current_os
from strawpot.model.plural import count
from strawpot.model.wrapper import BuildOutputError, BuildRequest, indented, parse_build_output

DEFAULT_TIMEOUT = 30.0
_TAIL_LINES = 15


@dataclass(frozen=True)
class WrapperOutput:
    wrapper: str
    cmd: list[str]
    cwd: str
    env: dict[str, str]


def sample_request(workdir: Path, params: dict[str, Any]) -> BuildRequest:
    """The `build` request a runtime would make, with sample values (an empty `--files-dir` among them)."""
    working, workspace, files = workdir / "work", workdir / "workspace", workdir / "files"
    for folder in (working, workspace, files):
        folder.mkdir(exist_ok=True)
    return BuildRequest("validate-agent", working, workspace, "You are the role under test.", "", "Say hello.", params,
                        files_dirs=[files])


def check_wrapper(
    package: Package, root: Path, *, timeout: float = DEFAULT_TIMEOUT
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
    if rel not in package.files:
        raise UsageError(
            f"{package.name}: the wrapper {rel} for {os_name} is built by metadata.strawpot.install.{os_name}, "
            "not shipped; --run-wrapper checks shipped wrappers only",
            hint="ship the wrapper in the package to check it here, or install the agent with its script trusted",
        )
    with tempfile.TemporaryDirectory(prefix="strawpot-wrapper-") as tmp:
        copy = _copy_package(package, Path(tmp) / "package", rel)
        request = sample_request(Path(tmp), param_defaults(package.params))
        proc = _run([str(copy / rel), *request.argv()], cwd=Path(tmp), rel=rel, timeout=timeout)
        output = _output(rel, proc, request.working_dir)
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
            env=child_env(os.environ, EnvPolicy(secrets=secret_values(own_secrets.environ())),
                          protocol={"STRAWPOT_WRAPPER_CHECK": "1"}),
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


def _output(rel: str, proc: subprocess.CompletedProcess[bytes], working_dir: Path) -> WrapperOutput:
    """`build` must exit 0 and print what `strawpot.model.wrapper` accepts (the runtime's own check)."""
    stderr = _tail("stderr", proc.stderr)
    if proc.returncode != 0:
        raise UsageError(f"wrapper {rel}: `build` exited with status {proc.returncode}{stderr}")
    try:
        spec = parse_build_output(proc.stdout.decode("utf-8", errors="replace"), working_dir)
    except BuildOutputError as exc:
        raise UsageError(f"wrapper {rel}: `build` {exc}{stderr}") from None
    return WrapperOutput(rel, spec.cmd, spec.cwd, spec.env)


def _tail(label: str, raw: bytes | str | None) -> str:
    if not raw:
        return ""
    text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
    lines = text.rstrip().splitlines()[-_TAIL_LINES:]
    return f"\n{label} (last {count(len(lines), 'line')}):" + indented("\n".join(lines)) if lines else ""
