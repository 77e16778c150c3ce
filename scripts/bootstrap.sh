#!/usr/bin/env bash
# Create .venv (Python 3.11+) and install strawpot with its test dependencies; idempotent and quick when done.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "error: strawpot needs Python 3.11 or newer (found: $("$PY" --version 2>&1)); set PYTHON=python3.11" >&2
  exit 2
fi
# The session tests drive real tmux; CI is a fresh Debian machine where we are root.
if ! command -v tmux >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing tmux with apt-get" >&2
    if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tmux; } >/dev/null 2>&1; then
      echo "error: apt-get could not install tmux (the session tests need it)" >&2
      exit 1
    fi
  else
    echo "warning: tmux is not on PATH; install it (e.g. sudo apt-get install tmux) or the tmux tests fail" >&2
  fi
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
