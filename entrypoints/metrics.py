"""What the run reports: rank 0's lines on stdout, JSON lines in metrics.jsonl, and weight checksums.

The metric line is ``epoch=1 step=40/96 train_loss=0.123456 samples_per_sec=1520.3``: epoch counts from 1, step
is the global optimizer step over the total steps of the run, the loss is the mean over all ranks since the
previous line (over the whole epoch on the line printed at each epoch end), samples/s counts all ranks. The
orchestrator's default SageMaker metric regexes (``DEFAULT_METRIC_DEFINITIONS``) read these lines.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch


def metric_line(epoch: int, step: int, total_steps: int, loss: float, samples_per_sec: float) -> str:
    return f"epoch={epoch} step={step}/{total_steps} train_loss={loss:.6f} samples_per_sec={samples_per_sec:.1f}"


class Reporter:
    """Rank 0 speaks (stdout and metrics.jsonl); the other ranks stay quiet except for warnings."""

    def __init__(self, rank: int, metrics_path: Path | None) -> None:
        self.is_rank_zero = rank == 0
        self.rank = rank
        self.metrics_path = metrics_path if self.is_rank_zero else None
        if self.metrics_path is not None:
            self.metrics_path.parent.mkdir(parents=True, exist_ok=True)

    def notice(self, text: str) -> None:
        if self.is_rank_zero:
            print(f"smtrain: {text}", flush=True)

    def warn(self, text: str) -> None:
        print(f"smtrain: warning (rank {self.rank}): {text}", file=sys.stderr, flush=True)

    def metric(self, event: str, epoch: int, step: int, total_steps: int, loss: float, samples_per_sec: float,
               **extra: Any) -> None:
        """Prints the metric line and appends the same values, plus `extra`, to metrics.jsonl."""
        if not self.is_rank_zero:
            return
        print(metric_line(epoch, step, total_steps, loss, samples_per_sec), flush=True)
        self.record(event, epoch=epoch, step=step, total_steps=total_steps, train_loss=loss,
                    samples_per_sec=samples_per_sec, **extra)

    def record(self, event: str, **values: Any) -> None:
        if self.metrics_path is not None:
            with self.metrics_path.open("a") as handle:
                handle.write(json.dumps({"event": event, "time": time.time(), **values}) + "\n")


def state_checksum(state_dict: Mapping[str, torch.Tensor]) -> str:
    """sha256 over the names, dtypes, shapes and bytes of named tensors: equal iff the tensors are equal."""
    digest = hashlib.sha256()
    for name, tensor in state_dict.items():
        flat = tensor.detach().to("cpu").contiguous()
        digest.update(f"{name}:{flat.dtype}:{tuple(flat.shape)};".encode())
        if flat.numel():
            # Raw bytes through ctypes: no numpy needed, and it works for bf16, which numpy lacks.
            digest.update(ctypes.string_at(flat.data_ptr(), flat.numel() * flat.element_size()))
    return digest.hexdigest()


def write_json(path: Path, content: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(content, indent=2, sort_keys=True) + "\n")


def samples_per_second(samples: float, since: float) -> float:
    return samples / max(time.perf_counter() - since, 1e-9)
