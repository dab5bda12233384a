#!/usr/bin/env bash
# The whole test suite: sets everything up, then runs pytest (extra arguments go to pytest, e.g. -m "not slow").
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
exec .venv/bin/python -m pytest "$@"
