"""Paths a sandbox's walls are made of, found on disk and in the environment: the git folders and project files
an agent must not change, the programs it must see wherever they live, and the sockets that lead out of it."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

# The sandbox's own empty folders: bubblewrap mounts a fresh tmpfs on each, so nothing of the host's shows there
# (other users' and programs' temp files, and the sockets under /run: ssh-agent, gpg-agent, D-Bus, docker).
OWN_DIRS = (Path("/tmp"), Path("/run"), Path("/var/run"))
# Variables naming a socket that leads to a more privileged program; the socket is hidden wherever it lives.
SOCKET_VARS = ("SSH_AUTH_SOCK", "GPG_AGENT_INFO", "DBUS_SESSION_BUS_ADDRESS", "DBUS_SYSTEM_BUS_ADDRESS", "DOCKER_HOST",
               "CONTAINER_HOST", "PULSE_SERVER", "WAYLAND_DISPLAY")
MANIFEST_FILES = ("strawpot.toml", "strawpot.lock")
RESOLV_CONF = Path("/etc/resolv.conf")


def own_dirs() -> list[Path]:
    """The folders of OWN_DIRS that exist here, each once (on most systems /var/run is a link to /run)."""
    found: list[Path] = []
    for folder in OWN_DIRS:
        real = Path(os.path.realpath(folder))
        if real.is_dir() and real not in found:
            found.append(real)
    return found


def under_own_dir(path: Path) -> bool:
    """Whether `path` (itself, not what it links to) is in one of the sandbox's own folders."""
    real = Path(os.path.realpath(path.parent)) / path.name
    return any(real == own or own in real.parents for own in own_dirs())


def git_folders(path: Path) -> list[Path]:
    """The `.git` of the working tree holding `path` and, when it is a file (a linked worktree, a submodule), the
    git dir it names and that dir's common dir: every place git reads hooks and config from. Read from the files,
    never by running git (nothing of the repository runs)."""
    for folder in (path, *path.parents):
        dot = folder / ".git"
        if dot.is_dir():
            return [dot]
        if dot.is_file():
            found = [dot]
            try:
                text = dot.read_text(encoding="utf-8", errors="replace")
            except OSError:
                return found
            if not text.startswith("gitdir:"):
                return found
            git_dir = folder / text[len("gitdir:"):].strip()
            found.append(git_dir)
            try:
                common = (git_dir / "commondir").read_text(encoding="utf-8", errors="replace").strip()
            except OSError:
                return found
            found.append(git_dir / common)
            return found
    return []


def project_files(*folders: Path) -> list[Path]:
    """The project files of each folder (`strawpot.toml`, `strawpot.lock`): they decide how the next run is confined."""
    return [folder / name for folder in folders for name in MANIFEST_FILES]


def program_home(path: Path) -> Path:
    """What must be visible for the program at `path` to run: its prefix when it sits in a `bin` folder
    (`<venv>/bin/python` needs `<venv>/pyvenv.cfg` and `<venv>/lib`, `<prefix>/bin/tool` reads `<prefix>/lib`),
    else its own folder; never one of the sandbox's own folders as a whole."""
    folder = path.parent
    home = folder.parent if folder.name == "bin" else folder
    for candidate in (home, folder):
        if candidate not in own_dirs() and Path(os.path.realpath(candidate)) not in own_dirs():
            return candidate
    return path


def exposed(programs: Iterable[str | Path], path_var: str | None) -> list[Path]:
    """Where the `programs` (paths, or names looked up on `path_var`) live, when that is under one of the sandbox's
    own folders and would be covered by its empty tmpfs: the project's venv under /tmp, a tool unpacked there."""
    found: list[Path] = []
    for program in programs:
        text = str(program)
        located = text if os.sep in text else shutil.which(text, path=path_var)
        if not located or not os.path.isabs(located) or not os.path.exists(located):
            continue
        for candidate in (Path(located), Path(os.path.realpath(located))):
            if under_own_dir(candidate):
                home = program_home(candidate)
                if home not in found:
                    found.append(home)
    return found


def socket_paths(environ: Mapping[str, str], keep: Sequence[Path] = ()) -> list[Path]:
    """What to hide of the Unix sockets the environment names (ssh-agent, gpg-agent, D-Bus, docker, ...), wherever
    they are (a folder the walls show again, such as HOME under /tmp, would show them too): the socket's own
    folder (`~/.1password/agent.sock` hides `~/.1password`, with what else the agent keeps there), or only the
    socket when that folder is shallow (`/`, `/home/u`) or holds a path of `keep` (HOME, the working tree)."""
    kept = [Path(os.path.realpath(p)) for p in keep]
    found: list[Path] = []
    for name in SOCKET_VARS:
        for raw in _socket_addresses(environ.get(name, "")):
            path = Path(raw)
            if not path.is_absolute() or not os.path.lexists(path):
                continue
            folder = Path(os.path.realpath(path.parent))
            own = len(folder.parts) > 3 and not any(k == folder or folder in k.parents for k in kept)
            hide = folder if own else path
            if hide not in found:
                found.append(hide)
    return found


def _socket_addresses(value: str) -> list[str]:
    """The socket paths in one variable's value: a path, `unix:path=P,guid=…;…` (D-Bus), `unix://P` (docker),
    `P:pid:1` (GPG_AGENT_INFO)."""
    found = []
    for part in value.split(";"):
        part = part.strip()
        if part.startswith("unix://"):
            found.append(part[len("unix://"):])
        elif part.startswith("unix:"):
            rest = part[len("unix:"):]
            found += [rest] if rest.startswith("/") else [
                item[len("path="):] for item in rest.split(",") if item.startswith("path=")]
        elif part.startswith("/"):
            found.append(part.split(":")[0])
    return found


def name_service_files() -> list[Path]:
    """`/etc/resolv.conf` when it links into /run (systemd-resolved): kept visible, or nothing resolves names."""
    real = Path(os.path.realpath(RESOLV_CONF))
    return [real] if real != RESOLV_CONF and under_own_dir(real) and real.exists() else []


def bwrap_failure(text: str) -> str:
    """One readable line when `text` (a confined process's output) ends with bubblewrap's own error, else ""."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines or not lines[-1].startswith("bwrap: "):
        return ""
    return (f"the sandbox could not start it ({lines[-1][len('bwrap: '):]}): a path it needs is hidden in the "
            "sandbox (its own /tmp and /run, the secrets under HOME, [sandbox] hidden); move it, or list its "
            "folder in [sandbox] writable")
