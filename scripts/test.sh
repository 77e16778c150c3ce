#!/usr/bin/env bash
# Set up (if needed) and run the whole test suite: lint, then pytest on every core (pytest-xdist), the slowest 20
# tests listed at the end. STRAWPOT_TEST_WORKERS sets the worker count; pytest options after ours win (`-n 0`: serial).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh --test-tools
.venv/bin/ruff check .
# Byte-compile our packages once, as installing a wheel does: the editable install does not, and where
# PYTHONDONTWRITEBYTECODE is set every `strawpot` process the tests start would compile its modules again.
.venv/bin/python -m compileall -q -j 0 strawpot hub_client resolver orchestrator registry_server dashboard sandbox valueclass
.venv/bin/mypy
# At least 2 workers even on one core: most tests wait on the subprocesses they drive, not on the processor.
workers=${STRAWPOT_TEST_WORKERS:-}
if [ -z "$workers" ]; then
  workers=$(nproc 2>/dev/null || echo 2)
  [ "$workers" -ge 2 ] || workers=2
fi
# worksteal: an idle worker takes queued tests from a busy one. A module-scoped live registry may then start once
# per worker, but the long modules no longer leave one worker alone at the end. On 2 cores the suite took 10:05 and
# 15:47 this way (two runs) and 15:15 with loadscope (a module's tests kept on one worker): benchmark before tuning.
exec .venv/bin/python -m pytest -n "$workers" --dist worksteal --durations=20 "$@"
