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
    assert staged.stages == [(0, 2, CPU), (2, 5, CPU), (5, 7, CPU)]
    features = torch.randn(16, 20)
    for model in (unsplit, staged):
        model(features).square().mean().backward()
    assert torch.equal(staged(features), unsplit(features))
    for (name, parameter), (_, staged_parameter) in zip(unsplit.named_parameters(), staged.named_parameters(),
                                                                     strict=True):
        assert torch.equal(parameter.grad, staged_parameter.grad), name


def test_micro_batches_flow_through_the_stages_as_a_wavefront_and_give_the_whole_batch_numbers(monkeypatch):
    """3 stages, 4 micro-batches: at each tick every stage takes the next micro-batch, the last stage first; the
    output and the gradients are those of the whole batch (an mlp has no batch statistics)."""
    config = parse_config(["--model", "mlp", "--mlp-layers", "3"], {})
    torch.manual_seed(3)
    whole = StagedSequential(build_model(config), [0, 2, 5], [CPU, CPU, CPU])
    torch.manual_seed(3)
    piped = StagedSequential(build_model(config), [0, 2, 5], [CPU, CPU, CPU], chunks=4)
    calls: list[tuple[int, int]] = []
    run_stage = piped._run_stage
    monkeypatch.setattr(piped, "_run_stage", lambda stage, activation: calls.append(
        (stage, activation.shape[0])) or run_stage(stage, activation))
    features = torch.randn(14, 20)  # micro-batches of 4, 4, 4 and 2 samples
    outputs = [model(features) for model in (whole, piped)]
    for output in outputs:
        output.square().mean().backward()
    assert [stage for stage, _ in calls] == [0, 1, 0, 2, 1, 0, 2, 1, 0, 2, 1, 2]
    assert [size for stage, size in calls if stage == 2] == [4, 4, 4, 2]
    torch.testing.assert_close(outputs[1], outputs[0], atol=1e-6, rtol=0)
    for (name, parameter), (_, piped_parameter) in zip(whole.named_parameters(), piped.named_parameters(),
                                                       strict=True):
        torch.testing.assert_close(piped_parameter.grad, parameter.grad, atol=1e-6, rtol=0, msg=name)


def test_resnet50_splits_into_two_stages_between_bottleneck_blocks():
    """The seeds' split: ResNet-50 (23.5 M parameters) cut in two by parameters, each stage whole blocks; the split
    model computes the unsplit model's output."""
    config = parse_config(["--model", "resnet50"], {})
    torch.manual_seed(0)
    unsplit = build_model(config)
    sizes = [sum(parameter.numel() for parameter in layer.parameters()) for layer in unsplit]
    assert sum(sizes) == 23_528_522 and len(sizes) == 4 + 16 + 3
    starts = stage_starts(sizes, 2)
    assert starts == [0, 18]  # stem + 3 of layer1, 4 of layer2, 6 of layer3, 1 of layer4 | 2 of layer4, head
    assert sum(sizes[:18]) / sum(sizes) == pytest.approx(0.62, abs=0.01)  # the nearest cut to a half
    torch.manual_seed(0)
    staged = StagedSequential(build_model(config), starts, [CPU, CPU])
    features = torch.randn(4, 3, 32, 32)
    assert torch.equal(staged(features), unsplit(features))
