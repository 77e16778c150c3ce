"""`pip install strawpot` with no extras, in an empty venv: none of the registry backends or the test tooling comes
along, and its `strawpot` runs the demo (registry serve on SQLite, publish, install and lock, a headless session)
and then lock and a headless session with the stub agent. pip installs from a wheelhouse of pyproject's requirements
that `pip download` fills from PyPI once a day (`_wheelhouse`)."""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

import pytest

from tests._cli import strawpot
from tests._short_paths import short_folder
from tests._tour import VENV, clean_env, copy_tracked_files

# The PostgreSQL and S3 backends (extras), the test tooling, and a dependency nothing imports any more.
NOT_INSTALLED = ("psycopg", "psycopg_pool", "boto3", "botocore", "moto", "selenium", "mypy", "mcp", "grpc_tools",
                 "frontmatter")
PRESENT = ("strawpot", "httpx", "grpc", "starlette", "uvicorn", "wsproto", "jinja2", "rich_click")


def _run(command: list[str | Path], *, cwd: Path, env: dict[str, str], timeout: float) -> str:
    done = subprocess.run([str(part) for part in command], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, f"{command}: exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def _wheelhouse(checkout: Path, *, env: dict[str, str]) -> Path:
    """The wheels of what pyproject.toml requires (to build and to run), as `pip download` resolves them today: kept
    in the user's cache, one folder a day per requirement list and Python, so the install resolves from it without
    the index (pip's own cache is not kept on every machine, and parsing PyPI's page of grpcio alone takes 5 s)."""
    project = tomllib.loads((checkout / "pyproject.toml").read_text(encoding="utf-8"))
    requirements = [*project["build-system"]["requires"], *project["project"]["dependencies"]]
    key = json.dumps([requirements, sys.version_info[:2], platform.machine(), datetime.date.today().isoformat()])
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "strawpot-tests"
    house = cache / f"fresh-install-wheels-{hashlib.sha256(key.encode()).hexdigest()[:16]}"
    if house.is_dir():
        return house
    cache.mkdir(parents=True, exist_ok=True)
    filling = Path(tempfile.mkdtemp(prefix=".filling-", dir=cache))
    try:
        _run([sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--quiet", "--dest", filling,
              *requirements], cwd=filling, env=env, timeout=600)
        for old in cache.glob("fresh-install-wheels-*"):  # another checkout's may be in use: only old ones go
            with contextlib.suppress(OSError):  # another run may remove it first
                if old != house and old.stat().st_mtime < time.time() - 3 * 86400:
                    shutil.rmtree(old, ignore_errors=True)
        filling.rename(house)  # whole or not at all; another run may have put its own there first
    except OSError:
        if not house.is_dir():
            raise
    finally:
        shutil.rmtree(filling, ignore_errors=True)
    return house


def _found(python: Path, modules: tuple[str, ...], *, cwd: Path, env: dict[str, str]) -> dict[str, str | None]:
    """Where each module would be imported from in that venv (None: it is not installed)."""
    probe = ("import importlib.util, json, sys\n"
             "specs = {m: importlib.util.find_spec(m) for m in sys.argv[1:]}\n"
             "print(json.dumps({m: s and (s.origin or str(list(s.submodule_search_locations or [])))"
             " for m, s in specs.items()}))")
    return dict(json.loads(_run([python, "-P", "-c", probe, *modules], cwd=cwd, env=env, timeout=60)))


@pytest.mark.e2e
@pytest.mark.timeout(900)  # 75-85 s on an idle machine; the suite's 300 s is too near on a loaded one
def test_a_plain_pip_install_runs_the_client_and_a_sqlite_registry() -> None:
    with short_folder("sp-fresh-") as scratch:
        checkout, venv = scratch / "checkout", scratch / "checkout" / ".venv"
        copy_tracked_files(checkout)  # the working tree as it is; demo.py runs `strawpot` from its .venv/bin
        pip_env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
        # this interpreter's pip installs into the venv (`pip --python`): seeding the venv with its own pip takes 6 s
        _run([sys.executable, "-m", "venv", "--without-pip", venv], cwd=scratch, env=pip_env, timeout=300)
        _run([sys.executable, "-m", "pip", "--python", venv / "bin" / "python", "install", "--disable-pip-version-check",
              "--quiet", "--no-index", "--find-links", _wheelhouse(checkout, env=pip_env), checkout],
             cwd=scratch, env=pip_env, timeout=600)

        env = clean_env(scratch, checkout)
        del env["PYTHONPATH"]  # the installed wheel runs, not the checkout's source
        found = _found(venv / "bin" / "python", NOT_INSTALLED + PRESENT, cwd=scratch, env=env)
        assert {m: found[m] for m in NOT_INSTALLED} == dict.fromkeys(NOT_INSTALLED), found
        assert all(found[m] and Path(str(found[m]).strip("[]'")).is_relative_to(venv) for m in PRESENT), found

        demo = _run([venv / "bin" / "python", checkout / "scripts" / "demo.py"], cwd=checkout, env=env,
                    timeout=600)
        assert "demo finished" in demo and "fake-coder[implementer]" in demo, demo[-3000:]

        project, program = checkout / ".demo" / "project", [str(venv / "bin" / "strawpot")]
        lock = strawpot("lock", cwd=project, env=env, program=program)
        assert lock.returncode == 0 and "strawpot.lock is up to date (15 packages)" in lock.stderr, lock.stderr
        start = strawpot("start", "--role", "lead", "--runtime", "stub-agent", "--headless", "--task", "echo:hello",
                         cwd=project, env=env, program=program)
        assert start.returncode == 0 and start.stdout.strip() == "hello", (start.stdout, start.stderr)
        assert "succeeded (exit code 0)" in start.stderr, start.stderr


@pytest.mark.e2e
@pytest.mark.timeout(900)  # a pip install, as above
def test_the_demos_set_up_installs_strawpot_alone(tmp_path: Path) -> None:
    """scripts/bootstrap.sh as scripts/demo.sh runs it, in a checkout with no .venv: strawpot and what it runs."""
    checkout = tmp_path / "checkout"
    copy_tracked_files(checkout)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if p and not Path(p).resolve().is_relative_to(VENV.resolve()))
    done = subprocess.run(["bash", "scripts/bootstrap.sh"], cwd=checkout, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=600, check=False)
    log = checkout / ".venv" / "bootstrap.log"
    assert done.returncode == 0, done.stderr + (log.read_text()[-3000:] if log.exists() else "")
    assert done.stderr == "setting up .venv (log: .venv/bootstrap.log)\n", done.stderr
    python = checkout / ".venv" / "bin" / "python"
    found = _found(python, NOT_INSTALLED + PRESENT, cwd=tmp_path, env=env)
    assert {m: found[m] for m in NOT_INSTALLED} == dict.fromkeys(NOT_INSTALLED), found
    assert str(found["strawpot"]).startswith(str(checkout / "strawpot")), found  # editable: the checkout's code
    assert (checkout / ".venv" / ".strawpot-installed").is_file()
    assert not (checkout / ".venv" / ".strawpot-test-installed").exists()  # scripts/test.sh adds the test extra
    version = strawpot("--version", cwd=tmp_path, env=env, program=[str(checkout / ".venv" / "bin" / "strawpot")])
    assert version.returncode == 0 and version.stdout.startswith("strawpot, version"), version.stderr
