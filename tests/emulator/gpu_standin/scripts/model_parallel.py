"""Model parallel on two GPUs, in the shape of PyTorch's model-parallel tutorial: the first layers on cuda:0, the
last on cuda:1, activations moved between them; compared with the same model unsplit on cuda:0.

    python model_parallel.py

Prints one JSON line: the losses of both, and the largest difference of their trained weights.
"""

import copy
import json

import torch
from torch import nn, optim


class ToyModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.net1 = nn.Linear(10, 10)
        self.relu = nn.ReLU()
        self.net2 = nn.Linear(10, 5)

    def forward(self, x):
        return self.net2(self.relu(self.net1(x)))


class ToyMpModel(nn.Module):
    def __init__(self, reference):
        super().__init__()
        self.net1 = copy.deepcopy(reference.net1).to("cuda:0")
        self.relu = nn.ReLU()
        self.net2 = copy.deepcopy(reference.net2).to("cuda:1")

    def forward(self, x):
        x = self.relu(self.net1(x.to("cuda:0")))
        return self.net2(x.to("cuda:1"))


def train(model, inputs, labels, output_device):
    optimizer = optim.SGD(model.parameters(), lr=0.01)
    losses = []
    for _ in range(5):
        optimizer.zero_grad()
        outputs = model(inputs)
        loss = nn.MSELoss()(outputs, labels.to(output_device))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def main():
    assert torch.cuda.device_count() >= 2, "model parallel needs 2 GPUs"
    torch.manual_seed(0)
    reference = ToyModel()
    split = ToyMpModel(reference)
    whole = reference.to("cuda:0")
    inputs, labels = torch.randn(20, 10), torch.randn(20, 5)
    split_losses = train(split, inputs, labels, output_device=torch.device("cuda", 1))
    whole_losses = train(whole, inputs.to("cuda:0"), labels, output_device="cuda:0")
    split_weights = [split.net1.weight, split.net1.bias, split.net2.weight, split.net2.bias]
    whole_weights = [whole.net1.weight, whole.net1.bias, whole.net2.weight, whole.net2.bias]
    max_weight_difference = max((a.cpu() - b.cpu()).abs().max().item()
                                for a, b in zip(split_weights, whole_weights))
    print(json.dumps({"split_losses": split_losses, "whole_losses": whole_losses,
                      "max_weight_difference": max_weight_difference}), flush=True)


if __name__ == "__main__":
    main()
