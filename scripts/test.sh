#!/usr/bin/env bash
# The test suite: sets everything up, then runs pytest on parallel workers; extra arguments go to pytest.
#   bash scripts/test.sh                 # the whole suite (what .ci/run runs)
#   bash scripts/test.sh -m "not slow"   # the everyday loop: everything but the multi-process runs
#   bash scripts/test.sh tests/spec -n 0 # some tests, in this process (-n 0: no workers)
#   bash scripts/test.sh --record-durations  # the whole suite, then each module's seconds into tests/durations.json
# Two workers fit 2 cores and 24 GB: each takes a module at a time (--dist loadscope, so a module's shared runs
# are made once), in the order tests/conftest.py gives (--no-loadscope-reorder: xdist would put the modules with
# the most tests first): the multi-process (slow) modules first, longest first by tests/durations.json, then the
# fast modules.
# SMTRAIN_TEST_WORKERS overrides the count.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
# The tests only (not the demo, which shares bootstrap): Debian's torchvision for the public examples that need it
# (a no-op once installed). As root with apt it installs system packages, saying so first;
# SMTRAIN_SKIP_SYSTEM_PACKAGES=1 leaves the system alone and those tests skip, naming the command to run.
bash scripts/install_debian_torchvision.sh
exec .venv/bin/python -m pytest -n "${SMTRAIN_TEST_WORKERS:-2}" --dist loadscope --no-loadscope-reorder "$@"
