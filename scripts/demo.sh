#!/usr/bin/env bash
# The main job, end to end on an embedded registry: publish the fixtures, install and lock a role,
# and start a headless session with the fixture agent. Everything lives under .demo/ and is removed first.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
exec .venv/bin/python scripts/demo.py "$@"
