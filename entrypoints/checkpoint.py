"""Checkpoint files: atomic writes, newest-valid lookup, and keeping only the last few.

Files are named ``ckpt-<global step, 6+ digits>.pt`` (e.g. ``ckpt-000120.pt``). Only rank 0 writes, so the
names are unique even though every SageMaker instance syncs the same S3 prefix. A file is first written to a
hidden temporary name in the same directory, fsynced, then renamed over the final name: a reader (or the S3
sync) sees a whole checkpoint or none. Training does not wait for the disk: `CheckpointDir.save_in_background`
copies the state to CPU memory and a writer thread does the rest.

Sharded checkpoints (trainer fsdp) add a directory ``ckpt-<step>.dcp/`` to which every rank writes its shards
with ``torch.distributed.checkpoint``; the ``.pt`` file, written after all of them, names it under ``shards`` and
is what makes it a checkpoint. On SageMaker each host writes its ranks' shards to its own disk, so every rank
also deletes the shard directories it no longer needs.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import torch

CHECKPOINT_FORMAT = 1
KEEP_LAST = 3
REQUIRED_KEYS = frozenset({"format", "global_step", "model", "optimizer", "scaler", "rng", "progress", "settings"})
_NAME = re.compile(r"^ckpt-(\d+)\.pt$")
_SHARDS_NAME = re.compile(r"^ckpt-(\d+)\.dcp$")
# The file torch.distributed.checkpoint writes last, once every rank's shards are written.
DCP_METADATA = ".metadata"


class CheckpointMismatch(ValueError):
    """The checkpoint to resume was written by a run whose data order, step boundaries or layout differ."""


def checkpoint_name(step: int) -> str:
    return f"ckpt-{step:06d}.pt"


def atomic_save(obj: Any, path: Path) -> None:
    """``torch.save`` to a temporary file next to `path`, fsync, then rename it to `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with temporary.open("wb") as handle:
            torch.save(obj, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)  # makes the rename itself durable
    finally:
        os.close(directory)


class CheckpointDir:
    """The checkpoints of one run in one directory."""

    def __init__(self, directory: Path, keep: int = KEEP_LAST) -> None:
        self.directory = directory
        self.keep = keep
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="checkpoint-writer")
        self._pending: Future | None = None

    def path(self, step: int) -> Path:
        return self.directory / checkpoint_name(step)

    def shards_path(self, step: int) -> Path:
        return self.directory / f"ckpt-{step:06d}.dcp"

    def prune_shards(self, step: int) -> None:
        """Deletes the shard directories older than the newest `keep` up to `step` (newer ones are leftovers of
        an interrupted run, which this run will overwrite)."""
        matches = (_SHARDS_NAME.match(entry.name) for entry in self.directory.iterdir())
        steps = sorted((int(match.group(1)) for match in matches if match and int(match.group(1)) <= step),
                       reverse=True)
        for old_step in steps[self.keep:]:
            shutil.rmtree(self.shards_path(old_step), ignore_errors=True)  # another rank of this host may race us

    def steps(self) -> list[int]:
        """Steps that have a checkpoint file, newest first."""
        if not self.directory.is_dir():
            return []
        matches = (_NAME.match(entry.name) for entry in self.directory.iterdir())
        return sorted((int(match.group(1)) for match in matches if match), reverse=True)

    def save(self, state: dict[str, Any]) -> Path:
        """Writes `state` under its global step and deletes all but the newest `keep` checkpoints."""
        path = self.path(state["global_step"])
        atomic_save(state, path)
        for old_step in self.steps()[self.keep:]:
            self.path(old_step).unlink(missing_ok=True)
        return path

    def save_in_background(self, state: dict[str, Any]) -> Path:
        """Copies `state` to CPU memory now and saves it on the writer thread, after any earlier checkpoint."""
        self.wait()
        self._pending = self._writer.submit(self.save, _cpu_copy(state))
        return self.path(state["global_step"])

    def wait(self) -> None:
        """Returns once the last checkpoint is on disk; raises what its write raised."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()

    def load(self, step: int) -> dict[str, Any]:
        """Loads and checks one checkpoint.

        Raises:
            ValueError: the file is unreadable, incomplete or not a checkpoint of this format and step.
        """
        path = self.path(step)
        try:
            state = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as error:  # a truncated or foreign file raises one of several types
            raise ValueError(f"{path} is not a readable checkpoint: {type(error).__name__}: {error}") from None
        if not isinstance(state, dict):
            raise ValueError(f"{path} holds a {type(state).__name__}, not a checkpoint dict")
        if not REQUIRED_KEYS <= state.keys():
            raise ValueError(f"{path} lacks checkpoint keys {sorted(REQUIRED_KEYS - state.keys())}")
        if state["format"] != CHECKPOINT_FORMAT or state["global_step"] != step:
            raise ValueError(f"{path} holds format {state['format']} step {state['global_step']}, "
                             f"expected format {CHECKPOINT_FORMAT} step {step}")
        shards = state.get("shards")
        if shards is not None and not (self.directory / shards / DCP_METADATA).is_file():
            raise ValueError(f"{path} names shards {self.directory / shards} that are missing or incomplete "
                             f"(no {DCP_METADATA})")
        return state

    def newest_valid(self, warn: Callable[[str], None]) -> tuple[int, dict[str, Any]] | None:
        """The newest checkpoint that loads, warning about each newer one that does not; None when there is none."""
        for step in self.steps():
            try:
                return step, self.load(step)
            except ValueError as error:
                warn(f"skipping checkpoint: {error}")
        return None


def _cpu_copy(value: Any) -> Any:
    """A copy of `value` whose tensors are detached CPU copies, so training can go on changing the originals."""
    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu", copy=True)
    if isinstance(value, dict):
        return {key: _cpu_copy(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cpu_copy(item) for item in value)
    return value
