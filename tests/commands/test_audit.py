"""`strawpot audit` on a project locked against a real registry: a yanked version, one an advisory names and one
younger than `[install] min_release_age` are reported, in text and `--json`, with exit codes by `--fail-on`; and
`strawpot registry advisory add` refuses what it cannot store in one line."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests._cli import strawpot_here
from tests._live_registry import LiveRegistry, start_registry
from tests.commands._aged import backdate
from tests.install._provenance import World, open_world
from tests.install.conftest import Registry


@dataclass
class Fixture:
    live: LiveRegistry
    proj: Path


def run(live: LiveRegistry, proj: Path, *args: str | Path, **env: str) -> subprocess.CompletedProcess[str]:
    return strawpot_here(*args, cwd=proj, extra_env={
        "STRAWPOT_REGISTRY_URL": live.url, "STRAWPOT_CONFIG_DIR": str(proj.parent / "config"),
        "STRAWPOT_CACHE_DIR": str(proj.parent / "cache"), "NO_COLOR": "1", "COLUMNS": "400", **env})


@pytest.fixture(scope="module")
def fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fixture]:
    work = tmp_path_factory.mktemp("audit")
    with start_registry(work / "data") as live:
        reg = Registry(live, work / "packages")
        for slug in ("aud-yanked", "aud-advised", "aud-young", "aud-clean"):
            reg.publish("skill", slug, "1.0.0")
            if slug != "aud-young":
                backdate(live.data_dir, "skill", slug, "1.0.0", days=30)
        proj = work / "proj"
        proj.mkdir()
        (proj / "strawpot.toml").write_text(
            '[skills]\naud-yanked = "*"\naud-advised = "*"\naud-young = "*"\naud-clean = "*"\n', encoding="utf-8")
        done = run(live, proj, "install")
        assert done.returncode == 0, done.stderr
        reg.client.yank("skill", "aud-yanked", "1.0.0")
        reg.client.close()
        added = run(live, proj, "registry", "advisory", "add", "skill:aud-advised", ">=1.0.0, <1.2", "--severity",
                    "moderate", "--summary", "the prompt leaks the user's token", "--data", live.data_dir)
        assert added.returncode == 0, added.stderr
        assert added.stdout.strip().isdigit()
        other = run(live, proj, "registry", "advisory", "add", "skill:aud-clean", "<1.0.0", "--severity",
                    "critical", "--summary", "only old versions", "--data", live.data_dir)
        assert other.returncode == 0, other.stderr
        yield Fixture(live, proj)


def test_audit_reports_yanked_advised_and_too_young(fixture: Fixture) -> None:
    done = run(fixture.live, fixture.proj, "audit", STRAWPOT_INSTALL_MIN_RELEASE_AGE="3d")
    assert done.returncode == 1, done.stderr  # the yanked version is high, the default --fail-on
    lines = done.stdout.splitlines()
    assert lines[0].startswith("high     skill aud-yanked 1.0.0  yanked: "), done.stdout
    assert ("moderate skill aud-advised 1.0.0  advisory: the prompt leaks the user's token (affects >=1.0.0, <1.2)"
            in lines), done.stdout
    assert any(line.startswith("moderate skill aud-young 1.0.0  too_young: published ") and
               line.endswith("younger than [install] min_release_age (3d)") for line in lines), done.stdout
    assert "aud-clean 1.0.0  advisory" not in done.stdout  # its advisory names versions below the locked one
    assert ("low      skill aud-clean 1.0.0  unsigned: no publisher signed this version: nothing proves who "
            "published it") in lines, done.stdout  # every package of this registry was published unsigned
    assert "7 findings in 4 locked packages; 1 at high or above" in done.stderr, done.stderr


def test_audit_json_and_the_threshold(fixture: Fixture) -> None:
    done = run(fixture.live, fixture.proj, "audit", "--json", "--fail-on", "moderate",
               STRAWPOT_INSTALL_MIN_RELEASE_AGE="3d")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["schema_version"] == 2 and report["command"] == "audit"
    assert report["min_release_age"] == "3d" and report["advisories_checked"] is True and report["failing"] == 3
    found = {(f["name"], f["problem"], f["severity"]) for f in report["findings"]}
    assert found == {("aud-yanked", "yanked", "high"), ("aud-advised", "advisory", "moderate"),
                     ("aud-young", "too_young", "moderate"),
                     *((slug, "unsigned", "low") for slug in ("aud-yanked", "aud-advised", "aud-young", "aud-clean"))}
    advisory = next(f for f in report["findings"] if f["problem"] == "advisory")
    assert isinstance(advisory["advisory_id"], int) and advisory["version"] == "1.0.0"
    critical = run(fixture.live, fixture.proj, "audit", "--fail-on", "critical")
    assert critical.returncode == 0, critical.stderr
    assert "too_young" not in critical.stdout  # no cooldown set: nothing is too young
    assert "6 findings in 4 locked packages; 0 at critical or above" in critical.stderr


def test_an_unreachable_registry_is_exit_6_in_one_line(fixture: Fixture) -> None:
    done = run(fixture.live, fixture.proj, "audit", "--registry", "http://127.0.0.1:9",
               STRAWPOT_HTTP_TIMEOUT="5")
    assert done.returncode == 6, done.stderr
    assert done.stderr.splitlines()[0].startswith("error: registry unreachable at http://127.0.0.1:9"), done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_the_advisories_endpoint_filters_by_kind_and_slug(fixture: Fixture) -> None:
    import httpx

    every = httpx.get(f"{fixture.live.url}/api/v1/advisories").json()
    assert every["format"] == 1 and {a["slug"] for a in every["advisories"]} == {"aud-advised", "aud-clean"}
    one = httpx.get(f"{fixture.live.url}/api/v1/advisories", params={"kind": "skill", "slug": "aud-clean"}).json()
    assert [(a["slug"], a["range"], a["severity"]) for a in one["advisories"]] == [("aud-clean", "<1.0.0", "critical")]
    assert isinstance(one["advisories"][0]["createdAt"], int)
    none = httpx.get(f"{fixture.live.url}/api/v1/advisories", params={"kind": "role"}).json()
    assert none["advisories"] == []
    bad = httpx.get(f"{fixture.live.url}/api/v1/advisories", params={"kind": "gadget"})
    assert bad.status_code == 400 and "gadget" in bad.json()["error"]


@pytest.mark.parametrize(("args", "message"), [
    (["skill:aud-advised", "^^1"], "RANGE '^^1': "),
    (["skill:aud-advised", "*"], "RANGE '*': the range is empty or '*'"),
    (["skill:no-such-skill", "<2"], "skill no-such-skill is not a package of this registry"),
    (["gadget:aud-advised", "<2"], "'gadget:aud-advised': unknown package kind 'gadget'"),
    (["skill:aud-advised", "<2", "--severity", "urgent"], "'urgent' is not one of 'low', 'moderate', 'high', "),
])
def test_advisory_add_refuses_in_one_line(fixture: Fixture, args: list[str], message: str) -> None:
    before = run(fixture.live, fixture.proj, "audit", "--json", "--fail-on", "critical")
    severity = [] if "--severity" in args else ["--severity", "high"]
    done = run(fixture.live, fixture.proj, "registry", "advisory", "add", *args, *severity, "--summary", "x",
               "--data", fixture.live.data_dir)
    assert done.returncode == 2, done.stderr
    first = done.stderr.splitlines()[0]
    assert message in first, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    after = run(fixture.live, fixture.proj, "audit", "--json", "--fail-on", "critical")
    assert json.loads(after.stdout)["findings"] == json.loads(before.stdout)["findings"]  # nothing was stored


def test_a_registry_without_advisories_is_said_and_hostile_entries_are_left_out(fixture: Fixture) -> None:
    from tests._proxy import LoopbackProxy

    def missing(status: int, body: bytes) -> tuple[int, bytes]:
        return 404, b'{"error": "no such endpoint: GET /api/v1/advisories"}'

    with LoopbackProxy(fixture.live.url, rewrites={"/api/v1/advisories": missing}) as proxy:
        done = run(fixture.live, fixture.proj, "audit", "--json", "--registry", proxy.url)
    assert done.returncode == 1, done.stderr  # the yanked version is still found
    report = json.loads(done.stdout)
    assert report["advisories_checked"] is False
    assert report["notes"] == [f"{proxy.url} publishes no advisories (no GET /api/v1/advisories)"]
    assert [f["problem"] for f in report["findings"] if f["problem"] != "unsigned"] == ["yanked"]

    def hostile(status: int, body: bytes) -> tuple[int, bytes]:
        good = {"id": 7, "kind": "skill", "slug": "aud-clean", "range": "==1.0.0", "severity": "critical",
                "summary": "\x1b]0;owned\x07really bad"}
        return 200, json.dumps({"format": 1, "advisories": [good, {"id": 8, "kind": "skill"}, "x"]}).encode()

    with LoopbackProxy(fixture.live.url, rewrites={"/api/v1/advisories": hostile}) as proxy:
        done = run(fixture.live, fixture.proj, "audit", "--registry", proxy.url)
    assert done.returncode == 1, done.stderr
    assert "critical skill aud-clean 1.0.0  advisory: really bad (affects ==1.0.0)" in done.stdout.splitlines()
    assert f"note: 2 advisories from {proxy.url} could not be read and were left out" in done.stderr, done.stderr
    assert "\x1b" not in done.stdout


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    yield from open_world(tmp_path)


def test_audit_flags_an_unsigned_upload_of_a_signed_package_and_a_changed_signer(world: World, tmp_path: Path) -> None:
    """Each project installs one version afresh (nothing pinned yet, so install takes it); audit compares its signer
    with the signer of the version before it, as the registry serves them."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from strawpot.model.provenance import key_id

    admins, bobs, bobs_new = (Ed25519PrivateKey.generate() for _ in range(3))
    world.register(admins)
    world.publish("1.0.0", admins)
    bob = world.live.create_token("bob")
    world.sql("UPDATE packages SET owner_id = (SELECT id FROM users WHERE handle = 'bob') WHERE slug = 'kit'")
    world.register(bobs, STRAWPOT_TOKEN=bob)
    world.publish("1.1.0", bobs, STRAWPOT_TOKEN=bob)
    world.publish("1.2.0", None, "--allow-unsigned", STRAWPOT_TOKEN=bob)
    world.register(bobs_new, STRAWPOT_TOKEN=bob)
    world.publish("1.3.0", bobs_new, STRAWPOT_TOKEN=bob)

    def audited(version: str) -> dict[str, str]:
        project = tmp_path / f"proj-{version}"
        project.mkdir()
        (project / "strawpot.toml").write_text(f'[skills]\nkit = "=={version}"\n', encoding="utf-8")
        assert world.run("install", cwd=project).returncode == 0
        done = world.run("audit", "--json", "--fail-on", "critical", cwd=project)
        assert done.returncode == 0, done.stderr
        found = [f for f in json.loads(done.stdout)["findings"] if f["problem"] in ("unsigned", "signer_changed")]
        return {f["problem"]: f"{f['severity']}: {f['summary']}" for f in found}

    assert audited("1.0.0") == {}
    assert audited("1.1.0") == {"signer_changed": "high: signed by bob, but 1.0.0 was signed by admin"}
    assert audited("1.2.0") == {"unsigned": "high: this version is unsigned, but 1.1.0 was signed by bob: an "
                                            "unsigned upload of a signed package (as a leaked token would publish)"}
    assert audited("1.3.0") == {"signer_changed": f"low: signed by a new key of bob ({key_id(bobs_new.public_key())})"
                                                  f"; 1.1.0 was signed by {key_id(bobs.public_key())}"}
