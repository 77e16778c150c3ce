"""Running the README's tour as a reader would: its lines, a fresh copy of the project, bash on a tmux pane.

The copy holds exactly the tracked files of the working tree (`git ls-files`, uncommitted edits included,
modification times kept) and borrows the checkout's bootstrapped .venv, so nothing is installed again. The
tour runs through one bash in a pane of a tmux server of the test's own, with a clean HOME: each line with
stdin from /dev/null and its output in files, except the lines that need a terminal, which run on the pane
itself; the test detaches from them with C-b d. What each line printed, and the shell's environment and
folder after it, come back as `Step`s.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
VENV = ROOT / ".venv"
README_PORT = "8787"  # hard-coded in the README; the test puts a free port in its place (runs never collide)
LINE_DEADLINE = 120.0  # a bound for a hung line, not a speed check (the whole tour takes ~10 s)
DETACH_DEADLINE = 60.0
PROMPT = "stub-agent>"  # the interactive stub agent is ready for a line (capture-pane drops the space after)
# the newest run's id, as a reader copies it from `strawpot sessions`
NEWEST_RUN = ("import json, sys; runs = json.load(sys.stdin)['sessions']; "
              "print(max(runs, key=lambda r: r['started_at'])['run_id'])")


def tour_blocks() -> list[list[str]]:
    text = README.read_text(encoding="utf-8")
    tour = text.split("## A tour", 1)[1].split("\n## ", 1)[0]
    return [block.splitlines() for block in re.findall(r"```bash\n(.*?)```", tour, flags=re.S)]


def command_of(line: str) -> str:
    """The line without its trailing comment (the README writes them after two spaces or ` # `)."""
    return line.split("  #", 1)[0].split(" # ", 1)[0].strip()


def tour_lines() -> list[str]:
    """Every line of every block that runs something (comment-only lines aside)."""
    return [line for block in tour_blocks() for line in block
            if command_of(line) and not line.startswith("#")]


def needs_terminal(command: str) -> bool:
    """The lines strawpot runs interactively: attach, and start or resume with no task (and not headless)."""
    words = shlex.split(command)
    if words[:2] == ["strawpot", "attach"]:
        return True
    interactive = not {"--task", "--headless"} & set(words)
    return words[:2] in (["strawpot", "start"], ["strawpot", "resume"]) and interactive


def background_ready_text(line: str) -> str | None:
    """For a `… &` line, the output the README promises once it is up (its comment, in quotes)."""
    if not command_of(line).endswith("&"):
        return None
    promised = re.search(r'#\s*"([^"]+)"', line)
    assert promised, f"`{line}` runs in the background, but its comment does not quote what it prints when up"
    return promised.group(1)


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


def driver_script(lines: list[str], port: int, clone: Path, state: Path) -> str:
    """The tour as one bash script: each line as written (the README's port replaced), its exit code checked.

    Lines that mention RUN_ID get the newest run's id. A background line is waited on until it prints what
    the README promises. Each line's output, environment and folder go to `state`.
    """
    out = [
        "unset TMUX TMUX_PANE  # a terminal as a reader's, not one inside the test's tmux",
        f"__tour={shlex.quote(str(state))}",
        # at the end the shell stays (at most 10 min) until the test is done with what the tour left running:
        # the registry in the background gets SIGHUP when the pane's shell, its terminal's leader, exits
        # rc appears whole (written aside, then renamed): the test reads it as soon as it exists
        "trap 'echo $? > \"$__tour/rc.part\"; mv \"$__tour/rc.part\" \"$__tour/rc\"; "
        "for _ in $(seq 6000); do [ -e \"$__tour/done\" ] && break; sleep 0.1; done' EXIT",
        "__tour_wait() {  # until file $2 or $3 holds text $1, at most 60 s",
        "  for _ in $(seq 600); do grep -qF -- \"$1\" \"$2\" \"$3\" && return 0; sleep 0.1; done; return 1",
        "}",
        f"cd {shlex.quote(str(clone))}",
    ]
    for number, line in enumerate(lines):
        text = line.replace(README_PORT, str(port))
        files = f'"$__tour/{number}'
        out.append(f"echo {number} > \"$__tour/at\"")
        if "RUN_ID" in command_of(text):
            newest = f"strawpot sessions --json </dev/null | python3 -c {shlex.quote(NEWEST_RUN)}"
            out.append(f"RUN_ID=$({newest})")
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
    """A reader's shell on a fresh account: no STRAWPOT_* variables, an empty HOME, git knowing its user."""
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
        # .venv has strawpot installed editable from the checkout: with this the copy's code is what runs
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

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "tour").stdout

    def kill_all(self) -> None:
        for name in ["tour", *self.runs()]:
            with contextlib.suppress(subprocess.SubprocessError):
                self.tmux("kill-server", socket_name=name)


class TourFailed(AssertionError):
    pass


@contextlib.contextmanager
def run_tour(lines: list[str], clone: Path, port: int, env: dict[str, str],
             state: Path) -> Iterator[list[Step]]:
    """Run the tour's lines (after scripts/demo.sh made .demo/project): every step, while what the tour left
    running (its registry) still runs; on leaving, all of it stopped."""
    (state / "tour.sh").write_text(driver_script(lines, port, clone, state))
    servers = TmuxServers(env)
    group = None
    try:
        started = servers.tmux("new-session", "-d", "-s", "tour", "-x", "200", "-y", "50",
                               f"bash {shlex.quote(str(state / 'tour.sh'))}")
        assert started.returncode == 0, started.stderr
        pane = servers.tmux("display-message", "-p", "-t", "tour", "#{pane_pid}").stdout.strip()
        with contextlib.suppress(ProcessLookupError, ValueError):
            group = os.getpgid(int(pane))
        deadline, line_at = time.monotonic() + LINE_DEADLINE, read_at(state)
        driven: set[int] = set()
        while not (state / "rc").exists() and time.monotonic() < deadline:
            at = read_at(state)
            if at != line_at:  # the next line began: it has a deadline of its own
                deadline, line_at = time.monotonic() + LINE_DEADLINE, at
            if 0 <= at < len(lines) and at not in driven and needs_terminal(command_of(lines[at])):
                driven.add(at)
                detach_when_ready(servers, state, at, min(deadline, time.monotonic() + DETACH_DEADLINE))
            time.sleep(0.05)
        at = read_at(state)
        last = read_step(state, at, lines[at]) if 0 <= at < len(lines) else Step(at, "(before line 1)")
        if not (state / "rc").exists():
            raise TourFailed(f"the tour hung at `{last.line}`\nterminal:\n{servers.screen()}")
        rc = int((state / "rc").read_text())
        if rc != 0 or at != len(lines) - 1:
            raise TourFailed(f"`{last.line}` exited {rc}\nstdout: {last.out[-2000:]}\n"
                             f"stderr: {last.err[-2000:]}\nterminal:\n{servers.screen()}")
        yield [read_step(state, number, line) for number, line in enumerate(lines)]
    finally:
        (state / "done").touch()
        stop(state, group)
        servers.kill_all()


def detach_when_ready(servers: TmuxServers, state: Path, number: int, deadline: float) -> None:
    """Wait for the line's tmux client to show the agent's prompt, then press C-b d (again if need be)."""
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
        deadline = time.monotonic() + 5
        while sig == signal.SIGTERM and time.monotonic() < deadline and any(map(alive, pids)):
            time.sleep(0.05)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"
