"""Trainer fsdp: FSDP2 (``fully_shard``) on every block of the model, checkpoints through DCP.

Each rank holds about 1/world of the parameters, gradients and optimizer state (bench/bench_sharded.py --memory
measures it). A block's parameters are all-gathered just before it runs and freed after it (ZeRO-3; with
``--zero-stage 2`` they stay gathered from its forward pass to its backward pass); its gradients are
reduce-scattered, averaged over the ranks as DDP averages them. On GPUs the mixed-precision policy replaces
autocast: parameters are cast to bf16/fp16 for the forward and backward passes, gradients are reduced and the
optimizer steps in fp32.

Checkpoints: every rank writes its shards with ``torch.distributed.checkpoint`` into ``ckpt-<step>.dcp/``, then
rank 0 writes ``ckpt-<step>.pt`` as for the other trainers (see checkpoint.py). DCP reshards on load, so a run
can resume on another world size (trainers.py checks that every step still trains the same samples). The model
exists once, sharded: model.json lists one replica checksum, that of the consolidated model rank 0 saves.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import metrics
import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from backends import Runtime
from checkpoint import CheckpointDir, CheckpointMismatch
from strategy import OptimizerChoice
from torch import nn
from torch.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_model_state_dict,
    get_state_dict,
    set_state_dict,
)
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import FSDPModule, MixedPrecisionPolicy, fully_shard


class Sharded:
    """The model and optimizer state sharded over all ranks."""

    reshardable = True
    batch_pieces = 1
    autocast_dtype = None  # the mixed-precision policy casts the parameters

    def __init__(self, model: nn.Module, runtime: Runtime, world_size: int, optimizer: OptimizerChoice,
                 compute_dtype: torch.dtype | None, reshard_after_forward: bool = True) -> None:
        """
        Args:
            compute_dtype: bf16 or fp16 to compute in on GPUs, None for fp32.
            reshard_after_forward: free each block's gathered parameters after its forward pass and gather them
                again for the backward pass (ZeRO-3); False keeps them from one to the other (ZeRO-2, which
                PyTorch calls SHARD_GRAD_OP): one all-gather per block and step instead of two.
        """
        device = runtime.device
        model.to(device)
        # fully_shard wants the mesh on the parameters' device type: runtime.device's, except where a CUDA
        # stand-in (smtrain local without GPUs) keeps "cuda" tensors on the CPU.
        mesh = init_device_mesh(next(model.parameters()).device.type, (world_size,))
        # In fp32 the default policy: no casts, and no hook on every block's output to make them.
        policy = MixedPrecisionPolicy(param_dtype=compute_dtype, reduce_dtype=torch.float32,
                                      output_dtype=torch.float32) if compute_dtype else MixedPrecisionPolicy()
        for block in _blocks(model):
            fully_shard(block, mesh=mesh, mp_policy=policy, reshard_after_forward=reshard_after_forward)
        self.model: FSDPModule = fully_shard(model, mesh=mesh, mp_policy=policy,
                                             reshard_after_forward=reshard_after_forward)
        self.module = model
        self.optimizer = optimizer.build(model.parameters())
        self.input_device = self.output_device = device
        self._group = runtime.control_group

    @contextmanager
    def no_sync(self) -> Iterator[None]:
        """Accumulates unsharded gradients locally; the micro-batch that closes the group reduce-scatters."""
        self.model.set_requires_gradient_sync(False)
        try:
            yield
        finally:
            self.model.set_requires_gradient_sync(True)

    def checkpoint_state(self, checkpoints: CheckpointDir, step: int) -> dict[str, Any]:
        shards = checkpoints.shards_path(step)
        model_state, optimizer_state = get_state_dict(self.model, self.optimizer)
        dcp.save({"model": model_state, "optimizer": optimizer_state}, checkpoint_id=shards,
                 process_group=self._group)
        checkpoints.prune_shards(step)
        return {"model": None, "optimizer": None, "shards": shards.name}

    def load_checkpoint_state(self, state: dict[str, Any], checkpoints: CheckpointDir) -> None:
        if state.get("shards") is None:
            raise CheckpointMismatch(
                f"{checkpoints.path(state['global_step'])} holds a whole model (trainer dp, ddp, gloo or "
                f"model_parallel); trainer fsdp resumes only its own sharded checkpoints. To fix: resume with the "
                f"trainer that wrote it, or point --checkpoint-dir at an empty directory.")
        model_state, optimizer_state = get_state_dict(self.model, self.optimizer)
        loaded = {"model": model_state, "optimizer": optimizer_state}
        dcp.load(loaded, checkpoint_id=checkpoints.directory / state["shards"], process_group=self._group)
        set_state_dict(self.model, self.optimizer, model_state_dict=loaded["model"],
                       optim_state_dict=loaded["optimizer"])

    def final_model(self) -> tuple[dict[str, torch.Tensor], list[str]] | None:
        state = get_model_state_dict(self.model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
        return (state, [metrics.state_checksum(state)]) if dist.get_rank() == 0 else None


def _blocks(model: nn.Module) -> list[nn.Module]:
    """The direct children that have parameters: each becomes one shard group, gathered only while it runs."""
    return [child for child in model.children() if any(True for _ in child.parameters())]
