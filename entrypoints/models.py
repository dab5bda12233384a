"""The models train.py can train, and what each expects as input and target.

Four small ones, and a ResNet-50 (He et al. 2015, the torchvision layout with the stride on the 3x3
convolution) for 3x32x32 images: written here because the entrypoints use torch alone, and flat (an
``nn.Sequential`` of stem layers, 16 bottleneck blocks and the head) so that trainer model_parallel can cut it into
stages between any two blocks.
"""

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
    "resnet50": Task((3, 32, 32), 10, classification=True),
}
RESNET50_BLOCKS = ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2))  # (width, blocks, stride of the first)
BOTTLENECK_EXPANSION = 4


class Bottleneck(nn.Module):
    """1x1 (narrow), 3x3 (carries the stride), 1x1 (widen by 4), added to the input or its 1x1 projection."""

    def __init__(self, in_channels: int, width: int, stride: int) -> None:
        super().__init__()
        out_channels = width * BOTTLENECK_EXPANSION
        self.conv1 = nn.Conv2d(in_channels, width, kernel_size=1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, kernel_size=3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, out_channels, kernel_size=1, bias=False)
        self.bn3 = nn.BatchNorm2d(out_channels)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or in_channels != out_channels:
            self.downsample = nn.Sequential(nn.Conv2d(in_channels, out_channels, kernel_size=1, stride=stride,
                                                      bias=False), nn.BatchNorm2d(out_channels))

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        out = self.relu(self.bn1(self.conv1(features)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        shortcut = features if self.downsample is None else self.downsample(features)
        return self.relu(out + shortcut)


def resnet50(num_classes: int) -> nn.Sequential:
    """ResNet-50 (23.5 million parameters with 10 classes) as one flat ``nn.Sequential``."""
    layers: list[nn.Module] = [nn.Conv2d(3, 64, kernel_size=7, stride=2, padding=3, bias=False), nn.BatchNorm2d(64),
                               nn.ReLU(inplace=True), nn.MaxPool2d(kernel_size=3, stride=2, padding=1)]
    channels = 64
    for width, blocks, stride in RESNET50_BLOCKS:
        for index in range(blocks):
            layers.append(Bottleneck(channels, width, stride if index == 0 else 1))
            channels = width * BOTTLENECK_EXPANSION
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(channels, num_classes)]
    return nn.Sequential(*layers)


def build_model(config: TrainConfig) -> nn.Module:
    """A freshly initialised model; seed the global RNG first so that every rank builds the same weights."""
    task = TASKS[config.model]
    if config.model in ("linear", "regression"):
        return nn.Linear(task.num_features, task.num_outputs)
    if config.model == "resnet50":
        return resnet50(task.num_outputs)
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
