"""The real `strawhub` 0.1.54 client, unchanged, against a live `strawpot registry serve`."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests._live_registry import LiveRegistry

pytestmark = pytest.mark.compat

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
STRAWHUB = Path(sys.executable).with_name("strawhub")
WRAPPER = b"#!/bin/sh\necho '{\"cmd\": [\"true\"], \"cwd\": \".\"}'\n"
BINARY = bytes(range(256)) * 16


@dataclass
class Hub:
    """Runs `strawhub` with the registry URL and token in a private HOME."""

    registry: LiveRegistry
    home: Path
    work: Path

    def run(self, *args: str, cwd: Path | None = None, ok: bool = True) -> subprocess.CompletedProcess[str]:
        env = {
            **os.environ, "HOME": str(self.home), "STRAWHUB_API_URL": self.registry.url,
            "STRAWHUB_TOKEN": self.registry.token, "STRAWPOT_HOME": str(self.home / ".strawpot"),
            "NO_COLOR": "1", "COLUMNS": "200", "XDG_CONFIG_HOME": str(self.home / ".config"),
        }
        done = subprocess.run([str(STRAWHUB), *args], cwd=cwd or self.work, env=env, capture_output=True, text=True,
                              timeout=120)
        if ok:
            assert done.returncode == 0, f"strawhub {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
        return done

    def json(self, *args: str) -> dict:
        return json.loads(self.run(*args, "--json").stdout)

    def project(self, name: str) -> Path:
        path = self.work / name
        path.mkdir()
        return path


def _deps(folder: Path) -> list[str]:
    main = next(folder.glob("*.md"))
    meta = yaml.safe_load(main.read_text().split("---")[1])
    deps = ((meta.get("metadata") or {}).get("strawpot") or {}).get("dependencies") or []
    entries = deps if isinstance(deps, list) else [*deps.get("skills", []), *deps.get("roles", [])]
    return [re.match(r"[a-z0-9-]+", e).group(0) for e in entries if e != "*"]  # type: ignore[union-attr]


def publish_order() -> list[tuple[str, Path]]:
    """Fixture skills and roles, each after what it depends on (the registry checks that deps exist)."""
    folders = {p.name: ("skill", p) for p in (FIXTURES / "skills").iterdir()}
    folders |= {p.name: ("role", p) for p in (FIXTURES / "roles").iterdir()}
    order: list[tuple[str, Path]] = []

    def visit(name: str) -> None:
        if folders[name] not in order:
            for dep in _deps(folders[name][1]):
                visit(dep)
            order.append(folders[name])

    for name in sorted(folders):
        visit(name)
    return order


def bump(src: Path, dest: Path, version: str, **extra_files: bytes) -> Path:
    """A copy of a fixture package with another `version:` (and extra or replaced files)."""
    shutil.copytree(src, dest)
    main = next(dest.glob("*.md"))
    main.write_text(re.sub(r"(?m)^version: .*$", f"version: {version}", main.read_text()))
    for rel, data in extra_files.items():
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        (dest / rel).write_bytes(data)
    return dest


def make_agent(dest: Path) -> Path:
    (dest / "bin").mkdir(parents=True)
    (dest / "AGENT.md").write_text(
        "---\nname: stub-agent\ndescription: A stub agent wrapper.\nversion: 0.1.0\nmetadata:\n  strawpot:\n"
        "    bin:\n      linux: bin/wrapper\n---\n\n# Stub agent\n"
    )
    (dest / "bin" / "wrapper").write_bytes(WRAPPER)
    (dest / "bin" / "wrapper").chmod(0o755)
    (dest / "blob.bin").write_bytes(BINARY)
    return dest


@pytest.fixture(scope="module")
def hub(registry_on_each_backend: LiveRegistry, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    """The fixtures published through `strawhub publish`, a second task-planning, and a binary agent."""
    work = tmp_path_factory.mktemp("strawhub")
    hub = Hub(registry_on_each_backend, work / "home", work)
    hub.home.mkdir()
    for kind, folder in publish_order():
        hub.run("publish", kind, str(shutil.copytree(folder, work / "src" / folder.name)))
    newer = bump(FIXTURES / "skills" / "task-planning", work / "src" / "task-planning-1.1.0", "1.1.0",
                 **{"templates/plan.md": b"# Plan, second edition\n"})
    hub.run("publish", "skill", str(newer))
    hub.run("publish", "agent", str(make_agent(work / "src" / "stub-agent")))
    yield hub


def test_info_json_shows_sub_folder_files_and_dependencies(hub: Hub) -> None:
    info = hub.json("info", "skill", "task-planning")
    assert info["latestVersion"]["version"] == "1.1.0"
    assert {f["path"] for f in info["latestVersion"]["files"]} == {"SKILL.md", "templates/plan.md"}
    review = hub.json("info", "skill", "code-review")
    assert review["dependencies"] == {"skills": ["diff-reading", "code-style"]}
    lead = hub.json("info", "role", "lead")
    assert lead["dependencies"] == {"skills": ["task-planning"], "roles": ["reviewer", "implementer"]}
    assert hub.run("info", "skill", "task-planning").stdout.count("templates/plan.md") == 1


def test_list_and_search(hub: Hub) -> None:
    listed = hub.json("list")
    assert {i["slug"] for i in listed["skills"]} >= {"task-planning", "code-review", "git-workflow"}
    assert {i["slug"] for i in listed["roles"]} == {"implementer", "reviewer", "lead", "scout"}
    assert [i["slug"] for i in listed["agents"]] == ["stub-agent"]
    found = hub.json("search", "code-review")
    assert found["results"][0]["slug"] == "code-review" and found["count"] >= 1
    assert "code-review" in hub.run("list", "skills").stdout


def test_install_role_with_transitive_dependencies_then_uninstall_orphans(hub: Hub) -> None:
    project = hub.project("role-install")
    hub.run("install", "role", "lead", cwd=project)
    tree = project / ".strawpot"
    assert sorted(p.name for p in (tree / "roles").iterdir()) == ["implementer", "lead", "reviewer"]
    assert {p.name for p in (tree / "skills").iterdir()} == {
        "task-planning", "code-review", "diff-reading", "code-style", "security-baseline",
        "test-driven", "testing-basics", "refactoring", "git-workflow",
    }
    assert (tree / "roles" / "lead" / "ROLE.md").read_bytes() == (FIXTURES / "roles" / "lead" / "ROLE.md").read_bytes()
    assert (tree / "skills" / "task-planning" / "templates" / "plan.md").read_bytes() == b"# Plan, second edition\n"
    assert (tree / "skills" / "code-review" / ".version").read_text() == "1.2.0\n"
    hub.run("uninstall", "role", "lead", cwd=project)
    assert not any((tree / "roles").iterdir()) and not any((tree / "skills").iterdir())


def test_install_an_older_version_gets_the_old_bytes_then_update(hub: Hub) -> None:
    project = hub.project("older")
    hub.run("install", "skill", "task-planning", "--version", "1.0.0", cwd=project)
    folder = project / ".strawpot" / "skills" / "task-planning"
    assert (folder / ".version").read_text() == "1.0.0\n"
    fixture = FIXTURES / "skills" / "task-planning"
    assert (folder / "templates" / "plan.md").read_bytes() == (fixture / "templates" / "plan.md").read_bytes()
    assert (folder / "SKILL.md").read_bytes() == (fixture / "SKILL.md").read_bytes()
    hub.run("update", "skill", "task-planning", cwd=project)
    assert (folder / ".version").read_text() == "1.1.0\n"
    assert (folder / "templates" / "plan.md").read_bytes() == b"# Plan, second edition\n"


def test_install_agent_keeps_binary_bytes(hub: Hub) -> None:
    project = hub.project("agent")
    hub.run("install", "agent", "stub-agent", "--skip-tools", cwd=project)
    folder = project / ".strawpot" / "agents" / "stub-agent"
    assert (folder / "blob.bin").read_bytes() == BINARY
    assert (folder / "bin" / "wrapper").read_bytes() == WRAPPER


def test_bare_install_from_strawpot_toml(hub: Hub) -> None:
    project = hub.project("manifest")
    (project / "strawpot.toml").write_text(
        '[skills]\ncode-review = "==1.2.0"\ntask-planning = "*"\n\n[roles]\nimplementer = "*"\n'
    )
    hub.run("install", cwd=project)
    skills = project / ".strawpot" / "skills"
    assert {p.name for p in skills.iterdir()} >= {"code-review", "diff-reading", "code-style", "task-planning",
                                                  "test-driven", "refactoring", "git-workflow"}
    assert (project / ".strawpot" / "roles" / "implementer" / "ROLE.md").is_file()


def test_duplicate_version_is_refused(hub: Hub) -> None:
    again = hub.run("publish", "skill", str(FIXTURES / "skills" / "git-workflow"), ok=False)
    assert again.returncode != 0
    assert "already exists" in again.stdout + again.stderr


def _published_agent(dest: Path, name: str, strawpot: str) -> Path:
    """An agent shaped like the published wrappers: the version in metadata.version, an install script."""
    dest.mkdir(parents=True)
    (dest / "AGENT.md").write_text(
        f"---\nname: {name}\ndescription: A wrapper built by its install script.\nmetadata:\n  version: \"0.2.0\"\n"
        f"  strawpot:\n{strawpot}    install:\n      linux: sh install.sh\n      macos: sh install.sh\n---\n\n# {name}\n"
    )
    (dest / "install.sh").write_text('printf "#!/bin/sh\\n" > "$INSTALL_DIR/wrapper_bin"; chmod +x "$INSTALL_DIR/wrapper_bin"\n')
    return dest


def test_strawhub_publishes_agents_without_a_shipped_wrapper(hub: Hub, registry_on_each_backend: LiveRegistry) -> None:
    # strawhub reads only a top-level version, so it is given on the command line, as its users do
    binless = _published_agent(hub.work / "src" / "binless-agent", "binless-agent", "")
    hub.run("publish", "agent", str(binless), "--version", "0.2.0")
    built = _published_agent(hub.work / "src" / "built-agent", "built-agent",
                             "    bin: {linux: wrapper_bin, macos: wrapper_bin}\n")
    hub.run("publish", "agent", str(built), "--version", "0.2.0")
    for slug in ("binless-agent", "built-agent"):
        info = hub.json("info", "agent", slug)
        assert info["latestVersion"]["version"] == "0.2.0"
        assert {f["path"] for f in info["latestVersion"]["files"]} == {"AGENT.md", "install.sh"}
    import httpx

    listed = httpx.get(f"{registry_on_each_backend.url}/api/v1/agents/built-agent/versions", timeout=10).json()
    assert [f["executable"] for f in listed["versions"][0]["files"]] == [False, False]  # wrapper_bin is not shipped


def test_strawhub_publishes_a_skill_that_carries_a_program(hub: Hub, registry_on_each_backend: LiveRegistry) -> None:
    # the denden skill's shape: a program per OS, built by a remote install command on two of them
    src = hub.work / "src" / "prog-skill"
    src.mkdir(parents=True)
    (src / "SKILL.md").write_text(
        "---\nname: prog-skill\ndescription: A skill whose program its install command fetches.\nversion: 1.0.0\n"
        "metadata:\n  strawpot:\n    bin:\n      macos: prog\n      linux: prog\n      windows: prog.exe\n"
        "    install:\n      macos: curl -fsSL https://example.invalid/install.sh | sh\n"
        "      linux: curl -fsSL https://example.invalid/install.sh | sh\n---\n\n# prog-skill\n")
    hub.run("publish", "skill", str(src))
    shipped = hub.work / "src" / "shipped-skill"
    shipped.mkdir(parents=True)
    (shipped / "SKILL.md").write_text("---\nname: shipped-skill\ndescription: A skill that ships its program.\n"
                                      "version: 1.0.0\nmetadata:\n  strawpot:\n    bin:\n      linux: bin/tool\n---\n")
    (shipped / "bin").mkdir()
    (shipped / "bin" / "tool").write_bytes(WRAPPER)
    hub.run("publish", "skill", str(shipped))
    import httpx

    base = f"{registry_on_each_backend.url}/api/v1/skills"
    assert hub.json("info", "skill", "prog-skill")["latestVersion"]["version"] == "1.0.0"
    listed = httpx.get(f"{base}/shipped-skill/versions", timeout=10).json()["versions"][0]["files"]
    assert {f["path"]: f["executable"] for f in listed} == {"SKILL.md": False, "bin/tool": True}
