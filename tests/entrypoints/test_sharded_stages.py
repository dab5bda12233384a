"""ZeRO-2 and ZeRO-3 under trainer fsdp: between a block's forward and backward passes, ZeRO-3 holds only its
shard of the block's parameters, ZeRO-2 the whole gathered block (one all-gather per step instead of two)."""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist
from backends import Runtime
from config import parse_config
from models import build_model
from sharded import Sharded
from strategy import OptimizerChoice
from torch.distributed.tensor import DTensor


@pytest.fixture
def one_rank_group(tmp_path):
    dist.init_process_group("gloo", store=dist.FileStore(str(tmp_path / "store"), 1), rank=0, world_size=1)
    yield
    dist.destroy_process_group()


@pytest.mark.parametrize(("reshard_after_forward", "held_between_passes"), [(True, "shard"), (False, "whole")])
def test_what_a_block_holds_between_its_forward_and_backward_passes(one_rank_group, reshard_after_forward,
                                                                   held_between_passes):
    torch.manual_seed(0)
    model = build_model(parse_config(["--model", "mlp"], {}))
    runtime = Runtime("fsdp", "requested", "gloo", torch.device("cpu"))
    sharded = Sharded(model, runtime, 1, OptimizerChoice(torch.optim.SGD, {"lr": 0.1}), None,
                      reshard_after_forward=reshard_after_forward)
    first_block = model[0]
    assert isinstance(first_block.weight, DTensor)  # at rest, every layout holds shards
    loss = sharded.module(torch.randn(8, 20)).square().mean()
    held = "shard" if isinstance(first_block.weight, DTensor) else "whole"
    assert held == held_between_passes
    loss.backward()
    assert isinstance(first_block.weight, DTensor)  # resharded after the backward pass either way
