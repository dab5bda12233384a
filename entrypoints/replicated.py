"""Replicated model state: every rank holds the whole model (trainers dp, ddp, gloo; model_parallel per host).

The optimizer state is replicated too, unless ZeRO-1 (``--zero-stage 1``, trainers ddp and gloo) shards it:
``ZeroRedundancyOptimizer`` gives each rank the optimizer state of about 1/world of the parameters; each rank
steps those and broadcasts them to the others. DDP still all-reduces every gradient, so the numbers are those of
plain DDP. Checkpoints hold the whole state: ZeRO-1's shards are first consolidated on rank 0, so its checkpoint
file has the same layout as plain DDP's.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import Any

import backends
import metrics
import torch
import torch.distributed as dist
from backends import Runtime
from checkpoint import CheckpointDir, CheckpointMismatch
from strategy import OptimizerChoice
from torch import nn


class Replicated:
    """A whole replica of the model on this rank, wrapped for data parallelism."""

    reshardable = False

    def __init__(self, model: nn.Module, module: nn.Module, optimizer: torch.optim.Optimizer,
                 devices: tuple[torch.device, torch.device], autocast_dtype: torch.dtype | None,
                 group: dist.ProcessGroup | None, batch_pieces: int) -> None:
        """
        Args:
            model: the unwrapped model, whose state dict is checkpointed and saved.
            module: `model` wrapped (DDP, DataParallel), or `model` itself.
            devices: where the features go and where the loss is computed.
            group: gloo group for comparing the replicas (None: the default group).
            batch_pieces: see `strategy.Strategy`.
        """
        self.model, self.module, self.optimizer = model, module, optimizer
        self.input_device, self.output_device = devices
        self.autocast_dtype = autocast_dtype
        self._group = group
        self.batch_pieces = batch_pieces

    def no_sync(self) -> AbstractContextManager[Any]:
        no_sync = getattr(self.module, "no_sync", None)
        return no_sync() if no_sync is not None else nullcontext()

    def checkpoint_state(self, checkpoints: CheckpointDir, step: int) -> dict[str, Any]:
        consolidate = getattr(self.optimizer, "consolidate_state_dict", None)  # ZeRO-1's shards to rank 0
        if consolidate is not None:
            consolidate(to=0)
        if dist.get_rank() != 0:
            return {}
        return {"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict()}

    def load_checkpoint_state(self, state: dict[str, Any], checkpoints: CheckpointDir) -> None:
        if state.get("shards") is not None:
            raise CheckpointMismatch(
                f"{checkpoints.path(state['global_step'])} is a sharded checkpoint of trainer fsdp, which a "
                f"replicated trainer cannot read. To fix: resume with trainer fsdp, or point --checkpoint-dir at "
                f"an empty directory.")
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])

    def final_model(self) -> tuple[dict[str, torch.Tensor], list[str]] | None:
        checksums: list[Any] = [None] * dist.get_world_size()
        # The parameters: DDP makes them equal. Buffers need not be: each replica's batch norm keeps running
        # statistics of its own batches, which DDP replaces with rank 0's at the next forward pass.
        parameters = {name: parameter.detach() for name, parameter in self.model.named_parameters()}
        dist.all_gather_object(checksums, metrics.state_checksum(parameters), group=self._group)
        return (self.model.state_dict(), checksums) if dist.get_rank() == 0 else None


def data_parallel(model: nn.Module, runtime: Runtime, optimizer: OptimizerChoice, zero_stage: int,
                  autocast_dtype: torch.dtype | None) -> Replicated:
    """Trainers dp, ddp and gloo: the model on the runtime's device, wrapped as backends.wrap_model says."""
    model = model.to(runtime.device)
    # The optimizer before the DDP wrapper: ZeRO-1 built after it ran about 4% slower in bench_sharded.py
    # (0.93-0.96 of the hand-written loop in three runs of 5-11 pairs, against 0.99-1.01 in two in this order).
    if zero_stage:
        # Imported only here: torch.distributed.optim compiles TorchScript optimizers, about 1 s per process.
        from torch.distributed.optim import ZeroRedundancyOptimizer

        built: torch.optim.Optimizer = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=optimizer.cls,
                                                              **optimizer.kwargs)
    else:
        built = optimizer.build(model.parameters())
    module = backends.wrap_model(model, runtime)
    scattered_over = len(module.device_ids) if isinstance(module, nn.DataParallel) else 1
    return Replicated(model, module, built, (runtime.device, runtime.device), autocast_dtype,
                      runtime.control_group, scattered_over)
