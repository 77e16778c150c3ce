"""Sandboxes: turn (argv, cwd, walls) into the argv that runs a command confined, or unchanged.

A `Sandbox` is one mechanism (`NoSandbox`, `BwrapSandbox`; macOS `sandbox-exec` or a container engine would each
be one more class). `Walls` say what a confined process may touch: paths it may write, paths that must stay
readable under the private `/tmp` and `/run`, paths hidden outright, paths kept read-only inside a writable one, and
whether it has a network. The environment is the caller's: the sandbox never builds one of its own.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from sandbox.paths import name_service_files, own_dirs, socket_paths
from strawpot.model.errors import MissingToolError, UsageError
from strawpot.model.folders import secret_config_dirs

if TYPE_CHECKING:
    from strawpot.model.settings import Settings

# Secrets' folders under HOME that no confined process sees: keys, cloud and registry tokens, browser profiles.
HIDDEN_IN_HOME = (
    ".ssh", ".aws", ".gnupg", ".config/strawpot", ".netrc", ".docker/config.json", ".kube", ".config/gcloud",
    ".azure", ".mozilla", ".config/google-chrome", ".config/chromium", ".config/BraveSoftware",
    ".config/microsoft-edge", ".var/app/org.mozilla.firefox", "snap/firefox", "snap/chromium",
)
PROBE_TIMEOUT = 10.0


@dataclass(frozen=True)
class Walls:
    """What a confined process may touch; everything else is read-only (and `/tmp` and `/run` are its own)."""

    writable: tuple[Path, ...] = ()
    readable: tuple[Path, ...] = ()  # re-exposed read-only where the private /tmp or /run would cover them
    hidden: tuple[Path, ...] = ()
    protected: tuple[Path, ...] = ()  # read-only even inside a writable path (the project's .strawpot)
    network: bool = True

    def plus(self, *, writable: Sequence[Path] = (), readable: Sequence[Path] = ()) -> Walls:
        return replace(self, writable=(*self.writable, *writable), readable=(*self.readable, *readable))


class Sandbox(Protocol):
    name: str

    def check(self) -> None:
        """Raise MissingToolError (exit 7) when this mechanism cannot confine anything here."""

    def command(self, argv: Sequence[str], walls: Walls, cwd: Path | None = None) -> list[str]:
        """The argv that runs `argv` (in `cwd`) inside `walls`."""


class NoSandbox:
    """No wall: the command runs as the user, as it is."""

    name = "none"

    def check(self) -> None:
        return None

    def command(self, argv: Sequence[str], walls: Walls, cwd: Path | None = None) -> list[str]:
        return list(argv)


class BwrapSandbox:
    """bubblewrap (Linux): new user, pid, ipc, uts, cgroup (and, network off, net) namespaces; a read-only root."""

    name = "bwrap"

    def __init__(self, setting: str = "[session] sandbox", path: str | None = None) -> None:
        self.setting = setting  # named in the failure, so the user knows what to change
        self.path = path
        self._checked = False

    def check(self) -> None:
        if self._checked:
            return
        import shutil
        import subprocess  # only to probe bwrap: an install without a confined script never starts a process

        found = self.path or shutil.which("bwrap")
        fix = f'install it (Debian/Ubuntu: `apt-get install bubblewrap`), or set {self.setting} = "none"'
        if found is None:
            raise MissingToolError(f'bubblewrap (bwrap) is not on PATH, so {self.setting} = "bwrap" cannot confine '
                                   "anything; nothing was run unconfined", hint=fix)
        try:
            probe = subprocess.run([found, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "true"],
                                   capture_output=True, text=True, timeout=PROBE_TIMEOUT, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise MissingToolError(f"bubblewrap ({found}) could not be run: {exc}; nothing was run unconfined",
                                   hint=fix) from None
        if probe.returncode != 0:
            why = (probe.stderr.strip().splitlines() or [f"exit {probe.returncode}"])[-1]
            raise MissingToolError(
                f"bubblewrap cannot create namespaces here ({why}); nothing was run unconfined",
                hint=f"allow unprivileged user namespaces (e.g. sysctl kernel.unprivileged_userns_clone=1, or the "
                     f'AppArmor profile for bwrap), or set {self.setting} = "none"')
        self.path, self._checked = found, True

    def command(self, argv: Sequence[str], walls: Walls, cwd: Path | None = None) -> list[str]:
        self.check()
        assert self.path is not None
        args = [self.path, "--die-with-parent", "--unshare-all", *(["--share-net"] if walls.network else []),
                "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        for own in own_dirs():  # /tmp and /run of its own: no host socket (ssh-agent, docker, D-Bus) shows there
            args += ["--tmpfs", str(own)]
        for path, how in mounts(walls):
            if how == "hide":
                args += ["--tmpfs", str(path)] if path.is_dir() else ["--ro-bind", "/dev/null", str(path)]
            else:
                args += ["--bind" if how == "rw" else "--ro-bind", str(path), str(path)]
        args.append("--new-session")  # setsid: no controlling terminal to push keystrokes into (TIOCSTI)
        if cwd is not None:
            args += ["--chdir", str(cwd)]
        return [*args, "--", *argv]


def mounts(walls: Walls) -> list[tuple[Path, str]]:
    """The mounts to make, shallowest first so a deeper one wins: re-exposed, writable, protected, hidden.

    Paths that do not exist are left out (there is nothing to expose or hide), and so is a path to show again
    that lies in a hidden one; each is resolved, so a symlink cannot point a wall elsewhere.
    """
    order = {"ro": 0, "rw": 1, "protect": 2, "hide": 3}
    found: dict[Path, str] = {}
    for how, paths in (("ro", walls.readable), ("rw", walls.writable), ("protect", walls.protected),
                       ("hide", walls.hidden)):
        for raw in paths:
            if os.path.lexists(raw):
                found[Path(os.path.realpath(raw))] = how
    hidden = [path for path, how in found.items() if how == "hide"]
    found = {path: how for path, how in found.items()  # nothing is shown again from inside a hidden path
             if how != "ro" or not any(h in path.parents for h in hidden)}
    ranked = sorted(found.items(), key=lambda item: (len(item[0].parts), order[item[1]]))
    return [(path, "ro" if how == "protect" else how) for path, how in ranked]


# -- settings -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SandboxSettings:
    """A sandbox as the settings chose it: the mechanism, the network, the user's extra writable and hidden paths."""

    kind: str = "none"
    network: bool = True
    writable: tuple[Path, ...] = ()
    hidden: tuple[Path, ...] = ()
    setting: str = "[session] sandbox"
    sandbox: Sandbox = field(default_factory=NoSandbox, compare=False)

    @property
    def confined(self) -> bool:
        return self.kind != NoSandbox.name

    def walls(self, home: Path | None, *, writable: Sequence[Path] = (), readable: Sequence[Path] = (),
              protected: Sequence[Path] = ()) -> Walls:
        """The walls of one process: `writable` and the user's writable paths; the secrets of `home` hidden."""
        kept = (*writable, *readable, *self.writable, *([home] if home else []))
        hidden = [*([home / name for name in HIDDEN_IN_HOME] if home is not None else []), *secret_config_dirs(),
                  *socket_paths(os.environ, keep=kept)]
        return Walls(writable=(*writable, *self.writable),
                     readable=(*readable, *([home] if home else []), *name_service_files()),
                     hidden=(*hidden, *self.hidden), protected=tuple(protected), network=self.network)

    def record(self, walls: Walls | None = None) -> dict[str, Any]:
        """What session.json keeps: the mechanism and its settings (and the process's walls, when given)."""
        if not self.confined:
            return {"kind": self.kind}
        data: dict[str, Any] = {"kind": self.kind, "network": "on" if self.network else "off",
                                "writable": [str(p) for p in self.writable], "hidden": [str(p) for p in self.hidden]}
        if walls is not None:
            data["walls"] = {"writable": sorted({str(p) for p, how in mounts(walls) if how == "rw"})}
        return data


def sandbox_of(kind: str, setting: str) -> Sandbox:
    """The mechanism `kind` names."""
    return BwrapSandbox(setting) if kind == BwrapSandbox.name else NoSandbox()


def scripts_sandbox(settings: Settings) -> SandboxSettings:
    """`[scripts] sandbox` and `[scripts] network`; only INSTALL_DIR and the package folder are writable."""
    kind = settings.get("scripts.sandbox")
    return SandboxSettings(kind, settings.get("scripts.network") == "on", (),
                           setting_paths(settings, "sandbox.hidden", must_exist=False), "[scripts] sandbox",
                           sandbox_of(kind, "[scripts] sandbox"))


def setting_paths(settings: Settings, key: str, *, must_exist: bool) -> tuple[Path, ...]:
    """The absolute paths a list setting names (`~` expanded); a relative, missing or root path is a UsageError."""
    where = settings.origin(key)
    found = []
    for entry in settings.get(key):
        path = Path(os.path.expanduser(entry))
        if not path.is_absolute():
            raise UsageError(f"{where}: {key} entry {entry!r} is not an absolute path",
                             hint="write it as /absolute/path or ~/path")
        if must_exist and Path(os.path.realpath(path)) == Path("/"):
            raise UsageError(f"{where}: {key} entry {entry!r} is the root folder: the sandbox would be no wall",
                             hint="list the folders the agents must write, one by one")
        if must_exist and not path.exists():
            raise UsageError(f"{where}: {key} entry {entry!r} does not exist",
                             hint="create it first, or remove it from the list")
        found.append(path)
    return tuple(found)
