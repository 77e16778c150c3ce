"""The sandbox's pure parts: which mounts the walls make and in what order, the bwrap argv, and the denial lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.confine import denials
from sandbox.walls import BwrapSandbox, NoSandbox, SandboxSettings, Walls, mounts


def tree(tmp_path: Path) -> dict[str, Path]:
    paths = {name: tmp_path / name for name in ("proj", "proj/.strawpot", "proj/.strawpot/ws", "home", "home/.ssh")}
    for path in paths.values():
        path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "home" / ".netrc").write_text("machine x password y\n")
    return paths


def test_deeper_mounts_come_later_so_they_win(tmp_path: Path) -> None:
    p = tree(tmp_path)
    walls = SandboxSettings("bwrap").walls(p["home"], writable=(p["proj"], p["proj/.strawpot/ws"]),
                                           readable=(p["proj"],), protected=(p["proj/.strawpot"],))
    order = [(path.relative_to(tmp_path).as_posix(), how) for path, how in mounts(walls)]
    assert order == [("home", "ro"), ("proj", "rw"), ("proj/.strawpot", "ro"), ("home/.ssh", "hide"),
                     ("home/.netrc", "hide"), ("proj/.strawpot/ws", "rw")]  # missing ones (~/.aws ...) left out


def test_nothing_inside_a_hidden_path_is_shown_again(tmp_path: Path) -> None:
    p = tree(tmp_path)
    inside = p["home/.ssh"] / "keys" / "bin"
    inside.mkdir(parents=True)
    walls = SandboxSettings("bwrap").walls(p["home"], readable=(inside, p["proj"]))
    shown = {path for path, how in mounts(walls) if how == "ro"}
    assert inside not in shown and p["proj"] in shown and p["home"] in shown


def test_the_bwrap_argv(tmp_path: Path) -> None:
    p = tree(tmp_path)
    sandbox = BwrapSandbox()
    walls = Walls(writable=(p["proj"],), hidden=(p["home/.ssh"], p["home"] / ".netrc"), network=False)
    argv = sandbox.command(["agent", "--x"], walls, p["proj"])
    assert argv[1:5] == ["--die-with-parent", "--unshare-all", "--ro-bind", "/"]  # no --share-net: network off
    joined = " ".join(argv)
    assert f"--bind {p['proj']} {p['proj']}" in joined
    assert f"--tmpfs {p['home/.ssh']}" in joined and f"--ro-bind /dev/null {p['home']}/.netrc" in joined
    assert argv[argv.index("--") + 1:] == ["agent", "--x"] and argv[argv.index("--chdir") + 1] == str(p["proj"])
    assert "--share-net" in sandbox.command(["a"], Walls(network=True))
    assert NoSandbox().command(["agent", "--x"], walls) == ["agent", "--x"]


@pytest.mark.parametrize(("line", "found"), [
    ("OSError: [Errno 30] Read-only file system: '/home/u/.bashrc'", True),
    ("cp: cannot create regular file '/etc/x': Permission denied", True),
    ("curl: (7) Couldn't connect to server: Network is unreachable", True),
    ("FileNotFoundError: [Errno 2] No such file or directory: '/h/.ssh/id_ed25519'", True),
    ("FileNotFoundError: [Errno 2] No such file or directory: 'notes.txt'", False),
    ("all good", False),
])
def test_denials_are_read_from_the_log(line: str, found: bool) -> None:
    walls = Walls(hidden=(Path("/h/.ssh"),))
    assert denials(f"start\n{line}\nend\n", walls) == ([line] if found else [])
