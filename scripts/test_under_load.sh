#!/usr/bin/env bash
# Runs a command, by default the CI run (`bash .ci/run`), while a CPU and memory load of its own runs beside it:
# stress-ng with 2 busy CPU workers and a worker churning 2 GB of memory (mapped, written, unmapped, again), as
# much as this 2-core machine's own work would add. The suite must pass so; no test may depend on the machine's
# speed. Prints the load average before and after, and the command's time.
#   bash scripts/test_under_load.sh                      # bash .ci/run under load
#   bash scripts/test_under_load.sh bash scripts/test.sh -m "not slow"
#   LOAD_CPUS=4 LOAD_MEMORY=3G bash scripts/test_under_load.sh
# Installs stress-ng (Debian's package) with apt-get when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v stress-ng >/dev/null; then
    command -v apt-get >/dev/null || { echo "stress-ng is missing and there is no apt-get to install it" >&2; exit 2; }
    sudo=""; [[ "$(id -u)" == 0 ]] || sudo="sudo"
    echo "==> installing stress-ng (apt-get)" >&2
    $sudo apt-get update -qq && $sudo apt-get install -y -qq stress-ng >/dev/null
fi
(( $# )) || set -- bash .ci/run
stress-ng --cpu "${LOAD_CPUS:-2}" --vm 1 --vm-bytes "${LOAD_MEMORY:-2G}" --quiet &
load=$!
trap 'kill "$load" 2>/dev/null; wait "$load" 2>/dev/null || true' EXIT
echo "==> load: stress-ng pid $load (${LOAD_CPUS:-2} CPU workers, ${LOAD_MEMORY:-2G} of memory churn); $(uptime)" >&2
started=$SECONDS
status=0
"$@" || status=$?
echo "==> under load: '$*' exited $status after $((SECONDS - started)) s; $(uptime)" >&2
exit "$status"
