"""A GPU script's profiling, as PyTorch's profiler recipe writes it: CPU and CUDA activity over scheduled steps,
traces for TensorBoard, a table sorted by CUDA time; and the older ``torch.autograd.profiler.profile(use_cuda=True)``.

    python profiled_steps.py TRACE_DIR

Prints one JSON line: the ops each profiler recorded, the trace files written, and the table's first line.
"""

import json
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler


def main():
    model = torch.nn.Linear(64, 64).to("cuda")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def step():
        loss = model(torch.randn(32, 64, device="cuda")).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], schedule=schedule(wait=1, warmup=1, active=2),
                 on_trace_ready=tensorboard_trace_handler(sys.argv[1]), record_shapes=True) as recipe:
        for _ in range(4):
            step()
            recipe.step()
    with torch.autograd.profiler.profile(use_cuda=True) as legacy:
        step()
    print(json.dumps({
        "recipe_ops": sorted({event.key for event in recipe.key_averages()}),
        "legacy_ops": sorted({event.key for event in legacy.key_averages()}),
        "traces": sorted(os.listdir(sys.argv[1])),
        "table": recipe.key_averages().table(sort_by="cuda_time_total", row_limit=3).splitlines()[1],
    }))


if __name__ == "__main__":
    main()
