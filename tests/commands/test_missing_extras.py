"""A registry backend whose extra is not installed (`strawpot[postgres]`, `strawpot[s3]`) is one line naming the
extra and exit 7; the SQLite registry and the client need neither, so they run without them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._cli import strawpot

BACKENDS = ("psycopg", "psycopg_pool", "boto3", "botocore")


@pytest.fixture
def without_backends(tmp_path: Path, env: dict[str, str]) -> dict[str, str]:
    """The CLI's environment, in which the backends' modules cannot be imported, as in `pip install strawpot`."""
    site = tmp_path / "site"
    site.mkdir()
    # None in sys.modules: `import psycopg` raises ModuleNotFoundError, exactly as when it is not installed
    (site / "sitecustomize.py").write_text(f"import sys\nsys.modules.update(dict.fromkeys({BACKENDS!r}))\n")
    return {**env, "PYTHONPATH": str(site)}


def test_the_block_stands_in_for_a_missing_module(tmp_path: Path, without_backends: dict[str, str]) -> None:
    import subprocess
    import sys

    probe = subprocess.run([sys.executable, "-c", "import psycopg"], env=without_backends, cwd=tmp_path,
                           capture_output=True, text=True, check=False)
    assert probe.returncode == 1 and "ModuleNotFoundError" in probe.stderr, probe.stderr


def test_the_sqlite_registry_needs_no_backend_extra(tmp_path: Path, without_backends: dict[str, str]) -> None:
    data = tmp_path / "registry-data"
    made = strawpot("registry", "token", "create", "--user", "me", "--admin", "--data", data, cwd=tmp_path,
                    env=without_backends)
    assert made.returncode == 0 and made.stdout.strip(), made.stderr
    migrated = strawpot("registry", "migrate", "--data", data, cwd=tmp_path, env=without_backends)
    assert migrated.returncode == 0 and migrated.stdout.startswith("schema version"), migrated.stderr


@pytest.mark.parametrize(("flags", "extra"), [
    (["--database", "postgresql://me:s3cret@127.0.0.1:1/registry"], "postgres"),
    (["--blobs", "s3://bucket/blobs", "--s3-endpoint", "http://127.0.0.1:1"], "s3"),
    (["--database", "postgresql://me:s3cret@127.0.0.1:1/registry", "--blobs", "s3://bucket"], "postgres,s3"),
])
@pytest.mark.parametrize("command", [["serve", "--port", "0"], ["migrate"], ["token", "create", "--user", "me"]])
def test_a_missing_backend_extra_is_one_line_naming_it(tmp_path: Path, without_backends: dict[str, str],
                                                        command: list[str], flags: list[str], extra: str) -> None:
    data = tmp_path / "registry-data"
    result = strawpot("registry", *command, "--data", data, *flags, cwd=tmp_path, env=without_backends)
    assert result.returncode == 7, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith("error: ") and line.endswith(f"pip install 'strawpot[{extra}]'"), line
    for flag in ("--database", "--blobs"):
        assert (flag in line) == (flag in flags), line  # where: the flag that asked for it
    assert "s3cret" not in line and not data.exists()


def test_registry_serve_s_help_names_the_extras_its_backends_need(tmp_path: Path, env: dict[str, str]) -> None:
    shown = strawpot("registry", "serve", "--help", cwd=tmp_path, env=env)
    text = " ".join(shown.stdout.split())
    assert shown.returncode == 0 and "strawpot[postgres]" in text and "strawpot[s3]" in text
