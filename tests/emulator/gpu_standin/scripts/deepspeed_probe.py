"""DeepSpeed under the stand-in, in one process (world size 1, GPU 0 of the emulated host): which accelerator it
picks, what it answers about devices, and ZeRO-3's gather with ``modifier_rank=0``, which broadcasts the
modified weights and checks first that they are on the current device (what saving a consolidated model does).
Prints one JSON line."""

import json
import os

os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1")

import deepspeed  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from deepspeed.accelerator import get_accelerator  # noqa: E402

accelerator = get_accelerator()
deepspeed.init_distributed(dist_backend=accelerator.communication_backend_name())
with deepspeed.zero.Init(config_dict_or_path={"zero_optimization": {"stage": 3}, "train_batch_size": 1}):
    layer = torch.nn.Linear(4, 4)
partitioned = tuple(layer.weight.shape)
with deepspeed.zero.GatheredParameters(layer.weight, modifier_rank=0):
    layer.weight.data.fill_(0.5)
with deepspeed.zero.GatheredParameters(layer.weight):
    gathered = layer.weight.data.sum().item()
print(json.dumps({
    "accelerator": accelerator.device_name(), "backend": accelerator.communication_backend_name(),
    "process_group": dist.get_backend(), "device": accelerator.device_name(0),
    "current_device_name": accelerator.current_device_name(),
    "on_accelerator": accelerator.on_accelerator(torch.zeros(1, device="cuda")),
    "partitioned_shape": partitioned, "gathered_sum": gathered,
}), flush=True)
dist.destroy_process_group()
