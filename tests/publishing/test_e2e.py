"""End to end on loopback: publish a skill, a role and an agent; install and run the agent; yank; strawhub installs it."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import httpx
import pytest

from strawpot.model.archive import read_archive
from strawpot.publishing.prepare import set_frontmatter_version
from tests._cli import strawpot

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
STRAWHUB = shutil.which("strawhub", path=str(Path(sys.executable).parent))

SKILLS = ("git-workflow", "diff-reading", "github-pr")  # diff-reading and github-pr depend on git-workflow^1.0


@pytest.fixture(scope="module")
def published(module_registry, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The story's registry with three skills, the role `scout` (needs two of them) and stub-agent 0.1.0."""
    reg = module_registry
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STRAWPOT_", "STRAWHUB_"))}
    home = tmp_path_factory.mktemp("publisher")
    env.update(STRAWPOT_TOKEN=reg.token, STRAWPOT_REGISTRY_URL=reg.url, STRAWPOT_CONFIG_DIR=str(home / "config"),
               STRAWPOT_CACHE_DIR=str(home / "cache"), HOME=str(home), NO_COLOR="1")
    jobs = [[str(FIXTURES / "skills" / s)] for s in SKILLS]
    jobs += [[str(FIXTURES / "roles" / "scout")], [str(FIXTURES / "agents" / "stub-agent"), "--version", "0.1.0"]]
    outputs = []
    for job in jobs:
        result = strawpot("publish", *job, env=env, cwd=home, timeout=120)
        assert result.returncode == 0, result.stderr
        outputs.append(result.stdout.strip())
    assert outputs == [
        f"published skill git-workflow 1.0.0 to {reg.url} (1 file, {_size('skills/git-workflow')} bytes)",
        f"published skill diff-reading 1.0.0 to {reg.url} (1 file, {_size('skills/diff-reading')} bytes)",
        f"published skill github-pr 1.0.0 to {reg.url} (1 file, {_size('skills/github-pr')} bytes)",
        f"published role scout 1.0.0 to {reg.url} (1 file, {_size('roles/scout')} bytes)",
        f"published agent stub-agent 0.1.0 to {reg.url} (5 files, {_size('agents/stub-agent', AGENT_MAIN)} bytes)",
    ]
    return {"url": reg.url, "token": reg.token}


def _size(rel: str, main: str | None = None) -> int:
    """Bytes in a fixture package, with its main file replaced by `main` when given."""
    files = [p for p in (FIXTURES / rel).rglob("*") if p.is_file()]
    if main is None:
        return sum(p.stat().st_size for p in files)
    return sum(p.stat().st_size for p in files if p.name != "AGENT.md") + len(main.encode())


# stub-agent goes up with --version 0.1.0, so its uploaded AGENT.md says `version: 0.1.0`
AGENT_MAIN = set_frontmatter_version((FIXTURES / "agents" / "stub-agent" / "AGENT.md").read_text(), "0.1.0")


def _project(env, name: str, manifest: str = "") -> Path:
    project = env.root / name
    project.mkdir()
    if manifest:
        (project / "strawpot.toml").write_text(manifest)
    return project


def test_the_registry_has_what_was_published(published: dict[str, str]) -> None:
    url = published["url"]
    role = httpx.get(f"{url}/api/v1/roles/scout").json()
    assert role["latestVersion"]["version"] == "1.0.0"
    versions = httpx.get(f"{url}/api/v1/skills/diff-reading/versions").json()["versions"]
    assert [(v["version"], v["dependencies"]) for v in versions] == [("1.0.0", {"skills": ["git-workflow"]})]
    agent = httpx.get(f"{url}/api/v1/agents/stub-agent/versions").json()["versions"][0]
    assert {f["path"]: f["executable"] for f in agent["files"]}["bin/stub-wrapper"] is True
    assert not {f["path"]: f["executable"] for f in agent["files"]}["AGENT.md"]
    archive = httpx.get(f"{url}/api/v1/agents/stub-agent/versions/0.1.0/archive").content
    members = {m.path: m for m in read_archive(archive)}
    assert members["bin/stub-wrapper"].executable is True
    assert members["bin/stub-wrapper"].data == (FIXTURES / "agents/stub-agent/bin/stub-wrapper").read_bytes()
    # --version was written into the uploaded main file's frontmatter
    assert members["AGENT.md"].data.decode() == AGENT_MAIN
    assert "\nversion: 0.1.0\n" in AGENT_MAIN


def test_republishing_a_version_shows_the_server_error_verbatim(published: dict[str, str], env) -> None:
    url = published["url"]
    main_file = (FIXTURES / "skills" / "git-workflow" / "SKILL.md").read_bytes()
    raw = httpx.post(
        f"{url}/api/v1/skills", headers={"Authorization": f"Bearer {published['token']}"},
        data={"slug": "git-workflow", "version": "1.0.0", "changelog": "", "dependencies": '{"skills":[]}'},
        files=[("files", ("SKILL.md", main_file, "application/octet-stream"))],
    )
    assert raw.status_code >= 400
    server_text = raw.json()["error"]
    result = env.run("publish", str(FIXTURES / "skills" / "git-workflow"),
                     extra={"STRAWPOT_TOKEN": published["token"], "STRAWPOT_REGISTRY_URL": url})
    assert result.returncode == 1
    assert f"refused skill git-workflow 1.0.0 (HTTP {raw.status_code}):\n{server_text}" in result.stderr
    assert "Traceback" not in result.stderr


def test_only_the_owner_publishes_new_versions(published: dict[str, str], env, module_registry) -> None:
    mallory = module_registry.token_for("mallory")
    result = env.run("publish", str(FIXTURES / "skills" / "git-workflow"), "--version", "7.0.0",
                     extra={"STRAWPOT_TOKEN": mallory, "STRAWPOT_REGISTRY_URL": published["url"]})
    assert result.returncode == 1 and "refused skill git-workflow 7.0.0 (HTTP 403)" in result.stderr


def test_install_the_agent_and_run_its_wrapper_from_the_installed_tree(published: dict[str, str], env) -> None:
    project = _project(env, "agent-project")
    extra = {"STRAWPOT_REGISTRY_URL": published["url"]}
    result = env.run("install", "agent", "stub-agent", "--skip-tools", cwd=project, extra=extra)
    assert result.returncode == 0, result.stderr
    installed = project / ".strawpot" / "agents" / "stub-agent"
    wrapper = installed / "bin" / "stub-wrapper"
    assert (installed / ".version").read_text() == "0.1.0\n"
    assert wrapper.stat().st_mode & stat.S_IXUSR, "the wrapper lost its executable bit on the way"
    assert not (installed / "AGENT.md").stat().st_mode & stat.S_IXUSR
    work, workspace = project / "work", project / "ws"
    work.mkdir()
    workspace.mkdir()
    build = subprocess.run(
        [str(wrapper), "build", "--agent-id", "a1", "--working-dir", str(work), "--agent-workspace-dir", str(workspace),
         "--role-prompt", "You are a scout.", "--memory-prompt", "", "--task", "echo:hi", "--config", '{"python": "python3"}'],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert build.returncode == 0, build.stderr
    spec = json.loads(build.stdout)
    assert spec["cwd"] == str(work)
    assert spec["cmd"][:3] == ["python3", "-B", str((installed / "agent" / "stub_agent.py").resolve())]
    lock = tomllib.loads((project / "strawpot.lock").read_text())
    [pkg] = lock["package"]
    assert {f["path"]: f["executable"] for f in pkg["files"]}["bin/stub-wrapper"] is True
    verify = env.run("verify", cwd=project, extra=extra)
    assert verify.returncode == 0, verify.stdout + verify.stderr


def test_a_yanked_version_is_avoided_by_a_fresh_lock_but_installs_from_an_existing_one(
    published: dict[str, str], env, tmp_path: Path
) -> None:
    url, token = published["url"], published["token"]
    extra = {"STRAWPOT_REGISTRY_URL": url, "STRAWPOT_TOKEN": token}
    pkg = tmp_path / "yank-demo"
    pkg.mkdir()
    text = "---\nname: yank-demo\ndescription: A skill with a bad second release.\nversion: 1.0.0\n---\n\nFirst.\n"
    (pkg / "SKILL.md").write_text(text)
    assert env.run("publish", str(pkg), extra=extra).returncode == 0
    second = env.run("publish", str(pkg), "--version", "1.0.1", "--changelog", "oops", extra=extra)
    assert second.returncode == 0, second.stderr
    assert "--version wins" in second.stderr

    manifest = '[skills]\nyank-demo = "^1.0"\n'
    before = _project(env, "locked-before-yank", manifest)
    assert env.run("lock", cwd=before, extra=extra).returncode == 0
    assert _locked(before, "yank-demo") == "1.0.1"

    yank = env.run("yank", "skill", "yank-demo", "1.0.1", extra=extra)
    assert yank.returncode == 0 and yank.stdout.strip() == f"yanked skill yank-demo 1.0.1 on {url}"

    fresh = _project(env, "locked-after-yank", manifest)
    assert env.run("lock", cwd=fresh, extra=extra).returncode == 0
    assert _locked(fresh, "yank-demo") == "1.0.0"

    frozen = env.run("install", "--frozen", cwd=before, extra=extra)
    assert frozen.returncode == 0, frozen.stderr
    installed = before / ".strawpot" / "skills" / "yank-demo"
    assert (installed / ".version").read_text() == "1.0.1\n"
    assert (installed / "SKILL.md").read_text() == text.replace("version: 1.0.0", "version: 1.0.1")


def _locked(project: Path, name: str) -> str:
    lock = tomllib.loads((project / "strawpot.lock").read_text())
    return next(p["version"] for p in lock["package"] if p["name"] == name)


@pytest.mark.compat
def test_the_strawhub_client_installs_what_strawpot_published(published: dict[str, str], tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STRAWPOT_", "STRAWHUB_"))}
    env.update(HOME=str(home), STRAWHUB_API_URL=published["url"], STRAWHUB_TOKEN=published["token"], NO_COLOR="1")

    def strawhub(*args: str) -> subprocess.CompletedProcess[str]:
        assert STRAWHUB is not None, "strawhub==0.1.54 is a test dependency: run `bash scripts/bootstrap.sh --test-tools`"
        return subprocess.run([STRAWHUB, *args], cwd=project, env=env, capture_output=True, text=True, timeout=120)

    for kind, slug in (("skill", "github-pr"), ("role", "scout"), ("agent", "stub-agent")):
        result = strawhub("install", kind, slug)
        assert result.returncode == 0, result.stdout + result.stderr
    tree = project / ".strawpot"
    for slug in SKILLS:  # scout and github-pr pulled in every skill with their dependencies
        assert (tree / "skills" / slug / "SKILL.md").read_bytes() == (FIXTURES / "skills" / slug / "SKILL.md").read_bytes()
        assert (tree / "skills" / slug / ".version").read_text().strip() == "1.0.0"
    assert (tree / "roles" / "scout" / "ROLE.md").read_bytes() == (FIXTURES / "roles" / "scout" / "ROLE.md").read_bytes()
    agent = tree / "agents" / "stub-agent"
    source = FIXTURES / "agents" / "stub-agent"
    for rel in ("bin/stub-wrapper", "agent/stub_agent.py", "agent/denden_pb2.py", "agent/denden_pb2_grpc.py"):
        assert (agent / rel).read_bytes() == (source / rel).read_bytes(), rel
    assert (agent / "AGENT.md").read_text() == AGENT_MAIN
    assert (agent / ".version").read_text().strip() == "0.1.0"


def test_a_role_with_every_skill_and_every_role_publishes(published: dict[str, str], env, tmp_path: Path) -> None:
    pkg = tmp_path / "boss"
    pkg.mkdir()
    (pkg / "ROLE.md").write_text(
        "---\nname: boss\ndescription: Delegates to any installed role.\nversion: 1.0.0\nmetadata:\n  strawpot:\n"
        "    dependencies:\n      skills: [git-workflow, '*']\n      roles: ['*']\n---\nbody\n"
    )
    result = env.run("publish", str(pkg), extra={"STRAWPOT_TOKEN": published["token"], "STRAWPOT_REGISTRY_URL": published["url"]})
    assert result.returncode == 0, result.stderr
    [version] = httpx.get(f"{published['url']}/api/v1/roles/boss/versions").json()["versions"]
    assert version["dependencies"]["skills"] == ["git-workflow"]
    assert "*" not in version["dependencies"].get("roles", [])  # a runtime directive, never a package
