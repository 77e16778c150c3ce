"""The read-only commands on a tree an agent or a cloned repository planted things in: a FIFO or a link to an
endless device as a main file, a kind folder that is a link to itself. They answer, promptly, and read nothing
through a link."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests._cli import strawpot

SKILL = "---\nname: {name}\ndescription: A local {kind}.\nmetadata:\n  version: 1.0.0\n{extra}---\n\nBody.\n"


@pytest.fixture
def project(tmp_path: Path, free_tcp_port: int) -> tuple[Path, dict[str, str]]:
    """A skill and a role that names it, installed from folders (nothing fetched)."""
    (tmp_path / "skills" / "a").mkdir(parents=True)
    (tmp_path / "skills" / "a" / "SKILL.md").write_text(SKILL.format(name="a", kind="skill", extra=""))
    (tmp_path / "roles" / "boss").mkdir(parents=True)
    (tmp_path / "roles" / "boss" / "ROLE.md").write_text(SKILL.format(
        name="boss", kind="role", extra="  strawpot:\n    dependencies:\n      skills: [a]\n"))
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "strawpot.toml").write_text('[skills]\na = { path = "../skills/a" }\n[roles]\nboss = { path = "../roles/boss" }\n')
    env = {"STRAWPOT_CACHE_DIR": str(tmp_path / "cache"), "STRAWPOT_REGISTRY_URL": f"http://127.0.0.1:{free_tcp_port}"}
    done = strawpot("install", cwd=proj, extra_env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    return proj, env


@pytest.mark.parametrize("planted", ["fifo", "endless link"])
def test_tree_why_and_verify_answer_with_a_fifo_or_an_endless_link_as_a_main_file(
        project: tuple[Path, dict[str, str]], planted: str) -> None:
    proj, env = project
    for main in (proj / ".strawpot" / "roles" / "boss" / "ROLE.md", proj / ".strawpot" / "skills" / "a" / "SKILL.md"):
        main.unlink()
        if planted == "fifo":
            os.mkfifo(main)
        else:
            main.symlink_to("/dev/zero")
    tree = strawpot("tree", cwd=proj, extra_env=env, timeout=20)  # a read that blocked or never ended times out
    assert tree.returncode == 0 and "role boss 1.0.0" in tree.stdout, tree.stderr
    why = strawpot("why", "skill", "a", cwd=proj, extra_env=env, timeout=20)
    assert why.returncode == 0 and "role boss 1.0.0 → skill a 1.0.0" in why.stdout, why.stderr
    verify = strawpot("verify", cwd=proj, extra_env=env, timeout=20)
    assert verify.returncode == 5 and "Traceback" not in verify.stderr, verify.stderr  # it names the planted files


def test_list_passes_over_a_kind_folder_that_is_a_link_to_itself(project: tuple[Path, dict[str, str]]) -> None:
    proj, env = project
    agents = proj / ".strawpot" / "agents"
    agents.symlink_to("agents")  # a loop: scandir says ELOOP
    done = strawpot("list", cwd=proj, extra_env=env, timeout=20)
    assert done.returncode == 0, done.stderr
    assert [line.split()[:2] for line in done.stdout.splitlines()[1:]] == [["skill", "a"], ["role", "boss"]]


@pytest.mark.parametrize("planted", ["fifo", "endless link"])
def test_a_fifo_or_an_endless_link_as_a_version_file_or_an_install_record_is_refused_promptly(
        project: tuple[Path, dict[str, str]], planted: str) -> None:
    """An agent (or anything that writes the tree) plants a FIFO or a link to /dev/zero where strawpot keeps a
    package's version and its install record: `list` and `verify` answer, naming what is wrong, instead of hanging
    on the read or reading without end."""
    proj, env = project
    version = proj / ".strawpot" / "skills" / "a" / ".version"
    record = proj / ".strawpot" / "roles" / "boss" / ".install-record.json"
    version.unlink()
    for path in (version, record):
        if planted == "fifo":
            os.mkfifo(path)
        else:
            path.symlink_to("/dev/zero")
    listed = strawpot("list", cwd=proj, extra_env=env, timeout=20)  # a read that blocked or never ended times out
    assert listed.returncode == 0, listed.stderr
    assert [line.split()[:2] for line in listed.stdout.splitlines()[1:]] == [["skill", "a"], ["role", "boss"]]
    verify = strawpot("verify", cwd=proj, extra_env=env, timeout=20)
    assert verify.returncode == 5, verify.stderr
    assert "skill a: not installed (lock has 1.0.0)" in verify.stdout, verify.stdout
    assert ("role boss: .install-record.json: cannot read .install-record.json: links and special files are not "
            "allowed in a package") in verify.stdout, verify.stdout
