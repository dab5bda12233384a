#!/usr/bin/env bash
# Debian's CPU builds of torch and torchvision (and mpi4py over Debian's Open MPI) for the system interpreter
# /usr/bin/python3: the interpreter of the public example scripts that read MNIST through torchvision
# (tests/examples/test_examples_debian_torch.py). PyPI's torchvision needs PyPI's CUDA torch and PyTorch's CPU index
# may be out of reach; Debian's archive is the CPU torchvision every Debian machine reaches.
# Idempotent and quiet; never fails the caller: where it cannot install (not Debian, not root, no archive), it says
# so and those tests skip naming the command.
set -uo pipefail
packages=(python3-torchvision python3-mpi4py)
command="apt-get install -y ${packages[*]}"
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
echo "==> installing ${packages[*]} (Debian's CPU torch and torchvision for /usr/bin/python3, for the public" \
     "examples that read MNIST through torchvision)" >&2
export DEBIAN_FRONTEND=noninteractive
install() { apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null; }
if ! install && ! { apt-get update -qq >/dev/null && install; }; then
    echo "==> $command failed: the examples run by Debian's torchvision will be skipped" >&2
fi
exit 0
