"""The README's tour runs as written: its blocks follow each other (every `cd` lands in a folder that exists), and
every line of every block runs, after scripts/demo.sh, in a fresh copy of the project in a scratch folder.

The copy holds exactly the tracked files of this working tree (`git ls-files`, uncommitted edits included, mtimes
kept) and borrows the checkout's bootstrapped .venv, so nothing is installed again. The tour runs through bash in
a pane of a tmux server of the test's own, with a clean HOME: each line with stdin from /dev/null and its output
in files, except the lines that need a terminal (`strawpot start` without --task, `strawpot attach`), which run
on the pane itself; the test detaches from them with C-b d, as a reader would.
"""

from __future__ import annotations

import contextlib
import json
import os
import posixpath
import re
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
VENV = ROOT / ".venv"
README_PORT = "8787"  # hard-coded in the README; the test substitutes a free port, so parallel runs never collide
TOUR_DEADLINE = 120.0  # a bound for a hung line, not a speed check (the tour takes ~20 s)
PROMPT = "stub-agent>"  # the interactive stub agent is ready for a line (capture-pane drops the space after)


def tour_blocks() -> list[list[str]]:
    text = README.read_text(encoding="utf-8")
    tour = text.split("## A tour", 1)[1].split("\n## ", 1)[0]
    return [block.splitlines() for block in re.findall(r"```bash\n(.*?)```", tour, flags=re.S)]


def command_of(line: str) -> str:
    """The line without its trailing comment (the README writes them after two spaces or ` # `)."""
    return line.split("  #", 1)[0].split(" # ", 1)[0].strip()


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


# --- the tour, end to end -------------------------------------------------------------------------------------


@dataclass
class Step:
    """One line of the tour as it ran: its output, and the shell's environment and folder after it."""

    number: int
    line: str
    out: str = ""
    err: str = ""
    env: dict[str, str] = field(default_factory=dict, repr=False)
    cwd: Path = Path()

    @property
    def command(self) -> str:
        return command_of(self.line)


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


def needs_terminal(command: str) -> bool:
    """The lines strawpot runs interactively: attach, and start or resume with no task (and not headless)."""
    words = shlex.split(command)
    if words[:2] == ["strawpot", "attach"]:
        return True
    return words[:2] in (["strawpot", "start"], ["strawpot", "resume"]) and not {"--task", "--headless"} & set(words)


def background_ready_text(line: str) -> str | None:
    """For a `… &` line, the output the README promises once it is up (its comment, in quotes)."""
    if not command_of(line).endswith("&"):
        return None
    promised = re.search(r'#\s*"([^"]+)"', line)
    assert promised, f"`{line}` runs in the background but its comment does not quote what it prints when ready"
    return promised.group(1)


def runs_of(project: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in (project / ".strawpot" / "sessions").glob("run_*/session.json")]


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


def check_config_show(step: Step, tour: Tour) -> None:
    assert re.search(rf"registry\.url\s+= {re.escape(tour.url)}\s+\(env STRAWPOT_REGISTRY_URL\)", step.out), step.out


def check_cd_demo(step: Step, tour: Tour) -> None:
    assert step.cwd == tour.project


def check_tree(step: Step, tour: Tour) -> None:
    assert step.out.startswith("role lead 1.0.0") and "agent stub-agent 1.0.0" in step.out, step.out


def check_why(step: Step, tour: Tour) -> None:
    paths = step.out.splitlines()
    assert paths and all(path.startswith("role lead 1.0.0 → ") and "→ skill code-style 1.0.0" in path
                         for path in paths), step.out


def check_verify(step: Step, tour: Tour) -> None:
    assert step.err.startswith("ok: 14 packages, 21 files match the lock"), step.err


def check_start_echo(step: Step, tour: Tour) -> None:
    assert step.out.strip() == "hello" and "succeeded (exit code 0)" in step.err, (step.out, step.err)


def check_sessions(step: Step, tour: Tour) -> None:
    first = step.out.strip().splitlines()[1].split()
    assert first[:1] and first[0].startswith("run_") and "succeeded" in first, step.out


def check_info(step: Step, tour: Tour) -> None:
    assert step.out.startswith("agent fixture-coder 0.1.0") and "install script (linux): sh build/install.sh" in step.out


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
    assert events[-1]["event"] == "end" and events[-1]["scope"] == "run" and events[-1]["state"] == "succeeded"
    assert "fake-coder[lead] model=fake-small max_turns=2" in step.out, step.out


def check_detached(step: Step, tour: Tour) -> None:
    run_id = interactive_run(tour.project)["run_id"]
    assert f"detached from run {run_id}; it keeps running in tmux session strawpot-{run_id}" in step.err, step.err


def check_cancel(step: Step, tour: Tour) -> None:
    run = interactive_run(tour.project)
    assert f"run {run['run_id']} cancelled" in step.err and run["state"] == "cancelled", (step.err, run["state"])


def check_git_init(step: Step, tour: Tour) -> None:
    assert "(root-commit)" in step.out and (tour.project / ".git").is_dir(), step.out


def check_start_worktree(step: Step, tour: Tour) -> None:
    assert (tour.project / "hello.txt").read_text() == "hi"
    assert "applied the session's changes to your working tree (1 file(s)): hello.txt" in step.err, step.err
    assert newest_run(tour.project)["isolation"]["kind"] == "worktree"


def check_remember(step: Step, tour: Tour) -> None:
    assert re.fullmatch(r"[0-9a-f]{32}", step.out.strip()), step.out


def check_recall(step: Step, tour: Tour) -> None:
    assert "project  the build needs libfoo  [build]" in step.out, step.out


def check_mcp_config(step: Step, tour: Tour) -> None:
    server = json.loads((tour.project / ".mcp.json").read_text())["mcpServers"]["strawpot-memory"]
    assert server["args"] == ["mcp", "serve", "--project", str(tour.project)]


def check_sessions_show(step: Step, tour: Tour) -> None:
    run_id = newest_run(tour.project)["run_id"]
    assert step.out.startswith(f"run {run_id}: role lead, succeeded") and '"lock_sha256"' in step.out, step.out
    assert f"worktree: strawpot/{run_id} (merged)" in step.out, step.out


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
    (r"strawpot start --role lead --runtime stub-agent", check_detached),
    (r"strawpot attach RUN_ID", check_detached),
    (r"strawpot cancel RUN_ID", check_cancel),
    (r"git init && git add -A && git commit -m init", check_git_init),
    (r'strawpot start --role lead --runtime stub-agent --isolation worktree --headless --task "write:hello.txt=hi"',
     check_start_worktree),
    (r'strawpot memory remember "the build needs libfoo" --keyword build', check_remember),
    (r"strawpot memory recall build", check_recall),
    (r"strawpot mcp config > \.mcp\.json", check_mcp_config),
    (r"strawpot sessions show RUN_ID", check_sessions_show),
]


def check_for(command: str) -> Check | None:
    matching = [check for pattern, check in CHECKS if re.fullmatch(pattern, command)]
    return matching[0] if len(matching) == 1 else None


def tour_lines() -> list[str]:
    return [line for block in tour_blocks() for line in block if command_of(line) and not line.startswith("#")]


def driver_script(lines: list[str], port: int, clone: Path, state: Path) -> str:
    """The tour as one bash script: each line as written (README's port replaced), its exit code checked.

    Lines that mention RUN_ID get the newest run's id, as a reader would copy it from `strawpot sessions`.
    A background line is waited on until it prints what the README promises.
    """
    newest = ("import json, sys; runs = json.load(sys.stdin)['sessions']; "
              "print(max(runs, key=lambda r: r['started_at'])['run_id'])")
    out = [
        "unset TMUX TMUX_PANE  # a terminal as a reader's, not inside the test's tmux",
        f"__tour={shlex.quote(str(state))}",
        "trap 'echo $? > \"$__tour/rc\"' EXIT",
        "__tour_wait() {  # until file $2 or $3 holds text $1, at most 30 s",
        "  for _ in $(seq 300); do grep -qF -- \"$1\" \"$2\" \"$3\" && return 0; sleep 0.1; done; return 1",
        "}",
        f"cd {shlex.quote(str(clone))}",
    ]
    for number, line in enumerate(lines):
        text = line.replace(README_PORT, str(port))
        files = f'"$__tour/{number}'
        out.append(f"echo {number} > \"$__tour/at\"")
        if "RUN_ID" in command_of(text):
            out.append(f"RUN_ID=$(strawpot sessions --json </dev/null | python3 -c {shlex.quote(newest)})")
            text = re.sub(r"\bRUN_ID\b", '"$RUN_ID"', text)
        if needs_terminal(command_of(text)):
            out.append(f"{{ {text}\n}} 2>{files}.err\"")
        else:
            out.append(f"{{ {text}\n}} </dev/null >{files}.out\" 2>{files}.err\"")
        out.append("__tour_rc=$?; [ $__tour_rc = 0 ] || exit $__tour_rc")  # set -e, && lists included
        if (ready := background_ready_text(text)) is not None:
            out.append(f"echo $! > {files}.pid\"")
            out.append(f"__tour_wait {shlex.quote(ready)} {files}.out\" {files}.err\" || exit 124")
        out.append(f"env -0 > {files}.env\"; pwd > {files}.cwd\"")
    out.append("exit 0")
    return "\n".join(out) + "\n"


def copy_tracked_files(destination: Path) -> None:
    """The files `git ls-files` names, as they are in the working tree; modification times kept (bootstrap.sh
    compares pyproject.toml's with its stamp in .venv) and symlinks copied as symlinks."""
    names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True).stdout
    for name in names.decode().split("\0"):
        source = ROOT / name
        if not name or not (source.exists() or source.is_symlink()):
            continue  # deleted in the working tree, not yet in the index
        target = destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            os.symlink(os.readlink(source), target)
        else:
            shutil.copy2(source, target)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def clean_env(scratch: Path, clone: Path) -> dict[str, str]:
    """A reader's shell on a fresh account: no STRAWPOT_* variables, an empty HOME, git who knows its user."""
    home = scratch / "home"
    home.mkdir()
    (scratch / "tmux").mkdir()  # tmux ignores a TMUX_TMPDIR that does not exist
    (home / ".gitconfig").write_text("[user]\n\tname = Tour Reader\n\temail = reader@example.invalid\n")
    path = [p for p in os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep)
            if p and not Path(p).resolve().is_relative_to(VENV.resolve())]
    return {
        "PATH": os.pathsep.join(path), "HOME": str(home), "LANG": "C.UTF-8", "TERM": "xterm-256color",
        "XDG_CONFIG_HOME": str(home / ".config"), "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local" / "share"), "XDG_STATE_HOME": str(home / ".local" / "state"),
        "TMUX_TMPDIR": str(scratch / "tmux"),  # the test's tmux server and every run's own, apart from others
        "GIT_CONFIG_NOSYSTEM": "1",
        # .venv has strawpot installed editable from the checkout: this makes the copy's code the one that runs
        "PYTHONPATH": str(clone),
    }


class TmuxServers:
    """The tmux servers under the scratch TMUX_TMPDIR: the test's own (`tour`) and each interactive run's."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.folder = Path(env["TMUX_TMPDIR"]) / f"tmux-{os.getuid()}"

    def tmux(self, *args: str, socket_name: str = "tour") -> subprocess.CompletedProcess[str]:
        return subprocess.run(["tmux", "-L", socket_name, "-f", "/dev/null", *args], env=self.env,
                              capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=30)

    def runs(self) -> list[str]:
        return sorted(p.name for p in self.folder.glob("strawpot-*")) if self.folder.is_dir() else []

    def attached_and_prompting(self, name: str) -> bool:
        clients = self.tmux("list-clients", "-F", "#{client_name}", socket_name=name)
        pane = self.tmux("capture-pane", "-p", "-t", name, socket_name=name)
        return bool(clients.stdout.strip()) and pane.returncode == 0 and PROMPT in pane.stdout

    def kill_all(self) -> None:
        for name in ["tour", *self.runs()]:
            with contextlib.suppress(subprocess.SubprocessError):
                self.tmux("kill-server", socket_name=name)


def detach_when_ready(servers: TmuxServers, state: Path, number: int, deadline: float) -> None:
    """Wait for the line's tmux client to show the agent's prompt, then press C-b d in it (again if need be)."""
    sent_at = 0.0
    while time.monotonic() < deadline and read_at(state) == number and not (state / "rc").exists():
        ready = [name for name in servers.runs() if servers.attached_and_prompting(name)]
        if ready and time.monotonic() - sent_at > 5:  # a key pressed before the client listened is lost
            servers.tmux("send-keys", "-t", "tour", "C-b", "d")
            sent_at = time.monotonic()
        time.sleep(0.1)


def read_at(state: Path) -> int:
    with contextlib.suppress(OSError, ValueError):
        return int((state / "at").read_text())
    return -1


def read_step(state: Path, number: int, line: str) -> Step:
    def text(suffix: str) -> str:
        path = state / f"{number}.{suffix}"
        return path.read_text(errors="replace") if path.exists() else ""

    env = dict(item.split("=", 1) for item in text("env").split("\0") if "=" in item)
    return Step(number, line, text("out"), text("err"), env, Path(text("cwd").strip()))


@contextlib.contextmanager
def scratch_folder() -> Iterator[Path]:
    # short, under /tmp: the runs' Unix sockets (denden.sock, tmux) must fit in 108 bytes
    scratch = Path(tempfile.mkdtemp(prefix="sp-tour-", dir="/tmp"))
    try:
        yield scratch
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@pytest.mark.e2e
def test_the_tour_runs_as_written_from_a_fresh_copy() -> None:
    lines = tour_lines()
    unknown = [line for line in lines if check_for(command_of(line)) is None]
    assert not unknown, f"tour lines with no (or more than one) row in CHECKS of {__file__}: {unknown}"
    stamp = VENV / ".strawpot-installed"
    assert stamp.is_file() and (ROOT / "pyproject.toml").stat().st_mtime <= stamp.stat().st_mtime, \
        "the checkout's .venv is not up to date: run `bash scripts/bootstrap.sh` first"
    with scratch_folder() as scratch:
        clone, state = scratch / "project", scratch / "state"
        state.mkdir()
        copy_tracked_files(clone)
        (clone / ".venv").symlink_to(VENV)
        env = clean_env(scratch, clone)
        imported = subprocess.run([str(clone / ".venv" / "bin" / "python"), "-c", "import strawpot; print(strawpot.__file__)"],
                                  cwd=scratch, env=env, capture_output=True, text=True, check=True).stdout
        assert Path(imported.strip()).is_relative_to(clone), imported

        demo = subprocess.run(["bash", "scripts/demo.sh"], cwd=clone, env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=300)
        assert demo.returncode == 0 and "demo finished" in demo.stdout, demo.stdout[-3000:] + demo.stderr[-3000:]
        assert "setting up .venv" not in demo.stderr  # bootstrap.sh found the borrowed .venv up to date

        tour = Tour(clone, free_port())
        (state / "tour.sh").write_text(driver_script(lines, tour.port, clone, state))
        servers = TmuxServers(env)
        pane_group = None
        try:
            started = servers.tmux("new-session", "-d", "-s", "tour", "-x", "200", "-y", "50",
                                   f"bash {shlex.quote(str(state / 'tour.sh'))}")
            assert started.returncode == 0, started.stderr
            pane = servers.tmux("display-message", "-p", "-t", "tour", "#{pane_pid}").stdout.strip()
            with contextlib.suppress(ProcessLookupError, ValueError):
                pane_group = os.getpgid(int(pane))
            deadline = time.monotonic() + TOUR_DEADLINE
            driven: set[int] = set()
            while not (state / "rc").exists() and time.monotonic() < deadline:
                at = read_at(state)
                if 0 <= at < len(lines) and at not in driven and needs_terminal(command_of(lines[at])):
                    driven.add(at)
                    detach_when_ready(servers, state, at, min(deadline, time.monotonic() + 30))
                time.sleep(0.05)
            at = read_at(state)
            last = read_step(state, at, lines[at]) if 0 <= at < len(lines) else None
            screen = servers.tmux("capture-pane", "-p", "-t", "tour").stdout
            assert (state / "rc").exists(), f"the tour hung at `{last and last.line}`\n{screen}"
            rc = int((state / "rc").read_text())
            assert rc == 0 and at == len(lines) - 1, \
                f"`{last and last.line}` exited {rc}\nstdout: {last and last.out[-2000:]}\nstderr: " \
                f"{last and last.err[-2000:]}\nterminal:\n{screen}"
            for number, line in enumerate(lines):
                step = read_step(state, number, line)
                check = check_for(step.command)
                assert check is not None
                try:
                    check(step, tour)
                except (AssertionError, KeyError, IndexError, ValueError) as exc:
                    raise AssertionError(f"`{line}` ran, but did not do what it should: {exc!r}\n"
                                         f"stdout: {step.out[-2000:]}\nstderr: {step.err[-2000:]}") from exc
        finally:
            stop(state, pane_group)
            servers.kill_all()


def stop(state: Path, group: int | None) -> None:
    """End whatever the tour left running: the `&` registry and anything else in the pane's process group."""
    pids = []
    for pid_file in state.glob("*.pid"):
        with contextlib.suppress(ValueError):
            pids.append(int(pid_file.read_text()))
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        if group is not None and group > 1 and group != os.getpgrp():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, sig)
        if sig == signal.SIGTERM:
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and any(alive(pid) for pid in pids):
                time.sleep(0.05)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"

