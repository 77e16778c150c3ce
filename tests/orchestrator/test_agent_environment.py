"""What an agent's process gets, through `strawpot start --headless`: the programs of staged packages on PATH,
the wrapper's `env`, `--files-dir`, `skills: ["*"]`, and required env checked where it is needed.

Real subprocesses (the CLI, the stub wrapper and agent), the real Denden server on a Unix socket.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from strawpot.model.install_record import RECORD_FILE, make_record, snapshot
from strawpot.model.platform import current_os
from tests._cli import strawpot, strawpot_here
from tests.orchestrator.conftest import STUB_AGENT

pytestmark = pytest.mark.e2e


def run(project, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:  # type: ignore[no-untyped-def]
    """`strawpot ARGS` in the project: `start` as a real process (it runs agents), the rest through main() here."""
    if args[0] == "start":
        return strawpot(*args, cwd=project.root, env=env, timeout=60)
    return strawpot_here(*args, cwd=project.root, env=env)


def start(project, task: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:  # type: ignore[no-untyped-def]
    return run(project, "start", "--headless", "--task", task, env=env)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The CLI's environment: an empty global config folder of its own, no TWITTER_TOKEN."""
    config = tmp_path / "config"
    config.mkdir()
    return {**{k: v for k, v in os.environ.items() if k != "TWITTER_TOKEN"}, "STRAWPOT_CONFIG_DIR": str(config)}


def skill_with_bin(name: str, bins: dict[str, str], *, extra: str = "") -> str:
    """A SKILL.md shaped like the published `denden` skill: `metadata.strawpot.bin` names a program in its folder."""
    lines = "".join(f"      {os_name}: {path}\n" for os_name, path in bins.items())
    return (f"---\nname: {name}\ndescription: Ships the {name} program\nmetadata:\n  version: \"1.0.0\"\n"
            f"  strawpot:\n    bin:\n{lines}{extra}---\n\nRun `{name}`.\n")


def program(text: str) -> str:
    return f"#!/bin/sh\necho {text}\n"


# -- PATH --------------------------------------------------------------------------------------------------


def test_programs_of_staged_skills_are_on_path_skills_first_in_staging_order(project, make_role, env) -> None:  # type: ignore[no-untyped-def]
    project.skills |= {
        "tooling": skill_with_bin("tooling", {"linux": "tool", "macos": "tool"}),
        "alpha": skill_with_bin("alpha", {"linux": "bin/alpha", "macos": "bin/alpha"}),
        # a program for another OS only: its folder is not put on PATH
        "winonly": skill_with_bin("winonly", {"windows": "winonly-prog"}),
    }
    project.skill_files |= {"tooling": {"tool": program("tool-from-skill")},
                            "alpha": {"bin/alpha": program("alpha-from-skill")},
                            "winonly": {"winonly-prog": program("should-not-run")}}
    project.roles["orchestrator"] = make_role("orchestrator", skills=["tooling", "winonly", "alpha", "planning"],
                                              roles=["reviewer"])
    project.build()
    proc = start(project, "run:tool then run:alpha then run:winonly-prog then env:PATH "
                          "then delegate:reviewer:run:tool then env:PATH", env)
    assert proc.returncode == 0, proc.stderr
    tool, alpha, winonly, path, child_tool, child_path = proc.stdout.splitlines()
    assert (tool, alpha, winonly) == ("tool-from-skill", "alpha-from-skill", "winonly-prog: not on PATH")
    tree = project.state_dir
    assert path.split(os.pathsep)[:3] == [  # skills (in staging order), then the agent's wrapper folder
        str(tree / "skills" / "alpha" / "bin"), str(tree / "skills" / "tooling"), str(tree / "agents/stub-agent/bin")]
    assert path.split(os.pathsep)[3:] == env["PATH"].split(os.pathsep)  # then the caller's PATH, unchanged
    # the reviewer's role does not stage `tooling`: its program is not on the reviewer's PATH
    assert child_tool == "tool: not on PATH"
    assert child_path.split(os.pathsep)[0] == str(tree / "agents/stub-agent/bin")


def test_a_program_the_install_script_built_is_on_path_though_staging_copies_only_locked_files(project, make_role, env) -> None:  # type: ignore[no-untyped-def]
    """The `denden` skill's shape: `bin` names a program its install script builds in the skill's folder."""
    script = "sh ./build.sh"
    project.skills["dd"] = skill_with_bin("dd", {"linux": "denden", "macos": "denden"},
                                          extra=f"    install:\n      linux: {script}\n      macos: {script}\n")
    project.skill_files["dd"] = {"build.sh": "printf '#!/bin/sh\\necho denden-ok\\n' > denden\n"}
    project.roles["orchestrator"] = make_role("orchestrator", skills=["dd"])
    project.build()
    folder = project.state_dir / "skills" / "dd"
    shipped = snapshot(folder)
    subprocess.run(["sh", "./build.sh"], cwd=folder, check=True)  # what a trusted install runs, recorded
    (folder / "denden").chmod(0o755)
    (folder / RECORD_FILE).write_text(make_record(current_os(), script, shipped, snapshot(folder)).dumps())
    proc = start(project, "run:denden", env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["denden-ok"]


# -- skills: ["*"] -------------------------------------------------------------------------------------------


def test_a_skills_wildcard_stages_every_installed_skill_and_says_so(project, make_role, env) -> None:  # type: ignore[no-untyped-def]
    project.roles["orchestrator"] = make_role("orchestrator", skills=["*", "planning"], roles=["reviewer"])
    project.build()
    proc = start(project, "echo:done", env)
    assert proc.returncode == 0, proc.stderr
    [run_dir] = project.sessions_dir.iterdir()
    [workspace] = (run_dir / "agents").iterdir()
    assert sorted(p.name for p in (workspace / "skills").iterdir()) == ["coding", "git-basics", "planning", "reviewing"]

    shown = json.loads(run(project, "sessions", "show", run_dir.name, "--json", env=env).stdout)
    [agent] = shown["agents"]
    assert agent["via_wildcard"] == ["skill:coding@1.0.0", "skill:git-basics@1.0.0", "skill:reviewing@1.0.0"]
    text = run(project, "sessions", "show", run_dir.name, env=env).stdout
    assert "staged through `*`: skill:coding@1.0.0, skill:git-basics@1.0.0, skill:reviewing@1.0.0" in text

    why = run(project, "why", "skill", "reviewing", env=env)
    assert why.returncode == 0, why.stderr
    assert "role orchestrator 1.0.0 → skill reviewing 1.0.0 (via *)" in why.stdout.splitlines()
    assert "role reviewer 1.0.0 → skill reviewing 1.0.0" in why.stdout  # its own edge is still there
    tree = run(project, "tree", env=env).stdout.splitlines()
    at = tree.index("role orchestrator 1.0.0")
    assert "├── skill coding 1.0.0 (via *)" in tree[at:at + 8]
    assert "├── skill planning 1.0.0" in tree[at:at + 8]  # named: no mark


# -- required env: at start for the named closure, at delegation for what only `*` reaches -------------------


def test_a_role_reachable_only_through_a_wildcard_is_checked_when_delegated_to(project, make_role, env) -> None:  # type: ignore[no-untyped-def]
    project.roles["tweeter"] = make_role("tweeter", skills=["twitter"])
    project.skills["twitter"] = (
        "---\nname: twitter\ndescription: Posts\nmetadata:\n  strawpot:\n    env:\n      TWITTER_TOKEN:\n"
        "        required: true\n        description: API token\n---\n\nPost.\n")
    project.orchestrator_role = "lead"  # roles: ["*"]
    project.build()
    proc = start(project, "echo:started then delegate:tweeter:echo:tweeted", env)
    assert proc.returncode == 0, proc.stderr  # the session starts: the orchestrator may never delegate there
    started, denied = proc.stdout.splitlines()
    assert started == "started"
    assert denied.startswith("DENIED DENY_MISSING_ENV: role 'tweeter' cannot start: required environment variable "
                             "not set: TWITTER_TOKEN (required by skill twitter): API token. The user can export it, "
                             "or set it under [skills.twitter.env] in the global strawpot config")

    # once the value is saved in the global config, the delegation runs and the agent gets it
    Path(env["STRAWPOT_CONFIG_DIR"], "config.toml").write_text('[skills.twitter.env]\nTWITTER_TOKEN = "tk"\n')
    proc = start(project, "delegate:tweeter:env:TWITTER_TOKEN", env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["tk"]


def test_a_role_named_by_the_started_role_is_still_checked_at_start(project, make_role, env) -> None:  # type: ignore[no-untyped-def]
    project.roles["tweeter"] = make_role("tweeter", skills=["twitter"])
    project.roles["lead"] = make_role("lead", roles=["*", "tweeter"])
    project.skills["twitter"] = (
        "---\nname: twitter\ndescription: Posts\nmetadata:\n  strawpot:\n    env:\n      TWITTER_TOKEN:\n"
        "        required: true\n---\n\nPost.\n")
    project.orchestrator_role = "lead"
    project.build()
    proc = start(project, "echo:x", env)
    assert proc.returncode == 7, proc.stdout + proc.stderr
    assert "TWITTER_TOKEN (required by skill twitter)" in proc.stderr


# -- the wrapper's env and --files-dir ---------------------------------------------------------------------------


def env_agent(tmp_path: Path, build_env: object) -> Path:
    """The stub agent whose `build` answers with `"env": build_env`, as the OpenHands wrapper does."""
    target = tmp_path / "env-agent"
    shutil.copytree(STUB_AGENT, target, ignore=shutil.ignore_patterns("__pycache__"))
    wrapper = target / "bin" / "stub-wrapper"
    text = wrapper.read_text()
    old = 'print(json.dumps({"cmd": cmd, "cwd": args.working_dir}))'
    assert old in text
    answer = f'print(json.dumps({{"cmd": cmd, "cwd": args.working_dir, "env": json.loads({json.dumps(build_env)!r})}}))'
    wrapper.write_text(text.replace(old, answer))
    return target


def test_the_wrappers_env_and_the_projects_files_reach_the_agent(project, tmp_path: Path, env) -> None:  # type: ignore[no-untyped-def]
    project.build(env_agent(tmp_path, {"LLM_MODEL": "m-1", "TTY_INTERACTIVE": "1"}))
    env = {**env, "LLM_MODEL": "from-the-caller"}
    assert start(project, "files", env).stdout.splitlines() == ["no files"]  # no .strawpot/files: no flag
    files = project.state_dir / "files"
    files.mkdir()
    proc = start(project, "env:LLM_MODEL then env:TTY_INTERACTIVE then files", env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["m-1", "1", str(files)]  # the wrapper's env wins over the caller's


def test_a_files_folder_that_links_out_of_the_project_is_not_passed(project, tmp_path: Path, env) -> None:  # type: ignore[no-untyped-def]
    project.build()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (project.state_dir / "files").symlink_to(outside)
    proc = start(project, "files", env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["no files"]
    assert f"{project.state_dir / 'files'} is a link out of the project (to {outside}); it is not given to the " \
           "agents as --files-dir" in proc.stderr


@pytest.mark.parametrize(("build_env", "said"), [
    ({"LLM_MODEL": 5}, "'env' value of LLM_MODEL must be a string, got number 5"),
    ({"LLM_MODEL": ["a"]}, "'env' value of LLM_MODEL must be a string, got array"),
    (["LLM_MODEL=a"], "'env' must be an object of string values, got array"),
])
def test_a_wrapper_env_that_is_not_string_values_is_one_clear_error(project, tmp_path: Path, env, build_env, said) -> None:  # type: ignore[no-untyped-def]
    project.build(env_agent(tmp_path, build_env))
    proc = start(project, "echo:x", env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "could not start role orchestrator: stub-agent: wrapper build output: " + said in proc.stderr
    assert "Traceback" not in proc.stderr
