#!/usr/bin/env bash
# Installs the CPU build of torch (the version constraints.txt pins) into the Python given as $1, and says where
# it came from. PyTorch's own CPU wheel index is tried first with a short probe, so a machine that cannot reach
# it loses seconds, not minutes; without it, pip resolves the pin through its own configuration (a bare torch
# from PyPI is the CUDA build on Linux: several GB). pip chooses the wheel (its configuration: indexes, local
# wheel folders, caps) and fetches it; uv ($2, when given) installs it and its dependencies and compiles their byte
# code on every core, about a third of pip's time for torch's 900 MB. Environment: SMTRAIN_TORCH_INDEX (default
# PyTorch's CPU index), SMTRAIN_TORCH_PROBE_SECONDS (default 5).
set -euo pipefail
cd "$(dirname "$0")/.."
python="$1"
uv="${2:-}"
index="${SMTRAIN_TORCH_INDEX:-https://download.pytorch.org/whl/cpu}"
probe_seconds="${SMTRAIN_TORCH_PROBE_SECONDS:-5}"
pin="$(grep -E '^torch==' constraints.txt)"
if "$python" - "$index/torch/" "$probe_seconds" <<'PROBE'
import sys, urllib.request
try:
    with urllib.request.urlopen(sys.argv[1], timeout=float(sys.argv[2])) as response:
        sys.exit(0 if response.status == 200 else 1)
except Exception:
    sys.exit(1)
PROBE
then
    echo "==> torch: $pin, CPU build from PyTorch's CPU index $index" >&2
    from=(--index-url "$index" --extra-index-url https://pypi.org/simple)
else
    echo "==> torch: $pin as pip resolves it (PyTorch's CPU index $index did not answer within ${probe_seconds} s);" \
         "on a machine whose pip offers only PyPI that is the CUDA build" >&2
    from=()
fi
if [[ -z "$uv" ]]; then
    "$python" -m pip install --quiet "${from[@]}" -c constraints.txt "$pin"
    exit 0
fi
wheels="$(mktemp -d)"
trap 'rm -rf "$wheels"' EXIT
"$python" -m pip download --quiet --no-deps "${from[@]}" -c constraints.txt "$pin" -d "$wheels"
"$uv" pip install --quiet --python "$python" --compile-bytecode "${from[@]}" -c constraints.txt "$wheels"/torch-*.whl
