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
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --config-settings editable_mode=compat -e '.[test]'
  touch "$stamp"
fi
