"""`registry serve --upstream*` refuses what it cannot use in one line (exit 2), before it creates anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._cli import strawpot


@pytest.mark.parametrize(("args", "line"), [
    (["--upstream", "ftp://x"], "error: --upstream: registry.upstream must be a list like"),
    (["--upstream", "http://x", "--upstream-cache-max", "12Q"],
     "error: --upstream-cache-max: '12Q' is not a size (bytes, or a number with K, M, G or T: 500M)"),
    (["--upstream-cache-max", "1G"], "error: --upstream-cache-max needs --upstream URL"),
    (["--upstream", "http://x", "--blobs", "s3://bucket"], "error: --blobs s3://bucket: a mirror needs a prefix"),
])
def test_serve_refuses_an_upstream_it_cannot_use(tmp_path: Path, args: list[str], line: str) -> None:
    done = strawpot("registry", "serve", "--port", "0", "--data", tmp_path / "data", *args, cwd=tmp_path,
                    extra_env={"STRAWPOT_CONFIG_DIR": str(tmp_path / "config")})
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(line) and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "data").exists()
