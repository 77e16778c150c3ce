"""`strawpot keys` and a signed `strawpot publish` against a live registry on loopback (issue 40 items 1-2)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests._cli import strawpot_here
from tests._live_registry import LiveRegistry, start_registry


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveRegistry]:
    with start_registry(tmp_path / "data") as reg:
        yield reg


def run(live: LiveRegistry, tmp_path: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRAWPOT_")}
    env.update(STRAWPOT_REGISTRY_URL=live.url, STRAWPOT_TOKEN=live.token, STRAWPOT_CONFIG_DIR=str(tmp_path / "config"),
               STRAWPOT_CACHE_DIR=str(tmp_path / "cache"), NO_COLOR="1", COLUMNS="300", **extra)
    return strawpot_here(*args, cwd=tmp_path, env=env)


def package(tmp_path: Path, version: str) -> Path:
    folder = tmp_path / f"pkg-{version}"
    folder.mkdir()
    (folder / "SKILL.md").write_text(f"---\nname: signed-skill\ndescription: A skill.\nversion: {version}\n---\n\nBody.\n")
    return folder


def one_line_error(done: subprocess.CompletedProcess[str], code: int, words: str) -> None:
    assert done.returncode == code, done.stderr
    assert words in done.stderr and "Traceback" not in done.stderr


def test_generate_register_sign_revoke_and_refuse(live: LiveRegistry, tmp_path: Path) -> None:
    made = run(live, tmp_path, "keys", "generate")
    assert made.returncode == 0, made.stderr
    key_file = tmp_path / "config" / "signing-key"
    assert (key_file.stat().st_mode & 0o777) == 0o600
    key_id = made.stdout.split()[0]
    assert key_id.startswith("ed25519:")
    one_line_error(run(live, tmp_path, "keys", "generate"), 2, "a signing key exists already")

    key_file.chmod(0o644)
    loose = run(live, tmp_path, "keys", "register")
    one_line_error(loose, 2, f"the signing key {key_file} has loose permissions (-rw-r--r--)")
    assert len(loose.stderr.strip().splitlines()) <= 2  # the error and its hint
    one_line_error(run(live, tmp_path, "publish", str(package(tmp_path, "0.9.0"))), 2, "loose permissions")
    key_file.chmod(0o600)

    assert run(live, tmp_path, "keys", "register").returncode == 0
    listed = run(live, tmp_path, "keys", "list")
    assert listed.returncode == 0 and listed.stdout.strip() == f"{key_id}  live"

    published = run(live, tmp_path, "publish", str(package(tmp_path, "1.0.0")))
    assert published.returncode == 0, published.stderr
    (version,) = httpx.get(f"{live.url}/api/v1/skills/signed-skill/versions").json()["versions"]
    assert version["provenance"]["keyId"] == key_id and '"publisher":"admin"' in version["provenance"]["statement"]

    assert run(live, tmp_path, "keys", "revoke", key_id).returncode == 0
    one_line_error(run(live, tmp_path, "publish", str(package(tmp_path, "1.1.0"))), 1, "was revoked")

    key_file.unlink()
    one_line_error(run(live, tmp_path, "publish", str(package(tmp_path, "1.2.0"))), 1,
                   "version 1.0.0 was signed and this upload is not")
    allowed = run(live, tmp_path, "publish", "--allow-unsigned", str(package(tmp_path, "1.3.0")))
    assert allowed.returncode == 0, allowed.stderr


def test_a_key_from_the_environment_signs_and_the_registry_can_require_it(tmp_path: Path) -> None:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from strawpot.model.provenance import key_id, private_b64

    key = Ed25519PrivateKey.generate()
    with start_registry(tmp_path / "data", serve_args=["--require-signatures"]) as live:
        unsigned = run(live, tmp_path, "publish", str(package(tmp_path, "1.0.0")))
        one_line_error(unsigned, 1, "this registry takes signed publishes only")
        env_key = {"STRAWPOT_SIGNING_KEY": private_b64(key)}
        assert run(live, tmp_path, "keys", "register", **env_key).returncode == 0
        signed = run(live, tmp_path, "publish", str(package(tmp_path, "1.0.1")), **env_key)
        assert signed.returncode == 0, signed.stderr
        (version,) = httpx.get(f"{live.url}/api/v1/skills/signed-skill/versions").json()["versions"]
        assert version["provenance"]["keyId"] == key_id(key.public_key())
