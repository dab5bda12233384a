"""The prefetching loader: the plain loader's batches, in its order, from a thread that stops when told."""

from __future__ import annotations

import threading
from contextlib import closing

import data
import pytest
import torch
from models import TASKS
from prefetch import Prefetcher

CPU = torch.device("cpu")


def _loader(start_index: int = 0) -> torch.utils.data.DataLoader:
    """Rank 1 of 2 over 100 synthetic samples, epoch 3, resumed part-way: the trainer's sampler and loader."""
    dataset = data.synthetic_dataset(TASKS["mlp"], 100, seed=7)
    sampler = data.ResumableDistributedSampler(dataset, num_replicas=2, rank=1, seed=7)
    sampler.set_epoch(3)
    sampler.start_index = start_index
    return data.make_loader(dataset, sampler, batch_size=8, num_workers=0, pin_memory=False, seed=8)


def _assert_same_batches(expected: list, actual: list) -> None:
    assert len(actual) == len(expected)
    for (features, targets), (got_features, got_targets) in zip(expected, actual, strict=True):
        assert torch.equal(features, got_features) and torch.equal(targets, got_targets)


@pytest.mark.parametrize("depth", [1, 3, 10])
@pytest.mark.parametrize("start_index", [0, 16])
def test_prefetcher_yields_the_loader_batches_in_order(depth, start_index):
    expected = list(_loader(start_index))
    with closing(Prefetcher(_loader(start_index), (CPU, CPU), depth)) as prefetched:
        actual = list(prefetched)
    _assert_same_batches(expected, actual)
    assert len(expected) == (50 - start_index + 7) // 8


def test_prefetcher_stops_its_thread_when_the_consumer_stops_early():
    produced: list[int] = []

    def endless():
        index = 0
        while True:
            produced.append(index)
            yield torch.tensor([index]), torch.tensor([index])
            index += 1

    prefetcher = Prefetcher(endless(), (CPU, CPU), depth=2)
    first = next(iter(prefetcher))
    prefetcher.close()
    assert first[0].item() == 0
    assert not any(thread.name == "prefetch" for thread in threading.enumerate())
    assert len(produced) <= 4  # the one taken, two queued, at most one more being loaded when it stopped


def test_prefetcher_raises_what_the_loader_raised_after_the_batches_before_it():
    def failing():
        yield torch.zeros(1), torch.zeros(1)
        raise OSError("channel file vanished")

    with closing(Prefetcher(failing(), (CPU, CPU), depth=4)) as prefetched:
        batches = iter(prefetched)
        assert torch.equal(next(batches)[0], torch.zeros(1))
        with pytest.raises(OSError, match="channel file vanished"):
            next(batches)
