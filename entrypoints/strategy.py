"""What the training loop asks of a trainer's layout of the model over ranks and devices.

Three layouts implement `Strategy`: replicated.py (dp, ddp, gloo, with optional ZeRO-1), model_parallel.py (a
replica split over the host's devices, DDP between hosts) and sharded.py (fsdp). The loop in trainers.py only
calls the strategy; it never asks which one it has.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from contextlib import AbstractContextManager
from typing import Any, Protocol

import torch
from checkpoint import CheckpointDir
from torch import nn


@dataclasses.dataclass(frozen=True)
class OptimizerChoice:
    """The optimizer class and its arguments, so that each layout builds it over the parameters it holds
    (ZeRO-1 builds one per rank over its share of them)."""

    cls: type[torch.optim.Optimizer]
    kwargs: dict[str, Any]

    def build(self, parameters: Iterable[nn.Parameter]) -> torch.optim.Optimizer:
        return self.cls(parameters, **self.kwargs)


class Strategy(Protocol):
    """A model laid out for one trainer, with its optimizer.

    Attributes:
        module: what the loop calls on a batch (the model wrapped by DDP, DataParallel or FSDP).
        optimizer: steps the parameters this rank holds.
        input_device: where each batch's features go (the first stage's device).
        output_device: where its targets go and the loss is computed (the last stage's device).
        autocast_dtype: the dtype the loop autocasts the forward pass to; None for fp32, and for fsdp, whose
            mixed-precision policy casts the parameters itself.
        reshardable: its checkpoints resume on another world size (when the global batch stays the same).
        batch_pieces: how many pieces each batch is cut into before the layers see it (DataParallel's GPUs, the
            pipeline's micro-batches); 1 when they see it whole.
    """

    module: nn.Module
    optimizer: torch.optim.Optimizer
    input_device: torch.device
    output_device: torch.device
    autocast_dtype: torch.dtype | None
    reshardable: bool
    batch_pieces: int

    def no_sync(self) -> AbstractContextManager[Any]:
        """Skips the gradient synchronisation of a micro-batch that does not close its accumulation group."""
        ...

    def checkpoint_state(self, checkpoints: CheckpointDir, step: int) -> dict[str, Any]:
        """Collective: the ``model`` and ``optimizer`` entries of rank 0's checkpoint file (meaningful on rank 0
        only); a sharded layout writes its shards itself and names their directory under ``shards``."""
        ...

    def load_checkpoint_state(self, state: dict[str, Any], checkpoints: CheckpointDir) -> None:
        """Collective: restores the model and optimizer from a checkpoint that `checkpoint_state` made.

        Raises:
            checkpoint.CheckpointMismatch: the checkpoint was written by a layout this one cannot read.
        """
        ...

    def final_model(self) -> tuple[dict[str, torch.Tensor], list[str]] | None:
        """Collective: on rank 0, the complete state dict (keys as in the unwrapped model) and one checksum per
        replica of the model; None on the other ranks."""
        ...
