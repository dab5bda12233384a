"""A training step under ``torch.compile`` on the GPU, as PyTorch 2 recipes write it: the model on cuda, the step
compiled, autocast in bf16, the current stream and ``torch.accelerator.synchronize`` asked around it; compared
with the same steps run eagerly.

    python compiled_step.py

Prints one JSON line: both runs' losses, whether they agree, the device the compiled step's output is on, and how
many of its compiled graphs torch.compile found in its cache rather than compiling them.
"""

import copy
import json

import torch
from torch import nn
from torch._dynamo.utils import counters


def train(model, step, inputs, targets):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for batch, target in zip(inputs, targets):
        stream = torch.cuda.current_stream()
        loss = step(batch, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        stream.synchronize()
        torch.accelerator.synchronize()
        losses.append(loss.item())
    return losses, loss.device.type


def main():
    torch.manual_seed(0)
    eager_model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1)).to("cuda")
    compiled_model = copy.deepcopy(eager_model)
    inputs = [torch.randn(8, 16, device="cuda") for _ in range(4)]
    targets = [batch.sum(1, keepdim=True) for batch in inputs]

    def step_of(model):
        def step(batch, target):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                return nn.functional.mse_loss(model(batch).float(), target)
        return step

    eager, _ = train(eager_model, step_of(eager_model), inputs, targets)
    compiled, device = train(compiled_model, torch.compile(step_of(compiled_model)), inputs, targets)
    print(json.dumps({"eager": eager, "compiled": compiled, "device": device,
                      "agree": all(abs(a - b) <= 1e-2 * max(1.0, abs(a)) for a, b in zip(eager, compiled)),
                      "graphs_from_cache": counters["inductor"]["fxgraph_cache_hit"],
                      "graphs_compiled": counters["inductor"]["fxgraph_cache_miss"]}))


if __name__ == "__main__":
    main()
