#!/usr/bin/env bash
# Set up (if needed) and run the whole test suite: lint, then pytest on every core (pytest-xdist), the slowest 20
# tests listed at the end. STRAWPOT_TEST_WORKERS sets the worker count; pytest options after ours win (`-n 0`: serial).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh --test-tools
.venv/bin/ruff check .
.venv/bin/mypy
# At least 2 workers even on one core: most tests wait on the subprocesses they drive, not on the processor.
workers=${STRAWPOT_TEST_WORKERS:-}
if [ -z "$workers" ]; then
  workers=$(nproc 2>/dev/null || echo 2)
  [ "$workers" -ge 2 ] || workers=2
fi
# loadscope: a module's tests stay on one worker, so a module-scoped live registry is published once, not per worker
exec .venv/bin/python -m pytest -n "$workers" --dist loadscope --durations=20 "$@"
