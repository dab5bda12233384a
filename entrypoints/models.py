"""The small models train.py can train, and what each expects as input and target."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from config import TrainConfig
from torch import nn


@dataclass(frozen=True)
class Task:
    """What a model consumes and predicts.

    Attributes:
        input_shape: shape of one sample, without the batch dimension.
        num_outputs: classes for a classifier, 1 for the regression.
        classification: targets are class indices (cross-entropy) rather than values (mean squared error).
    """

    input_shape: tuple[int, ...]
    num_outputs: int
    classification: bool

    @property
    def num_features(self) -> int:
        return int(torch.Size(self.input_shape).numel())

    def loss_function(self) -> nn.Module:
        return nn.CrossEntropyLoss() if self.classification else nn.MSELoss()


TASKS = {
    "linear": Task((5,), 2, classification=True),
    "regression": Task((20,), 1, classification=False),
    "convnet": Task((1, 28, 28), 10, classification=True),
    "mlp": Task((20,), 10, classification=True),
}


def build_model(config: TrainConfig) -> nn.Module:
    """A freshly initialised model; seed the global RNG first so that every rank builds the same weights."""
    task = TASKS[config.model]
    if config.model in ("linear", "regression"):
        return nn.Linear(task.num_features, task.num_outputs)
    if config.model == "convnet":
        return nn.Sequential(
            nn.Conv2d(1, 8, kernel_size=3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, kernel_size=3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(16 * 7 * 7, task.num_outputs),
        )
    layers: list[nn.Module] = []
    width = task.num_features
    for _ in range(config.mlp_layers):
        layers += [nn.Linear(width, config.mlp_hidden), nn.ReLU()]
        width = config.mlp_hidden
    layers.append(nn.Linear(width, task.num_outputs))
    return nn.Sequential(*layers)
