"""`strawpot init --from-lock / --from-tree / --from-strawhub`: what a strawhub 0.1.54 install left behind
(its JSON lockfile and its install tree, made by the real `strawhub` client against a live registry)
becomes ^VERSION requirements; hostile trees are refused before anything is written."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.install.test_cli_expectations import new_project, run

STRAWHUB = Path(sys.executable).parent / "strawhub"
ALWAYS = {"denden": "*", "strawpot-session-recap": "*"}  # `init` requires `[session] always_stage` (issue 36)
DIRECT = {"skills": {"security-baseline": "^1.0.0", **ALWAYS}, "roles": {"implementer": "^1.0.0"}}


def strawhub(*args: str, cwd: Path, url: str) -> None:
    home = cwd.parent / "home"
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("STRAWPOT_", "STRAWHUB_"))},
           "HOME": str(home), "STRAWHUB_API_URL": url, "STRAWPOT_HOME": str(home / "global"), "NO_COLOR": "1",
           "XDG_CONFIG_HOME": str(home / "config"), "COLUMNS": "200"}
    done = subprocess.run([str(STRAWHUB), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, f"strawhub {' '.join(args)}:\n{done.stdout}\n{done.stderr}"


def requirements(project: Path) -> dict[str, dict[str, str]]:
    return {k: v for k, v in tomllib.loads((project / "strawpot.toml").read_text()).items() if v}


@pytest.fixture(scope="module")
def hub_tree(registry: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The `.strawpot` the real strawhub client leaves after `install role implementer` and a skill."""
    work = tmp_path_factory.mktemp("strawhub") / "p"
    work.mkdir()
    strawhub("install", "role", "implementer", "--skip-tools", cwd=work, url=registry.url)
    strawhub("install", "skill", "security-baseline", "--skip-tools", cwd=work, url=registry.url)
    tree = work / ".strawpot"
    assert (tree / "strawpot.lock").is_file() and (tree / "skills" / "code-style" / ".version").is_file()
    return tree


def copy_of(tree: Path, tmp_path: Path, name: str = "tree") -> Path:
    return Path(shutil.copytree(tree, tmp_path / name, symlinks=True))


def test_init_plain_and_from_a_strawhub_lockfile(tmp_path: Path, registry: Any) -> None:
    plain = new_project(tmp_path)
    made = run("init", cwd=plain, url=registry.url)
    assert made.returncode == 0, made.stderr
    text = (plain / "strawpot.toml").read_text()
    assert text.startswith("# strawpot.toml") and "[skills]" in text and "[roles]" in text
    assert requirements(plain) == {"skills": ALWAYS}  # staged into every agent, so the role prompts' denden works
    assert "# Staged into every agent's workspace, and on its PATH, by `[session] always_stage`" in text
    assert stat.S_IMODE((plain / "strawpot.toml").stat().st_mode) & 0o044 == 0o044
    again = run("init", cwd=plain, url=registry.url)
    assert again.returncode == 2 and "already exists" in again.stderr

    strawhub_home = tmp_path / "home" / "global"
    strawhub_home.mkdir(parents=True)
    (strawhub_home / "strawpot.lock").write_text(json.dumps({
        "version": 1, "directInstalls": [{"kind": "skill", "slug": "code-style", "version": "1.0.0"}],
        "packages": {"skill:code-style:1.0.0": {"kind": "skill", "slug": "code-style", "version": "1.0.0",
                                                "dependents": []}}}))
    project = tmp_path / "from-strawhub"
    project.mkdir()
    result = run("init", "--from-strawhub", cwd=project, url=registry.url)
    assert result.returncode == 0, result.stderr
    assert 'code-style = "^1.0.0"' in (project / "strawpot.toml").read_text()
    installed = run("install", "--skip-tools", cwd=project, url=registry.url)
    assert installed.returncode == 0, installed.stderr
    assert (project / ".strawpot" / "skills" / "code-style").is_dir()

    hostile = tmp_path / "hostile.lock"
    hostile.write_text(json.dumps({"directInstalls": [{"kind": "skill", "slug": "../../x", "version": "1.0.0"}]}))
    refused_in = tmp_path / "refused"
    refused_in.mkdir()
    refused = run("init", "--from-lock", str(hostile), cwd=refused_in, url=registry.url)
    assert refused.returncode == 2 and "directInstalls[0]" in refused.stderr, refused.stderr
    assert list(refused_in.iterdir()) == []

def test_from_strawhub_reads_the_lockfile_and_the_tree_strawhub_made(tmp_path: Path, registry: Any,
                                                                    hub_tree: Path) -> None:
    project = new_project(tmp_path)
    copy_of(hub_tree, project, ".strawpot")  # strawhub's project-local root, found before $STRAWPOT_HOME
    made = run("init", "--from-strawhub", cwd=project, url=registry.url)
    assert made.returncode == 0, made.stderr
    assert requirements(project) == DIRECT  # the direct installs, none of their dependencies
    assert f"from {project.resolve() / '.strawpot'}" in made.stderr

    fresh = tmp_path / "locks"  # the requirements resolve against the registry they came from
    fresh.mkdir()
    shutil.copy(project / "strawpot.toml", fresh / "strawpot.toml")
    locked = run("lock", cwd=fresh, url=registry.url)
    assert locked.returncode == 0, locked.stderr


def test_from_tree_finds_what_the_lockfile_lacks_and_works_without_one(tmp_path: Path, registry: Any,
                                                                      hub_tree: Path) -> None:
    partial = copy_of(hub_tree, tmp_path, "partial")
    lock = json.loads((partial / "strawpot.lock").read_text())
    lock["directInstalls"] = [e for e in lock["directInstalls"] if e["slug"] != "security-baseline"]
    lock["packages"] = {k: v for k, v in lock["packages"].items() if v["slug"] != "security-baseline"}
    (partial / "strawpot.lock").write_text(json.dumps(lock))
    (partial / "skills" / "security-baseline" / ".version").write_text("1.0.3\n")  # the tree's version wins
    project = tmp_path / "a"
    project.mkdir()
    made = run("init", "--from-tree", str(partial), cwd=project, url=registry.url)
    assert made.returncode == 0, made.stderr
    assert requirements(project) == {**DIRECT, "skills": {"security-baseline": "^1.0.3", **ALWAYS}}

    bare = copy_of(hub_tree, tmp_path, "bare")
    (bare / "strawpot.lock").unlink()  # no lockfile: the packages no other installed one depends on
    project = tmp_path / "b"
    project.mkdir()
    made = run("init", "--from-tree", str(bare), cwd=project, url=registry.url)
    assert made.returncode == 0, made.stderr
    assert requirements(project) == DIRECT

    (tmp_path / "c").mkdir()
    both = run("init", "--from-tree", str(bare), "--from-strawhub", cwd=tmp_path / "c", url=registry.url)
    assert both.returncode == 2 and "give one of" in both.stderr
    assert list((tmp_path / "c").iterdir()) == []


def _bad_slug(tree: Path, outside: Path) -> str:
    shutil.copytree(tree / "skills" / "code-style", tree / "skills" / "Code_Style")
    return "Code_Style"


def _anchor(tree: Path, outside: Path) -> str:
    (tree / "skills" / "code-style" / "SKILL.md").write_text("---\nname: &a code-style\nversion: 1.0.0\n---\n")
    return "anchor &a is not allowed"


def _escaping_link(tree: Path, outside: Path) -> str:
    shutil.copytree(tree / "skills" / "code-style", outside / "loot")
    (tree / "skills" / "loot").symlink_to(outside / "loot")
    return "is a link to '"


def _escaping_main_file(tree: Path, outside: Path) -> str:
    (outside / "secret").write_text("---\nname: x\n---\n")
    main = tree / "roles" / "implementer" / "ROLE.md"
    main.unlink()
    main.symlink_to(outside / "secret")
    return "is a link to '"


def _not_a_version(tree: Path, outside: Path) -> str:
    (tree / "skills" / "code-style" / ".version").write_text("latest; rm -rf /\n")
    return "is not a version"


def _no_main_file(tree: Path, outside: Path) -> str:
    (tree / "roles" / "implementer" / "ROLE.md").unlink()
    return "no ROLE.md"


def _bad_lock_entry(tree: Path, outside: Path) -> str:
    lock = json.loads((tree / "strawpot.lock").read_text())
    lock["directInstalls"].append({"kind": "skill", "slug": "../../x", "version": "1.0.0"})
    (tree / "strawpot.lock").write_text(json.dumps(lock))
    return "directInstalls[2]"


@pytest.mark.parametrize("spoil", [_bad_slug, _anchor, _escaping_link, _escaping_main_file, _not_a_version,
                                   _no_main_file, _bad_lock_entry])
def test_a_hostile_tree_is_refused_before_writing(tmp_path: Path, registry: Any, hub_tree: Path, spoil: Any) -> None:
    tree = copy_of(hub_tree, tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    expected = spoil(tree, outside)
    project = new_project(tmp_path)
    refused = run("init", "--from-tree", str(tree), cwd=project, url=registry.url)
    assert refused.returncode == 2, refused.stderr
    lines = refused.stderr.splitlines()
    assert lines[0].startswith("error: ") and expected in lines[0], refused.stderr
    assert "Traceback" not in refused.stderr and len(lines) <= 2  # the error, and at most one hint
    assert list(project.iterdir()) == []


def _package(root: Path, kind: str, slug: str, deps: str = "") -> None:
    """A package folder as strawhub lays it out: the published main file and a `.version` marker."""
    folder = root / f"{kind}s" / slug
    folder.mkdir(parents=True)
    meta = f"metadata:\n  strawpot:\n    dependencies:\n{deps}" if deps else ""
    (folder / f"{kind.upper()}.md").write_text(f"---\nname: {slug}\nversion: 1.0.0\n{meta}---\n\n# {slug}\n")
    (folder / ".version").write_text("1.0.0\n")


def test_a_tree_without_lockfile_keeps_dependency_cycles_and_ignores_the_all_roles_star(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    _package(tree, "skill", "shared")
    _package(tree, "role", "ping", "      skills: [shared]\n      roles: [pong]\n")
    _package(tree, "role", "pong", "      roles: [ping]\n")  # a cycle: each needs the other
    _package(tree, "role", "boss", "      roles: ['*']\n")  # `*` is every role at run time, not a dependency
    _package(tree, "skill", "lonely", "      - shared\n")
    project = new_project(tmp_path)
    made = run("init", "--from-tree", str(tree), cwd=project, url="http://127.0.0.1:9")
    assert made.returncode == 0, made.stderr
    assert requirements(project) == {"skills": {"lonely": "^1.0.0", **ALWAYS},
                                    "roles": {"boss": "^1.0.0", "ping": "^1.0.0"}}
