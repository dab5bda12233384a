"""StopAgreement: SIGTERM becomes a stop decision at a step that every rank computes alike."""

from __future__ import annotations

import os
import signal

import pytest
import spot
import torch.distributed as dist


@pytest.fixture
def world_of_one():
    """A real gloo process group of one rank, and this process's SIGTERM handler restored afterwards."""
    handler = signal.getsignal(signal.SIGTERM)
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    yield
    dist.destroy_process_group()
    signal.signal(signal.SIGTERM, handler)


def test_sigterm_stops_at_a_later_check_and_not_before(world_of_one):
    stop = spot.StopAgreement(None, first_step=10)
    assert not any(stop.should_stop(step) for step in range(11, 1500))
    os.kill(os.getpid(), signal.SIGTERM)
    stopped_at = next(step for step in range(1500, 5000) if stop.should_stop(step))
    assert stopped_at <= 1500 + spot.MAX_STEPS_BETWEEN_CHECKS
