"""The README's tour runs as written: its blocks follow each other (every `cd` lands in a folder that exists),
and every line of every block runs, after scripts/demo.sh, in a fresh copy of the project in a scratch folder
(tests/_tour.py says how), and does what it says."""

from __future__ import annotations

import json
import posixpath
import re
import shlex
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests._short_paths import short_folder
from tests._tour import (
    ROOT,
    VENV,
    Step,
    clean_env,
    command_of,
    copy_tracked_files,
    free_port,
    run_tour,
    tour_blocks,
    tour_lines,
)


def test_every_cd_in_the_tour_lands_in_a_folder_that_exists() -> None:
    blocks = tour_blocks()
    assert len(blocks) >= 3
    made = {"/repo", "/repo/.demo", "/repo/.demo/project", "/repo/fixtures"}
    cwd = "/repo"
    for block in blocks:
        for line in block:
            command = command_of(line)
            if not command or command.startswith("#"):
                continue
            for part in command.split("&&"):
                words = shlex.split(part)
                if words[:2] == ["mkdir", words[1] if len(words) > 1 else ""] and len(words) == 2:
                    made.add(posixpath.normpath(posixpath.join(cwd, words[1])))
                elif words and words[0] == "cd":
                    target = posixpath.normpath(posixpath.join(cwd, words[1]))
                    assert target in made, f"`{line.strip()}` runs in {cwd}, where {words[1]} does not exist"
                    cwd = target


@dataclass
class Tour:
    clone: Path
    port: int

    @property
    def project(self) -> Path:
        return self.clone / ".demo" / "project"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def runs_of(project: Path) -> list[dict[str, Any]]:
    sessions = project / ".strawpot" / "sessions"
    return [json.loads(path.read_text()) for path in sessions.glob("run_*/session.json")]


def newest_run(project: Path) -> dict[str, Any]:
    runs = runs_of(project)
    assert runs, f"no run recorded in {project}"
    return max(runs, key=lambda run: float(run["started_at"]))


def interactive_run(project: Path) -> dict[str, Any]:
    """The tour's one run in tmux (the others are headless)."""
    runs = [run for run in runs_of(project) if run.get("tmux")]
    assert len(runs) == 1, [run["run_id"] for run in runs]
    return runs[0]


def check_activate(step: Step, tour: Tour) -> None:
    assert step.env["VIRTUAL_ENV"].endswith(".venv")
    assert shutil.which("strawpot", path=step.env["PATH"]) == f"{step.env['VIRTUAL_ENV']}/bin/strawpot"


def check_token(step: Step, tour: Tour) -> None:
    assert re.fullmatch(r"\S{20,}", step.env.get("STRAWPOT_TOKEN", "")), step.env.get("STRAWPOT_TOKEN")


def check_serve(step: Step, tour: Tour) -> None:
    assert f"registry listening on {tour.url}" in step.out + step.err
    # what it printed in the background of the whole tour: no access log (`--access-log` asks for one)
    assert "HTTP/1.1" not in step.out + step.err, step.err[-2000:]
    # still serving (the test stops it afterwards): the page the README sends a browser to
    page = httpx.get(f"{tour.url}/skills/git-workflow", headers={"accept": "text/html"}, timeout=30)
    assert page.status_code == 200 and "git-workflow" in page.text, page.status_code


def check_registry_url(step: Step, tour: Tour) -> None:
    assert step.env["STRAWPOT_REGISTRY_URL"] == tour.url


def check_validate(step: Step, tour: Tour) -> None:
    assert step.out.startswith("ok: skill code-review 1.2.0"), step.out


def check_publish(step: Step, tour: Tour) -> None:
    slug = shlex.split(step.command)[-1].rstrip("/").rsplit("/", 1)[-1]
    assert re.search(rf"published (skill|agent) {slug} \S+ to {re.escape(tour.url)}", step.out), step.out


def check_mkdir_cd(step: Step, tour: Tour) -> None:
    assert step.cwd == tour.clone / "my-project"


def check_install(step: Step, tour: Tour) -> None:
    project = tour.clone / "my-project"
    assert (project / ".strawpot" / "skills" / "git-workflow" / "SKILL.md").is_file()
    assert 'git-workflow = "^1.0.0"' in (project / "strawpot.toml").read_text()
    assert "git-workflow" in (project / "strawpot.lock").read_text()
    assert "+ skill git-workflow 1.0.0" in step.err
    assert (project / ".gitignore").read_text() == ".strawpot/\n"  # in a git repository: the clone


def check_config_show(step: Step, tour: Tour) -> None:
    origin = rf"registry\.url\s+= {re.escape(tour.url)}\s+\(env STRAWPOT_REGISTRY_URL\)"
    assert re.search(origin, step.out), step.out


def check_cd_demo(step: Step, tour: Tour) -> None:
    assert step.cwd == tour.project


def check_tree(step: Step, tour: Tour) -> None:
    roots = [line for line in step.out.splitlines() if not line.startswith(("├", "└", "│", " "))]
    assert roots == ["skill denden 1.0.0", "role lead 1.0.0", "agent fixture-coder 0.1.0"], step.out
    assert "agent stub-agent 1.0.0" in step.out, step.out


def check_why(step: Step, tour: Tour) -> None:
    paths = step.out.splitlines()
    assert paths and all(path.startswith("role lead 1.0.0 → ") and "→ skill code-style 1.0.0" in path
                         for path in paths), step.out


def check_verify(step: Step, tour: Tour) -> None:
    # one line, not cut at 80 columns though it goes to a file
    assert step.err.splitlines()[0] == ("ok: 15 packages, 25 files match the lock; 1 built file of 1 package "
                                        "matches its install record"), step.err


def check_start_echo(step: Step, tour: Tour) -> None:
    assert step.out.strip() == "hello" and "succeeded (exit code 0)" in step.err, (step.out, step.err)
    # the socket path whole on its line, to copy
    assert re.search(r"^run run_\S+: role lead, Denden on unix:/\S+/denden\.sock$", step.err, re.M), step.err


def check_sessions(step: Step, tour: Tour) -> None:
    first = step.out.strip().splitlines()[1].split()
    assert first[:1] and first[0].startswith("run_") and "succeeded" in first, step.out


def check_info(step: Step, tour: Tour) -> None:
    assert step.out.startswith("agent fixture-coder 0.1.0"), step.out
    assert "install script (linux): sh build/install.sh" in step.out, step.out


def check_trust(step: Step, tour: Tour) -> None:
    assert 'trusted = ["agent:fixture-coder"]' in (tour.project / "strawpot.toml").read_text()
    assert (tour.project / ".strawpot" / "agents" / "fixture-coder" / "fixture_coder").is_file()


def check_coder_token(step: Step, tour: Tour) -> None:
    assert step.env["FIXTURE_CODER_TOKEN"] == "demo"


def check_tools_path(step: Step, tour: Tour) -> None:
    found = shutil.which("fake-coder", path=step.env["PATH"])
    assert found and Path(found).resolve() == tour.clone / "fixtures" / "tools" / "fake-coder"


def check_doctor(step: Step, tour: Tour) -> None:
    assert "ok  agent fixture-coder 0.1.0" in step.out and "ok  agent stub-agent 1.0.0" in step.out, step.out


def check_start_coder(step: Step, tour: Tour) -> None:
    events = [json.loads(line) for line in step.err.splitlines()]
    assert (events[-1]["event"], events[-1]["scope"], events[-1]["state"]) == ("end", "run", "succeeded")
    assert "fake-coder[lead] model=fake-small max_turns=2" in step.out, step.out


def paused_run(project: Path) -> dict[str, Any]:
    """The run the tour paused (and then resumed): the one started with the task `pause`."""
    [run] = [run for run in runs_of(project) if run["task"] == "pause"]
    return run


def check_start_pause(step: Step, tour: Tour) -> None:
    run = paused_run(tour.project)
    [agent] = run["agents"]
    assert agent["agent"] == "fixture-coder" and agent["session_id"], run
    assert f"run {run['run_id']} paused (exit code 0)" in step.err, step.err
    assert f"continue it with `strawpot resume {run['run_id']}`" in step.err, step.err


def check_resume(step: Step, tour: Tour) -> None:
    run = paused_run(tour.project)
    [agent] = run["agents"]
    assert (run["state"], agent["state"], agent["task"]) == ("succeeded", "succeeded", "go on"), run
    assert step.out.splitlines()[-1] == f"resumed {agent['session_id']}", step.out  # the same conversation


def check_detached(step: Step, tour: Tour) -> None:
    run_id = interactive_run(tour.project)["run_id"]
    detached = f"detached from run {run_id}; it keeps running in tmux session strawpot-{run_id}"
    assert detached in step.err, step.err


def check_cancel(step: Step, tour: Tour) -> None:
    run = interactive_run(tour.project)
    assert f"run {run['run_id']} cancelled" in step.err, step.err
    assert (run["state"], run["exit_code"]) == ("cancelled", 130), run


def git_status(project: Path) -> list[str]:
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=project, check=True,
                          capture_output=True, text=True).stdout.splitlines()


def check_git_init(step: Step, tour: Tour) -> None:
    assert "(root-commit)" in step.out and (tour.project / ".git").is_dir(), step.out
    committed = subprocess.run(["git", "ls-files"], cwd=tour.project, check=True, capture_output=True,
                               text=True).stdout.splitlines()
    assert ".gitignore" in committed and not [name for name in committed if ".strawpot" in name], committed


def check_start_worktree(step: Step, tour: Tour) -> None:
    assert (tour.project / "hello.txt").read_text() == "hi"
    assert "applied the session's changes to your working tree (1 file): hello.txt" in step.err, step.err
    assert newest_run(tour.project)["isolation"]["kind"] == "worktree"


def check_remember(step: Step, tour: Tour) -> None:
    assert re.fullmatch(r"[0-9a-f]{32}", step.out.strip()), step.out


def check_recall(step: Step, tour: Tour) -> None:
    assert "project  the build needs libfoo  [build]" in step.out, step.out


def check_mcp_config(step: Step, tour: Tour) -> None:
    server = json.loads((tour.project / ".mcp.json").read_text())["mcpServers"]["strawpot-memory"]
    assert server["args"] == ["mcp", "serve", "--project", str(tour.project)]


def check_sessions_show(step: Step, tour: Tour) -> None:
    run = newest_run(tour.project)
    run_id = run["run_id"]
    assert step.out.startswith(f"run {run_id}: role lead, succeeded"), step.out
    assert f"inputs: strawpot.lock sha256 {run['inputs']['lock_sha256']}" in step.out, step.out
    assert len(step.out.splitlines()) < 25, step.out  # a summary, not the record's JSON
    assert f"worktree: strawpot/{run_id} (merged)" in step.out, step.out
    assert "merge: applied the session's changes to your working tree (1 file): hello.txt" in step.out, step.out
    # the runs, the memory database: none of it is for git (the session's hello.txt and .mcp.json are)
    assert sorted(git_status(tour.project)) == ["?? .mcp.json", "?? hello.txt"], git_status(tour.project)


Check = Callable[[Step, Tour], None]
# Every line of the tour, by its command: what it must have done. A line the README gains without a row here
# fails the test, which then says so: a tour line nobody checks is a line nobody knows still works.
CHECKS: list[tuple[str, Check]] = [
    (r"source \.venv/bin/activate", check_activate),
    (r"export STRAWPOT_TOKEN=\$\(strawpot registry token create .*\)", check_token),
    (r"strawpot registry serve .*&", check_serve),
    (r"export STRAWPOT_REGISTRY_URL=\S+", check_registry_url),
    (r"strawpot validate fixtures/skills/code-review", check_validate),
    (r"strawpot publish \S+", check_publish),
    (r"mkdir my-project && cd my-project", check_mkdir_cd),
    (r"strawpot install skill git-workflow", check_install),
    (r"strawpot config show --origin", check_config_show),
    (r"cd \.\./\.demo/project", check_cd_demo),
    (r"strawpot tree", check_tree),
    (r"strawpot why skill code-style", check_why),
    (r"strawpot verify", check_verify),
    (r'strawpot start --role lead --headless --task "echo:hello"', check_start_echo),
    (r"strawpot sessions", check_sessions),
    (r"strawpot info agent fixture-coder", check_info),
    (r"strawpot trust agent:fixture-coder", check_trust),
    (r"export FIXTURE_CODER_TOKEN=demo", check_coder_token),
    (r'export PATH="\$PWD/\.\./\.\./fixtures/tools:\$PATH"', check_tools_path),
    (r"strawpot doctor", check_doctor),
    (r"strawpot start --role lead --runtime fixture-coder .*--progress json", check_start_coder),
    (r'strawpot start --role lead --runtime fixture-coder --headless --task "pause"', check_start_pause),
    (r'strawpot resume RUN_ID --headless --task "go on"', check_resume),
    (r"strawpot start --role lead --runtime stub-agent", check_detached),
    (r"strawpot attach RUN_ID", check_detached),
    (r"strawpot cancel RUN_ID", check_cancel),
    (r"git init && git add -A && git commit -m init", check_git_init),
    (r"strawpot start --role lead --runtime stub-agent --isolation worktree --headless "
     r'--task "write:hello.txt=hi"',
     check_start_worktree),
    (r'strawpot memory remember "the build needs libfoo" --keyword build', check_remember),
    (r"strawpot memory recall build", check_recall),
    (r"strawpot mcp config > \.mcp\.json", check_mcp_config),
    (r"strawpot sessions show RUN_ID", check_sessions_show),
]


def check_for(command: str) -> Check | None:
    matching = [check for pattern, check in CHECKS if re.fullmatch(pattern, command)]
    return matching[0] if len(matching) == 1 else None


@pytest.mark.e2e
@pytest.mark.timeout(900)  # 40-45 s on an idle machine; the suite's 300 s is too near on a loaded one
def test_the_tour_runs_as_written_from_a_fresh_copy() -> None:
    lines = tour_lines()
    unknown = [line for line in lines if check_for(command_of(line)) is None]
    assert not unknown, f"tour lines with no (or more than one) row in CHECKS of {__file__}: {unknown}"
    stamp = VENV / ".strawpot-installed"
    assert stamp.is_file() and (ROOT / "pyproject.toml").stat().st_mtime <= stamp.stat().st_mtime, \
        "the checkout's .venv is not up to date: run `bash scripts/bootstrap.sh` first"
    with short_folder("sp-tour-") as scratch:
        clone, state = scratch / "project", scratch / "state"
        state.mkdir()
        copy_tracked_files(clone)
        subprocess.run(["git", "init", "-q"], cwd=clone, check=True, capture_output=True)  # a reader has a clone
        (clone / ".venv").symlink_to(VENV)
        env = clean_env(scratch, clone)
        imported = subprocess.run([str(clone / ".venv" / "bin" / "python"), "-c",
                                   "import strawpot; print(strawpot.__file__)"],
                                  cwd=scratch, env=env, capture_output=True, text=True, check=True).stdout
        assert Path(imported.strip()).is_relative_to(clone), imported

        demo = subprocess.run(["bash", "scripts/demo.sh"], cwd=clone, env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=300)
        said = demo.stdout[-2000:] + demo.stderr[-2000:]
        assert demo.returncode == 0 and "demo finished" in demo.stdout, said
        assert "setting up .venv" not in demo.stderr  # bootstrap.sh found the borrowed .venv up to date
        assert "HTTP/1.1" not in demo.stdout + demo.stderr  # its registry's access log is off

        tour = Tour(clone, free_port())
        with run_tour(lines, clone, tour.port, env, state) as steps:
            for step in steps:
                check = check_for(step.command)
                assert check is not None
                try:
                    check(step, tour)
                except (AssertionError, KeyError, IndexError, ValueError) as exc:
                    raise AssertionError(f"`{step.line}` ran, but did not do what it should: {exc!r}\n"
                                         f"stdout: {step.out[-2000:]}\nstderr: {step.err[-2000:]}") from exc
