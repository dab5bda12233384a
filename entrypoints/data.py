"""Training data: synthetic by default, or the files of the SageMaker ``train`` channel.

Synthetic data is generated from the seed alone, so every rank (and every world size) builds the same dataset
and `ResumableDistributedSampler` shards it.

Channel data: when ``SM_CHANNEL_TRAIN`` names a directory with files, every ``.csv`` and ``.pt`` file under it
(sorted by path, subdirectories included) is loaded and concatenated; other files are skipped with a notice.

* ``.csv``: one sample per row, numbers only; the last column is the target, the others the features (784 for
  convnet, reshaped to 1x28x28; 3072 for resnet50, reshaped to 3x32x32). A first row that is not numeric is taken
  as a header.
* ``.pt``: ``torch.save`` of ``{"x": features, "y": targets}`` or of a tuple ``(features, targets)``.

Targets are class indices for the classifiers and values for the regression. A malformed file raises
`DataError` naming the file.
"""

from __future__ import annotations

import csv
import itertools
import math
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import dist_env
import torch
from models import Task
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

TRAIN_CHANNEL = "TRAIN"
DATA_SUFFIXES = (".csv", ".pt")


class DataError(ValueError):
    """A channel file cannot be used as training data; the message names the file."""


class ResumableDistributedSampler(DistributedSampler):
    """DistributedSampler that can begin an epoch part-way through, for mid-epoch resume.

    Set `start_index` (samples of this rank's shard to skip) after ``set_epoch``; the order of the rest is
    exactly what an uninterrupted epoch would have produced.
    """

    def __init__(self, dataset: TensorDataset, num_replicas: int, rank: int, seed: int) -> None:
        super().__init__(dataset, num_replicas=num_replicas, rank=rank, shuffle=True, seed=seed)
        self.start_index = 0

    def __iter__(self) -> Iterator[int]:
        return itertools.islice(super().__iter__(), self.start_index, None)

    def __len__(self) -> int:
        return self.num_samples - self.start_index


def training_dataset(task: Task, num_samples: int, seed: int, environ: Mapping[str, str],
                     notify: Callable[[str], None]) -> TensorDataset:
    """The channel's data when ``SM_CHANNEL_TRAIN`` has files, else `num_samples` synthetic samples."""
    channel = environ.get(dist_env.SM_CHANNEL_PREFIX + TRAIN_CHANNEL)
    if channel:
        directory = Path(channel)
        if not directory.is_dir():
            raise DataError(f"{dist_env.SM_CHANNEL_PREFIX}{TRAIN_CHANNEL}={channel!r} is not a directory")
        files = sorted(path for path in directory.rglob("*") if path.is_file())
        if files:
            return load_channel(files, task, notify)
        notify(f"channel {channel} is empty; using {num_samples} synthetic samples")
    return synthetic_dataset(task, num_samples, seed)


def synthetic_dataset(task: Task, num_samples: int, seed: int) -> TensorDataset:
    """Learnable data from a fixed random teacher; depends only on the task, the size and the seed."""
    generator = torch.Generator().manual_seed(seed)
    if len(task.input_shape) == 3:
        # Images: one random prototype per class plus noise.
        prototypes = torch.randn(task.num_outputs, *task.input_shape, generator=generator)
        targets = torch.randint(task.num_outputs, (num_samples,), generator=generator)
        features = prototypes[targets] + 0.5 * torch.randn(num_samples, *task.input_shape, generator=generator)
        return TensorDataset(features, targets)
    features = torch.randn(num_samples, task.num_features, generator=generator)
    teacher = torch.randn(task.num_features, task.num_outputs, generator=generator)
    scores = features @ teacher + 0.1 * torch.randn(num_samples, task.num_outputs, generator=generator)
    return TensorDataset(features, scores.argmax(dim=1) if task.classification else scores)


def load_channel(files: list[Path], task: Task, notify: Callable[[str], None]) -> TensorDataset:
    """Concatenates the ``.csv`` and ``.pt`` files among `files` into one dataset shaped for `task`."""
    data_files = [path for path in files if path.suffix in DATA_SUFFIXES]
    skipped = len(files) - len(data_files)
    if not data_files:
        raise DataError(f"no .csv or .pt file among the {len(files)} files of the train channel "
                        f"({files[0].parent}), e.g. {files[0].name}")
    if skipped:
        notify(f"train channel: skipped {skipped} files that are neither .csv nor .pt")
    parts = [_shaped(path, *(_read_csv(path) if path.suffix == ".csv" else _read_pt(path)), task)
             for path in data_files]
    return TensorDataset(torch.cat([x for x, _ in parts]), torch.cat([y for _, y in parts]))


def make_loader(dataset: TensorDataset, sampler: ResumableDistributedSampler, batch_size: int, num_workers: int,
                pin_memory: bool, seed: int) -> DataLoader:
    """A DataLoader whose own generator keeps worker seeding from drawing on the global RNG."""
    return DataLoader(dataset, batch_size=batch_size, sampler=sampler, num_workers=num_workers,
                      pin_memory=pin_memory, persistent_workers=num_workers > 0,
                      generator=torch.Generator().manual_seed(seed))


def batch_sizes(shard_size: int, batch_size: int) -> set[int]:
    """The sizes of the batches a rank's shard of `shard_size` samples is cut into each epoch."""
    sizes = {batch_size} if shard_size >= batch_size else set()
    if shard_size % batch_size:
        sizes.add(shard_size % batch_size)
    return sizes


def smallest_piece(shard_size: int, batch_size: int, pieces: int) -> int:
    """The fewest samples the layers see at once in an epoch, each batch cut into `pieces` as ``Tensor.split``
    and DataParallel's scatter cut it: pieces of ceil(size / pieces) samples, the last one what is left."""
    def last_piece(size: int) -> int:
        piece = math.ceil(size / pieces)
        return size - piece * (math.ceil(size / piece) - 1)
    return min(last_piece(size) for size in batch_sizes(shard_size, batch_size))


def batches_on(loader: DataLoader, feature_device: torch.device,
               target_device: torch.device) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """The loader's features on `feature_device` and targets on `target_device` (the first and last stage's, for
    model parallelism); on a GPU the batch's copy is issued before the next batch is loaded."""
    if feature_device.type == target_device.type == "cpu":
        yield from loader
        return
    batches = iter(loader)
    upcoming = next(batches, None)
    while upcoming is not None:
        features, targets = upcoming
        current = (features.to(feature_device, non_blocking=True), targets.to(target_device, non_blocking=True))
        upcoming = next(batches, None)
        yield current


def _read_csv(path: Path) -> tuple[torch.Tensor, torch.Tensor]:
    rows: list[list[float]] = []
    with path.open(newline="") as handle:
        for line_number, row in enumerate(csv.reader(handle), start=1):
            if not row:
                continue
            try:
                rows.append([float(value) for value in row])
            except ValueError as error:
                if line_number == 1:
                    continue  # a header
                raise DataError(f"{path}: line {line_number}: {error}") from None
    if not rows:
        raise DataError(f"{path}: no data rows")
    widths = {len(row) for row in rows}
    if len(widths) != 1 or widths == {1}:
        raise DataError(f"{path}: rows must all have the same number of columns, at least 2 "
                        f"(features then target); found {sorted(widths)}")
    table = torch.tensor(rows, dtype=torch.float32)
    return table[:, :-1], table[:, -1]


def _read_pt(path: Path) -> tuple[torch.Tensor, torch.Tensor]:
    try:
        content = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # torch raises several types for unreadable files
        raise DataError(f"{path}: cannot be loaded with torch.load: {type(error).__name__}: {error}") from None
    if isinstance(content, dict) and {"x", "y"} <= content.keys():
        features, targets = content["x"], content["y"]
    elif isinstance(content, (tuple, list)) and len(content) == 2:
        features, targets = content
    else:
        raise DataError(f'{path}: expected {{"x": tensor, "y": tensor}} or a tuple (x, y), '
                        f"got {type(content).__name__}")
    if not isinstance(features, torch.Tensor) or not isinstance(targets, torch.Tensor):
        raise DataError(f"{path}: x and y must be tensors")
    return features, targets


def _shaped(path: Path, features: torch.Tensor, targets: torch.Tensor, task: Task) -> tuple[torch.Tensor, ...]:
    """Checks sizes and labels and casts to the model's input shape and the loss's target type."""
    count = features.shape[0] if features.dim() else 0
    if count == 0 or targets.reshape(-1).shape[0] != count:
        raise DataError(f"{path}: {count} feature rows but {targets.numel()} targets")
    if features[0].numel() != task.num_features:
        raise DataError(f"{path}: {features[0].numel()} features per sample, the model takes "
                        f"{task.num_features} (shape {task.input_shape})")
    features = features.reshape(count, *task.input_shape).float()
    targets = targets.reshape(count)
    if not task.classification:
        return features, targets.float().reshape(count, 1)
    if targets.is_floating_point() and not torch.equal(targets, targets.round()):
        raise DataError(f"{path}: class targets must be whole numbers")
    labels = targets.long()
    if labels.min() < 0 or labels.max() >= task.num_outputs:
        raise DataError(f"{path}: class targets must lie in 0..{task.num_outputs - 1}, "
                        f"found {labels.min().item()}..{labels.max().item()}")
    return features, labels
