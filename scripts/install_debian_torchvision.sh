#!/usr/bin/env bash
# Debian's CPU builds of torch and torchvision (and mpi4py over Debian's Open MPI) for the system interpreter
# /usr/bin/python3: the interpreter of the public example scripts that read MNIST through torchvision
# (tests/examples/test_examples_debian_torch.py). PyPI's torchvision needs PyPI's CUDA torch and PyTorch's CPU index
# may be out of reach; Debian's archive is the CPU torchvision every Debian machine reaches.
# Idempotent; says what it installs and why before it does; never fails the caller: where it cannot or may not
# install (not Debian, not root, no archive, SMTRAIN_SKIP_SYSTEM_PACKAGES set), it says so and those tests skip
# naming the command.
set -uo pipefail
packages=(python3-torchvision python3-mpi4py)
command="apt-get install -y ${packages[*]}"
if [[ -n "${SMTRAIN_SKIP_SYSTEM_PACKAGES:-}" ]]; then
    echo "==> SMTRAIN_SKIP_SYSTEM_PACKAGES is set: nothing installed; the examples run by Debian's torchvision" \
         "will be skipped (as root: $command)" >&2
    exit 0
fi
if ! command -v apt-get >/dev/null || ! command -v dpkg-query >/dev/null; then
    echo "==> no apt-get here: the examples run by Debian's torchvision will be skipped" >&2
    exit 0
fi
installed="$(dpkg-query -W -f='${db:Status-Status}\n' "${packages[@]}" 2>/dev/null | grep -c '^installed$')"
if [[ "$installed" == "${#packages[@]}" ]]; then
    exit 0
fi
if [[ "$(id -u)" != 0 ]]; then
    echo "==> not root: the examples run by Debian's torchvision will be skipped (as root: $command)" >&2
    exit 0
fi
echo "==> about to apt-get install ${packages[*]} as root, into this machine's system Python (about 3 minutes" \
     "the first time): Debian's CPU torch and torchvision for /usr/bin/python3, which the public examples that read" \
     "MNIST through torchvision need (tests/examples/test_examples_debian_torch.py). To leave the system alone," \
     "rerun with SMTRAIN_SKIP_SYSTEM_PACKAGES=1: those tests then skip, naming this command." >&2
export DEBIAN_FRONTEND=noninteractive
install() { apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null; }
if ! install && ! { apt-get update -qq >/dev/null && install; }; then
    echo "==> $command failed: the examples run by Debian's torchvision will be skipped" >&2
fi
exit 0
