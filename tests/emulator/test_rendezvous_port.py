"""The rendezvous port a run's master binds (MASTER_PORT, torchrun's) is drawn outside the kernel's ephemeral range:
a port of that range may become another process's connection before the master binds it (several runs of a CI
matrix on one machine), and the master then fails with EADDRINUSE, blamed on the script."""

from __future__ import annotations

import socket

import pytest

from orchestrator.emulator.launching.launch import EPHEMERAL_RANGE, free_port


def test_a_rendezvous_port_is_free_and_outside_the_ephemeral_range():
    try:
        low, high = (int(word) for word in EPHEMERAL_RANGE.read_text().split())
    except OSError:
        pytest.skip(f"{EPHEMERAL_RANGE} cannot be read here (not Linux)")
    if low <= 20000 and high >= 65535:
        pytest.skip(f"the ephemeral range {low}-{high} leaves no port outside it")
    ports = [free_port() for _ in range(20)]
    assert [port for port in ports if low <= port <= high] == [], (low, high)
    for port in ports:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))  # free: the master can bind it
