"""`[session] always_stage`: the `denden` skill (and the others named) go to every agent whenever locked, so a
role that delegates without listing it still finds `denden` on PATH; what is missing is warned once."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from orchestrator.staging import Stager
from strawpot.model.installed import InstalledTree
from strawpot.model.lockfile import Lockfile
from tests.orchestrator.conftest import ROOT, ProjectFixture, role_md
from tests.orchestrator.test_start_e2e import start

DENDEN = ROOT / "fixtures" / "skills" / "denden"
CLIENT_FILES = ("denden", "client/denden_pb2.py", "client/denden_pb2_grpc.py")


def with_denden(project: ProjectFixture) -> ProjectFixture:
    """The fixture `denden` skill locked in the project; no role lists it."""
    project.skills["denden"] = (DENDEN / "SKILL.md").read_text(encoding="utf-8")
    project.skill_files["denden"] = {rel: (DENDEN / rel).read_text(encoding="utf-8") for rel in CLIENT_FILES}
    return project


def python_first() -> dict[str, str]:
    """The environment with this interpreter's folder first on PATH: the fixture client runs `python3`, which
    needs grpcio (a published `denden` is a static binary)."""
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}


def session_record(project: ProjectFixture) -> dict:  # type: ignore[type-arg]
    (run_dir,) = [p for p in project.sessions_dir.iterdir() if p.is_dir()]
    return json.loads((run_dir / "session.json").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def set_always_stage(project: ProjectFixture, names: list[str]) -> None:
    manifest = project.root / "strawpot.toml"
    manifest.write_text(manifest.read_text() + f"\n[session]\nalways_stage = {json.dumps(names)}\n")


def test_every_agent_of_a_run_finds_denden_on_path_and_reaches_its_run(project: ProjectFixture) -> None:
    with_denden(project).build()
    proc = start(project, "run:denden then delegate:implementer:run:denden then delegate:reviewer:run:denden",
                 env=python_first())
    assert proc.returncode == 0, proc.stderr
    statuses = [json.loads(line) for line in proc.stdout.splitlines()]
    # each agent's `denden status` reached this run's Denden: one, two, then three agents running
    assert [s.get("activeAgents") for s in statuses] == [1, 2, 3], proc.stdout
    assert "warning" not in proc.stderr  # nothing to warn about
    agents = session_record(project)["agents"]
    assert {a["role"] for a in agents} == {"orchestrator", "implementer", "reviewer"}
    for agent in agents:
        assert agent["always_staged"] == ["skill:denden@1.0.0"]
        assert "skill:denden@1.0.0" in agent["packages"]
        assert (Path(agent["workspace"]) / "skills" / "denden" / "denden").stat().st_mode & 0o111


def test_a_role_that_lists_denden_gets_it_once_and_not_as_always_staged(project: ProjectFixture) -> None:
    project.roles["reviewer"] = role_md("reviewer", skills=["reviewing", "denden"])
    with_denden(project).build()
    stager = Stager(InstalledTree(project.state_dir), Lockfile.load(project.root / "strawpot.lock"),
                    ["denden", "denden"])
    assert stager.skill_closure("reviewer").count("denden") == 1
    assert stager.by_always_stage("reviewer") == []
    assert stager.by_always_stage("implementer") == ["skill:denden@1.0.0"]
    assert stager.staged_packages("reviewer", "stub-agent").count("skill:denden@1.0.0") == 1
    assert stager.by_wildcard("implementer") == []  # always-staged is not "through *"


def test_an_always_stage_skill_that_is_not_locked_is_warned_once_and_the_run_goes_on(
    project: ProjectFixture,
) -> None:
    with_denden(project).build()
    set_always_stage(project, ["denden", "ghost-skill"])
    proc = start(project, "run:denden then delegate:implementer:echo:done", env=python_first())
    assert proc.returncode == 0, proc.stderr
    warned = [line for line in proc.stderr.splitlines() if "ghost-skill" in line]
    assert len(warned) == 1, proc.stderr
    assert "strawpot.toml" in warned[0] and "[session] always_stage names ghost-skill, not locked" in warned[0]
    assert "`strawpot install skill ghost-skill`" in warned[0]
    assert json.loads(proc.stdout.splitlines()[0])["activeAgents"] == 1 and proc.stdout.splitlines()[1] == "done"


def test_always_stage_empty_stages_nothing_more(project: ProjectFixture) -> None:
    with_denden(project).build()
    set_always_stage(project, [])
    proc = start(project, "run:denden", env=python_first())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "denden: not on PATH"
    (agent,) = session_record(project)["agents"]
    assert agent["always_staged"] == [] and not (Path(agent["workspace"]) / "skills" / "denden").exists()


def test_a_delegating_role_without_denden_locked_is_warned_with_the_fix(project: ProjectFixture) -> None:
    project.roles["talker"] = role_md("talker", body="Ask for help with `denden send` when stuck.")
    project.build()
    delegating = start(project, "echo:hi")  # the orchestrator role lists roles
    assert delegating.returncode == 0, delegating.stderr
    warned = [line for line in delegating.stderr.splitlines() if line.startswith("warning")]
    assert len(warned) == 1, delegating.stderr
    assert ("role orchestrator delegates, but the denden skill is not locked" in warned[0]
            and "run `strawpot install skill denden`" in warned[0])
    assert "always_stage" not in delegating.stderr  # the default names skills this project did not lock: no noise
    by_text = start(project, "echo:hi", "--role", "talker")  # its text tells the agent to use denden
    assert "role talker delegates, but the denden skill is not locked" in by_text.stderr
    quiet = start(project, "echo:hi", "--role", "reviewer")  # neither: nothing to say
    assert quiet.returncode == 0 and "warning" not in quiet.stderr


def test_a_sandboxed_agent_and_its_sub_agent_reach_their_run_with_denden(project: ProjectFixture) -> None:
    with_denden(project).build()
    proc = start(project, "run:denden then delegate:implementer:run:denden", "--sandbox", "bwrap",
                 env=python_first())
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(line).get("activeAgents") for line in proc.stdout.splitlines()] == [1, 2], proc.stdout
    assert session_record(project)["sandbox"]["kind"] == "bwrap"
