"""strawpot's own secrets (registry tokens, a Denden token it inherited): out of its process environment once read.

An agent that runs unsandboxed runs as the user, as strawpot's child, and could read the environment strawpot
started with from `/proc/<its parent>/environ`, which shows the block the kernel gave the process, whatever
os.environ says since. So the `strawpot` program, first thing (`hold`):

- moves the variables of `NEVER` from os.environ (and so from the C environment every child inherits) into
  memory, where `environ()` still finds them for the settings layer;
- blanks them in that initial block, through /proc/self/mem (Linux), so no reader finds them there, root included;
- marks itself not dumpable (prctl PR_SET_DUMPABLE 0): its /proc files (environ, mem, fds) become unreadable to
  other processes of the user that lack CAP_SYS_PTRACE. A child program is dumpable again once it is exec'd.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import MutableMapping

from strawpot.model.child_env import NEVER

_held: dict[str, str] = {}
_PR_SET_DUMPABLE = 4
# fields of /proc/self/stat after the command name: field N of proc(5) is at index N - 3
_ENV_START, _ENV_END = 50 - 3, 51 - 3


def hold(environ: MutableMapping[str, str] | None = None) -> None:
    """Take the secrets out of this process's environment (see the module docstring); best effort off Linux."""
    environ = os.environ if environ is None else environ
    names = [name for name in NEVER if name in environ]
    for name in names:
        _held[name] = environ.pop(name)
    if sys.platform.startswith("linux"):
        import ctypes

        _blank_initial(names)
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)


def environ() -> dict[str, str]:
    """The environment as strawpot was started with it: os.environ and the secrets `hold` took out of it."""
    return {**os.environ, **_held}


def _blank_initial(names: list[str]) -> None:
    """Overwrite each `NAME=value` of `names` with NUL bytes in the environment block /proc/self/environ shows."""
    if not names:
        return
    prefixes = tuple(f"{name}=".encode() for name in names)
    try:
        with open("/proc/self/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        start, end = int(fields[_ENV_START]), int(fields[_ENV_END])
        with open("/proc/self/mem", "r+b", buffering=0) as mem:
            mem.seek(start)
            block = mem.read(end - start)
            offset = 0
            for entry in block.split(b"\0"):
                if entry.startswith(prefixes):
                    mem.seek(start + offset)
                    mem.write(b"\0" * len(entry))
                offset += len(entry) + 1
    except (OSError, ValueError, IndexError):
        return  # no /proc, or a kernel that refuses the write: the flag below still guards the block
