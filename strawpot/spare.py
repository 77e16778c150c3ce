"""A spare `strawpot` for a session host: imports what `start` needs, then runs the command line it is sent on stdin."""

from __future__ import annotations

import importlib
import json
import os
import sys

# What a `start --headless` imports before it runs anything (about half a second): a spare has imported it already.
START_PATH = ("strawpot.cli", "strawpot.cli_group", "strawpot.commands.start", "orchestrator.launch",
              "orchestrator.server", "orchestrator.run")


def main() -> int:
    """Import the start path, wait for an order on stdin (its args, folder, environment and stderr file), then run
    it as the `strawpot` program would; end at once when the host closes stdin without one."""
    for name in START_PATH:
        importlib.import_module(name)
    line = sys.stdin.buffer.readline()
    if not line:  # the host let it go
        return 0
    order = json.loads(line)
    with open(os.devnull, "rb") as nothing:
        os.dup2(nothing.fileno(), 0)
    fd = os.open(order["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 2)
    os.close(fd)
    os.chdir(order["cwd"])
    os.environ.clear()
    os.environ.update(order["env"])
    sys.argv = ["strawpot", *order["args"]]
    from strawpot.cli import main as strawpot

    return strawpot()


if __name__ == "__main__":
    sys.exit(main())
