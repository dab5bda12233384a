"""Splitting a model into stages: where the cuts go, which devices, and that the split model computes the same."""

from __future__ import annotations

import pytest
import torch
from backends import TrainerUnavailable
from config import HyperparameterError, parse_config
from model_parallel import StagedSequential, stage_devices, stage_starts
from models import build_model

CPU = torch.device("cpu")


@pytest.mark.parametrize(
    ("sizes", "num_stages", "starts"),
    [
        ([1344, 0, 4160, 0, 650], 2, [0, 3]),  # the default mlp: the big middle layer closes stage 0
        ([1344, 0, 4160, 0, 650], 3, [0, 3, 4]),
        ([100, 100, 100, 100], 4, [0, 1, 2, 3]),
        ([0, 0, 100], 3, [0, 1, 2]),  # every stage gets a layer, even one without parameters
        ([1000, 1, 1, 1], 2, [0, 1]),
        ([1, 1, 1, 1000], 2, [0, 3]),
    ],
)
def test_stage_starts_cut_contiguous_non_empty_stages_balanced_by_parameters(sizes, num_stages, starts):
    assert stage_starts(sizes, num_stages) == starts


@pytest.mark.parametrize(
    ("num_stages", "num_gpus", "devices"),
    [
        (0, 0, ["cpu", "cpu"]),
        (3, 0, ["cpu", "cpu", "cpu"]),
        (0, 4, ["cuda:0", "cuda:1", "cuda:2", "cuda:3"]),
        (2, 4, ["cuda:0", "cuda:1"]),
    ],
)
def test_stage_devices_put_one_stage_on_each_gpu_or_all_on_the_cpu(num_stages, num_gpus, devices):
    assert stage_devices(num_stages, num_gpus) == [torch.device(device) for device in devices]


@pytest.mark.parametrize(
    ("num_stages", "num_gpus", "error", "message"),
    [
        (1, 4, HyperparameterError, "--num-stages must be 0 (one per GPU) or at least 2"),
        (5, 4, TrainerUnavailable, "5 stage(s), 4 GPU(s) on this host. To fix: set --num-stages between 2 and 4"),
        (0, 1, TrainerUnavailable, "needs at least 2 GPUs on the host, this one has 1"),
    ],
)
def test_stage_devices_refuse_what_the_host_cannot_hold(num_stages, num_gpus, error, message):
    with pytest.raises(error) as raised:
        stage_devices(num_stages, num_gpus)
    assert message in str(raised.value)


def test_staged_model_computes_the_unsplit_model_numbers_and_keeps_its_keys():
    config = parse_config(["--model", "mlp", "--mlp-layers", "3"], {})
    torch.manual_seed(3)
    unsplit = build_model(config)
    torch.manual_seed(3)
    staged = StagedSequential(build_model(config), [0, 2, 5], [CPU, CPU, CPU])
    assert list(staged.state_dict()) == list(unsplit.state_dict())
    assert staged.entry_devices == {0: CPU, 2: CPU, 5: CPU}
    features = torch.randn(16, 20)
    for model in (unsplit, staged):
        model(features).square().mean().backward()
    assert torch.equal(staged(features), unsplit(features))
    for (name, parameter), (_, staged_parameter) in zip(unsplit.named_parameters(), staged.named_parameters(),
                                                                     strict=True):
        assert torch.equal(parameter.grad, staged_parameter.grad), name
