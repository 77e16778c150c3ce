#!/usr/bin/env bash
# Create .venv (Python 3.11+) and install strawpot with its test dependencies; idempotent and quick when done.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "error: strawpot needs Python 3.11 or newer (found: $("$PY" --version 2>&1)); set PYTHON=python3.11" >&2
  exit 2
fi
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.strawpot-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  log=.venv/bootstrap.log
  echo "setting up .venv (log: $log)" >&2
  if ! { .venv/bin/python -m pip install --disable-pip-version-check --upgrade pip \
         && .venv/bin/python -m pip install --disable-pip-version-check \
              --config-settings editable_mode=compat -e '.[test]'; } >"$log" 2>&1; then
    tail -n 30 "$log" >&2
    echo "error: installing strawpot and its test dependencies failed (full log: $log)" >&2
    exit 1
  fi
  touch "$stamp"
fi
