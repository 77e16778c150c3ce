"""A mirror passes upstream's signed statements and log indexes through, naming upstream's log, and answers for
that log and upstream's keys; installs through it check them against upstream's log (issue 40 item 4)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path

import httpx
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from strawpot.model.provenance import key_id, private_b64
from tests._cli import strawpot_here
from tests._live_registry import LiveRegistry, start_registry, stop_server


def run(base: Path, registry: LiveRegistry, *args: str, cwd: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRAWPOT_")}
    env.update(STRAWPOT_REGISTRY_URL=registry.url, STRAWPOT_TOKEN=registry.token, NO_COLOR="1", COLUMNS="300",
               STRAWPOT_CONFIG_DIR=str(base / "config"), STRAWPOT_CACHE_DIR=str(base / "cache"))
    env.update(extra)
    return strawpot_here(*args, cwd=cwd, env=env)


def project(base: Path) -> Path:
    folder = base / "project"
    folder.mkdir(parents=True)
    return folder


def publish_signed_kit(tmp_path: Path, up: LiveRegistry) -> Ed25519PrivateKey:
    """Register a new key on the upstream and publish skill kit 1.0.0 there signed with it."""
    key = Ed25519PrivateKey.generate()
    signing = {"STRAWPOT_SIGNING_KEY": private_b64(key)}
    assert run(tmp_path, up, "keys", "register", cwd=tmp_path, **signing).returncode == 0
    source = tmp_path / "kit"
    source.mkdir()
    (source / "SKILL.md").write_text("---\nname: kit\ndescription: A skill.\nversion: 1.0.0\n---\n\nBody.\n")
    assert run(tmp_path, up, "publish", str(source), cwd=tmp_path, **signing).returncode == 0
    return key


def test_an_install_through_a_mirror_checks_upstreams_statement_against_upstreams_log(tmp_path: Path) -> None:
    with start_registry(tmp_path / "up") as up:
        key = publish_signed_kit(tmp_path, up)
        plain = httpx.post(f"{up.url}/api/v1/log/proofs", json={"indexes": [0], "log": up.url})
        assert plain.status_code == 400 and "mirrors no upstream" in plain.json()["error"]
        with start_registry(tmp_path / "mirror", serve_args=["--upstream", up.url, "--upstream-ttl", "3600"]) as mirror:
            first = tmp_path / "first"
            done = run(first, mirror, "install", "skill", "kit", cwd=project(first))
            assert done.returncode == 0, done.stderr
            lock = (first / "project" / "strawpot.lock").read_text()
            assert f'signer = {{ key = "{key_id(key.public_key())}", handle = "admin" }}' in lock
            assert f'log-index = 1\nlog = "{up.url}"' in lock
            verified = run(first, mirror, "verify", cwd=first / "project")
            assert "signers: 1 signed version checked offline" in verified.stderr, verified.stderr

            # the mirror alters the statement it passes through: upstream's log names another one
            with sqlite3.connect(mirror.data_dir / "registry.sqlite3") as db:
                (body,) = db.execute("SELECT body FROM upstream_packages WHERE slug = 'kit'").fetchone()
                document = json.loads(body)
                prov = document["versions"][0]["provenance"]
                prov["statement"] = prov["statement"].replace('"version":"1.0.0"', '"version":"1.0.1"')
                db.execute("UPDATE upstream_packages SET body = ?", (json.dumps(document),))
                db.execute("UPDATE registry_changes SET seq = seq + 1 WHERE id = 1")
            second = tmp_path / "second"
            done = run(second, mirror, "install", "skill", "kit", cwd=project(second))
            assert done.returncode == 5, done.stderr
            (error,) = [line for line in done.stderr.splitlines() if line.startswith("error:")]
            assert error == (f"error: provenance check failed for {up.url}: the log entry 1 does not match skill kit "
                             "1.0.0: its statement sha256 differ"), done.stderr
            assert not (second / "project" / "strawpot.lock").exists()

            stranger = httpx.post(f"{mirror.url}/api/v1/log/proofs", json={"indexes": [0], "log": "http://127.0.0.1:9"})
            assert stranger.status_code == 400 and "mirrors no upstream" in stranger.json()["error"]

            # upstream down: the mirror still serves kit from its cache, but cannot prove it; said in one line
            stop_server(up.process)
            third = tmp_path / "third"
            done = run(third, mirror, "install", "skill", "kit", cwd=project(third))
            assert done.returncode == 6, done.stderr
            (error,) = [line for line in done.stderr.splitlines() if line.startswith("error:")]
            assert error.startswith(f"error: cannot check the provenance of the packages the registry mirrors from "
                                    f"{up.url}: upstream log {up.url}: "), done.stderr
            assert not (third / "project" / "strawpot.lock").exists()


def test_a_mirror_of_a_mirror_forwards_the_log_question_up_the_chain(tmp_path: Path) -> None:
    with start_registry(tmp_path / "up") as up:
        key = publish_signed_kit(tmp_path, up)
        with start_registry(tmp_path / "near", serve_args=["--upstream", up.url]) as near, \
                start_registry(tmp_path / "far", serve_args=["--upstream", near.url]) as far:
            client = tmp_path / "client"
            done = run(client, far, "install", "skill", "kit", cwd=project(client))
            assert done.returncode == 0, done.stderr
            lock = (client / "project" / "strawpot.lock").read_text()
            assert f'signer = {{ key = "{key_id(key.public_key())}", handle = "admin" }}' in lock
            assert f'log = "{up.url}"' in lock
