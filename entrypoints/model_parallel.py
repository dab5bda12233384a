"""Trainer model_parallel: the model's layers split into stages over this host's devices; DDP between hosts.

The stages are contiguous runs of an ``nn.Sequential``'s layers, balanced by parameter count, on ``cuda:0`` ..
``cuda:<num_stages - 1>``. The forward pass hands each stage's activation to the next stage's device, and
autograd sends the gradients back the same way. The split model keeps the layer names, so its state dict,
checkpoints and model.pt are those of the unsplit model. With several hosts (one process each) DDP averages the
gradients of the host replicas. On a host without CUDA every stage sits on the CPU: the splitting, the hand-off
and the numbers are the same, only the devices are not.

With ``--pipeline-chunks N`` each batch is cut into N micro-batches that flow through the stages as a wavefront
(GPipe's schedule, Huang et al. 2019): at each tick every stage takes the next micro-batch, the last stage first,
so that on GPUs, where kernels queue asynchronously, the devices compute at the same time instead of waiting for
each other. The outputs are joined again before the loss, so the loss and the gradients are those of the whole
batch, save for batch norm, which sees each micro-batch's statistics (as in GPipe). Without CUDA the stages take
turns on the CPU: the schedule and the numbers are the same, the overlap is not.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import torch
from backends import Runtime, TrainerUnavailable
from config import HyperparameterError
from replicated import Replicated
from strategy import OptimizerChoice
from torch import nn
from torch.nn.parallel import DistributedDataParallel


@dataclass(frozen=True)
class Pipeline:
    """How a host's replica is split: stages (0: one per GPU) and micro-batches per batch."""

    num_stages: int = 0
    chunks: int = 1


class StagedSequential(nn.Sequential):
    """An ``nn.Sequential`` whose layers sit on several devices, one contiguous stage per device."""

    def __init__(self, layers: nn.Sequential, starts: list[int], devices: list[torch.device], chunks: int = 1) -> None:
        """
        Args:
            starts: index of each stage's first layer, ascending from 0.
            devices: each stage's device.
            chunks: micro-batches each batch is cut into (1: none).
        """
        super().__init__(OrderedDict(layers.named_children()))  # the same names, so the same state-dict keys
        self.stages = list(zip(starts, [*starts[1:], len(self)], devices, strict=True))
        self.chunks = chunks
        children = list(self)
        # Each stage's device and layers, looked up once: a step of a small model is ~1 ms, and indexing an
        # nn.Sequential layer by layer at every step cost 2% of it.
        self._stage_layers = [(device, tuple(children[start:end])) for start, end, device in self.stages]
        for device, stage_layers in self._stage_layers:
            for layer in stage_layers:
                layer.to(device)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        if self.chunks == 1:
            activation = features
            for stage in range(len(self.stages)):
                activation = self._run_stage(stage, activation)
            return activation
        pieces = list(features.split(math.ceil(features.shape[0] / self.chunks)))
        for tick in range(len(pieces) + len(self.stages) - 1):
            for stage in reversed(range(len(self.stages))):  # the last stage first: it waits on nobody this tick
                chunk = tick - stage
                if 0 <= chunk < len(pieces):
                    pieces[chunk] = self._run_stage(stage, pieces[chunk])
        return torch.cat(pieces)

    def _run_stage(self, stage: int, activation: torch.Tensor) -> torch.Tensor:
        device, stage_layers = self._stage_layers[stage]
        activation = activation.to(device)  # the hand-off; a no-op within a device
        for layer in stage_layers:
            activation = layer(activation)
        return activation


def stage_devices(num_stages: int, num_gpus: int) -> list[torch.device]:
    """Each stage's device: one GPU per stage (``num_stages`` 0: as many stages as GPUs); all CPU without CUDA.

    Raises:
        HyperparameterError: fewer than 2 stages requested.
        TrainerUnavailable: fewer GPUs than stages.
    """
    if num_stages == 1:
        raise HyperparameterError("--num-stages must be 0 (one per GPU) or at least 2 for trainer model_parallel, "
                                  "got 1. To fix: use trainer ddp or gloo to train on one device.")
    if num_gpus == 0:
        return [torch.device("cpu")] * (num_stages or 2)
    wanted = num_stages or num_gpus
    if wanted > num_gpus or wanted < 2:
        raise TrainerUnavailable(
            f"trainer model_parallel needs one GPU per stage: {wanted} stage(s), {num_gpus} GPU(s) on this host. "
            f"To fix: set --num-stages between 2 and {num_gpus}, or use trainer ddp."
            if num_gpus > 1 else
            f"trainer model_parallel needs at least 2 GPUs on the host, this one has {num_gpus}. "
            f"To fix: use trainer ddp, or an instance type with several GPUs.")
    return [torch.device("cuda", index) for index in range(wanted)]


def stage_starts(layer_sizes: list[int], num_stages: int) -> list[int]:
    """Cuts the layers into `num_stages` contiguous, non-empty stages of about equal parameter counts.

    Returns:
        The index of each stage's first layer.
    """
    total = sum(layer_sizes)
    starts = [0]
    cumulative = 0
    for index, size in enumerate(layer_sizes):
        cumulative += size
        stage = len(starts)
        if stage == num_stages:
            break
        layers_left, stages_left = len(layer_sizes) - index - 1, num_stages - stage
        if cumulative >= total * stage / num_stages or layers_left == stages_left:
            starts.append(index + 1)
    return starts


def build(model: nn.Module, runtime: Runtime, world_size: int, pipeline: Pipeline, optimizer: OptimizerChoice,
          autocast_dtype: torch.dtype | None, notify: Callable[[str], None]) -> Replicated:
    """Splits `model` over this host's devices; wraps it in DDP when there are several hosts."""
    num_gpus = torch.cuda.device_count() if runtime.device.type == "cuda" else 0
    devices = stage_devices(pipeline.num_stages, num_gpus)
    layers = list(model.children()) if isinstance(model, nn.Sequential) else [model]
    if len(layers) < len(devices):
        raise HyperparameterError(
            f"trainer model_parallel splits the model's layers into {len(devices)} stages, but model "
            f"{type(model).__name__} has {len(layers)} layer(s). To fix: use model mlp, convnet or resnet50"
            f"{f', or at most {len(layers)} --num-stages' if len(layers) >= 2 else ''}.")
    sizes = [sum(parameter.numel() for parameter in layer.parameters()) for layer in layers]
    starts = stage_starts(sizes, len(devices))
    staged = StagedSequential(model, starts, devices, pipeline.chunks)
    notify(f"model_parallel: {len(devices)} stages, " + ", ".join(
        f"layers {start}-{end - 1} on {device} ({sum(sizes[start:end]):,} parameters)"
        for start, end, device in staged.stages)
        + (f"; {pipeline.chunks} micro-batches per batch" if pipeline.chunks > 1 else ""))
    module = DistributedDataParallel(staged) if world_size > 1 else staged  # device_ids=None: several devices
    return Replicated(staged, module, optimizer.build(staged.parameters()), (devices[0], devices[-1]),
                      autocast_dtype, runtime.control_group, pipeline.chunks)
