"""Output sent to a pipe or a file is never cut at rich's default 80 columns: messages and tables stay whole lines."""

from __future__ import annotations

import os
import subprocess
import sys

SCRIPT = """
from rich.table import Table
from strawpot.console import err_console, new_console, out_console
long = "unix:/a/project/with/a/rather/deep/path/.strawpot/sessions/run_20261125_195941_e20255/denden.sock"
err_console.print(f"[bold]run[/] run_1: role lead, Denden on {long}")
new_console(stderr=True).print(f"ok: 14 packages, 21 files match the lock; {long}")
table = Table("run", "path", box=None)
table.add_row("run_20261125_195941_e20255", long)
out_console.print(table)
new_console(stderr=False).print(table)
"""


def test_messages_and_tables_to_a_pipe_are_not_wrapped() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "FORCE_COLOR", "TTY_COMPATIBLE")}
    result = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, check=True,
                            timeout=60)
    long = "unix:/a/project/with/a/rather/deep/path/.strawpot/sessions/run_20261125_195941_e20255/denden.sock"
    assert result.stderr.splitlines() == [f"run run_1: role lead, Denden on {long}",
                                          f"ok: 14 packages, 21 files match the lock; {long}"]
    rows = [line.split() for line in result.stdout.splitlines()]
    assert rows == [["run", "path"], ["run_20261125_195941_e20255", long]] * 2, result.stdout
