#!/usr/bin/env bash
# The main job: sets everything up, then trains the 2-host CPU gloo example with the docker-free emulator.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
exec .venv/bin/smtrain local job_specs/mlp-gloo-none-2x-c5.2xlarge.yaml "$@"
