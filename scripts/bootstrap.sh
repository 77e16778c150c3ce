#!/usr/bin/env bash
# Create .venv (Python 3.11+) and install strawpot into it; idempotent and quick when done. Alone (the demo):
# strawpot and what it runs. With --test-tools (scripts/test.sh): the test extra too, and the system tools the
# tests drive, which the demo needs none of.
set -euo pipefail
test_tools=0
[ "${1:-}" = --test-tools ] && test_tools=1
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "error: strawpot needs Python 3.11 or newer (found: $("$PY" --version 2>&1)); set PYTHON=python3.11" >&2
  exit 2
fi
# System tools the tests drive for real, from Debian's packages (CI is a fresh Debian machine where we are
# root): git (worktree sessions), tmux (interactive sessions), chromium and its chromedriver (the registry pages;
# never a downloaded build), postgresql (the registry's PostgreSQL backend: the tests make a throwaway cluster),
# bubblewrap (sandboxed agents and install scripts: the tests confine hostile ones for real).
missing=()
if [ "$test_tools" = 1 ]; then
  command -v git >/dev/null 2>&1 || missing+=(git)
  command -v tmux >/dev/null 2>&1 || missing+=(tmux)
  command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
  [ -x /usr/bin/chromium ] || missing+=(chromium)
  [ -x /usr/bin/chromedriver ] || missing+=(chromium-driver)
  compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null && compgen -G '/usr/lib/postgresql/*/bin/pg_ctl' >/dev/null \
    || missing+=(postgresql)
fi
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing ${missing[*]} with apt-get (log: /tmp/strawpot-apt.log)" >&2
    if ! { DEBIAN_FRONTEND=noninteractive apt-get update -q \
           && DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o DPkg::Lock::Timeout=300 \
                --no-install-recommends "${missing[@]}"; } >/tmp/strawpot-apt.log 2>&1; then
      tail -n 20 /tmp/strawpot-apt.log >&2
      echo "error: apt-get could not install ${missing[*]} (log: /tmp/strawpot-apt.log)" >&2
      exit 1
    fi
  else
    echo "error: the tests need ${missing[*]}; install them (as root: apt-get install ${missing[*]})" >&2
    exit 1
  fi
fi
# The demo's set-up installs strawpot alone (what the demo runs); the tests' adds the test extra, which holds
# the registry's PostgreSQL and S3 backends and the test tooling. Each has its stamp: the tests' covers the demo's.
spec=. stamp=.venv/.strawpot-installed
[ "$test_tools" = 1 ] && spec='.[test]' stamp=.venv/.strawpot-test-installed
if [ -f "$stamp" ] && [ ! pyproject.toml -nt "$stamp" ]; then
  exit 0
fi
log=.venv/bootstrap.log
echo "setting up .venv (log: $log)" >&2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# uv installs in parallel, several times faster than pip: the one on PATH, else one pip fetches for this run only
# (into a throwaway folder); without either, pip does it all.
uv=$(command -v uv || true)
if [ -z "$uv" ] && "$PY" -m pip install --quiet --disable-pip-version-check --target "$work/uv" uv >"$work/uv.log" 2>&1; then
  uv=$work/uv/bin/uv
fi
install() {
  if [ -n "$uv" ]; then
    [ -x .venv/bin/python ] || "$uv" venv --quiet --seed --python "$PY" .venv
    "$uv" pip install --python .venv/bin/python --config-settings editable_mode=compat -e "$spec"
  else
    [ -x .venv/bin/python ] || "$PY" -m venv .venv
    .venv/bin/python -m pip install --disable-pip-version-check --upgrade pip \
      && .venv/bin/python -m pip install --disable-pip-version-check --config-settings editable_mode=compat -e "$spec"
  fi
}
if ! install >"$work/install.log" 2>&1; then
  mkdir -p .venv && cp "$work/install.log" "$log"
  tail -n 30 "$log" >&2
  echo "error: installing strawpot${spec#.} failed (full log: $log)" >&2
  exit 1
fi
cp "$work/install.log" "$log"
touch .venv/.strawpot-installed "$stamp"
