"""The training loop every trainer shares: data order, steps, metrics, checkpoints, SIGTERM and final outputs.

Per step (the hot path) nothing waits on another rank or on the device beyond DDP's own gradient all-reduce:
losses are summed on the device and read, with one small CPU all-reduce, only on log, checkpoint and epoch-end
steps; the SIGTERM flag is compared about twice a second (see spot.py).
"""

from __future__ import annotations

import dataclasses
import gc
import math
import random
import time
from collections.abc import Mapping
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import backends
import checkpoint
import data
import dist_env
import metrics
import torch
import torch.distributed as dist
from backends import Runtime
from config import TrainConfig
from dist_env import ContainerPaths, DistEnv
from models import TASKS, build_model
from spot import StopAgreement
from torch import nn

AUTOCAST_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


class CheckpointMismatch(ValueError):
    """The checkpoint to resume was written by a run whose data order or step boundaries differ."""


@dataclasses.dataclass
class Progress:
    """Where the run stands; saved in every checkpoint. Loss and sample totals are summed over all ranks."""

    epoch: int = 0
    batches_done: int = 0
    global_step: int = 0
    epoch_loss_sum: float = 0.0
    epoch_micro_batches: int = 0
    epoch_samples: int = 0
    samples_per_epoch: list[int] = dataclasses.field(default_factory=list)
    loss_per_epoch: list[float] = dataclasses.field(default_factory=list)


class _Window:
    """This rank's losses and samples since the last flush; the loss stays on the device until then."""

    def __init__(self, device: torch.device) -> None:
        self.loss_sum = torch.zeros((), device=device)
        self.micro_batches = 0
        self.samples = 0
        self.started = time.perf_counter()

    def add(self, loss: torch.Tensor, samples: int) -> None:
        self.loss_sum += loss.detach()
        self.micro_batches += 1
        self.samples += samples

    def restart(self) -> None:
        self.loss_sum.zero_()
        self.micro_batches = self.samples = 0
        self.started = time.perf_counter()


def run_training(config: TrainConfig, environ: Mapping[str, str]) -> None:
    """Trains as this process's launcher and hyperparameters say, then writes the model from rank 0."""
    env = dist_env.detect(environ)
    paths = dist_env.container_paths(environ)
    metrics_path = paths.output_data_dir / dist_env.METRICS_JSONL if paths.output_data_dir else None
    reporter = metrics.Reporter(env.rank, metrics_path)
    runtime = backends.resolve_runtime(config.trainer, env, environ, reporter.notice)
    runtime = backends.init_process_group(runtime, env, config.collective_timeout_seconds)
    try:
        _train(config, env, runtime, paths, reporter, environ)
    finally:
        # Destroy the process group while the interpreter is fully alive. Gloo's worker threads release their
        # last work objects, which hold Python tensors, asynchronously; a release that happens during
        # interpreter shutdown cannot take the GIL and aborts the process ("terminate called without an
        # active exception", exit 134, seen in about 4% of 2-rank runs). Everything holding the group (the
        # DDP model, the trainer) is gone once `_train` returns; the collection breaks their cycles.
        gc.collect()
        dist.destroy_process_group()


def _train(config: TrainConfig, env: DistEnv, runtime: Runtime, paths: ContainerPaths, reporter: metrics.Reporter,
           environ: Mapping[str, str]) -> None:
    Trainer(config, env, runtime, paths, reporter, environ).run()


class Trainer:
    """One run of the loop on this rank."""

    def __init__(self, config: TrainConfig, env: DistEnv, runtime: Runtime, paths: ContainerPaths,
                 reporter: metrics.Reporter, environ: Mapping[str, str]) -> None:
        self.config, self.env, self.runtime, self.paths, self.reporter = config, env, runtime, paths, reporter
        self.group = runtime.control_group
        self.device = runtime.device
        on_gpu = self.device.type == "cuda"
        reporter.notice(f"launcher={env.launcher} world_size={env.world_size} trainer={runtime.trainer} "
                        f"({runtime.reason}) backend={runtime.backend} device={self.device} model={config.model}")
        if config.precision != "fp32" and not on_gpu:
            reporter.notice(f"precision {config.precision} applies on GPUs only (autocast); training in fp32")
        self.autocast_dtype = AUTOCAST_DTYPES.get(config.precision) if on_gpu else None

        task = TASKS[config.model]
        dataset = data.training_dataset(task, config.num_samples, config.seed, environ, reporter.notice)
        self.sampler = data.ResumableDistributedSampler(dataset, env.world_size, env.rank, config.seed)
        self.loader = data.make_loader(dataset, self.sampler, config.batch_size, config.num_workers,
                                       pin_memory=on_gpu, seed=config.seed + env.rank)
        self.dataset_size = len(dataset)
        self.batches_per_epoch = math.ceil(self.sampler.num_samples / config.batch_size)
        self.total_steps = math.ceil(self.batches_per_epoch / config.grad_accum) * config.epochs

        torch.manual_seed(config.seed)  # identical initial weights on every rank
        self.model = build_model(config).to(self.device)
        self.loss_function = task.loss_function()
        self.optimizer = _optimizer(config, self.model)
        self.scaler = _grad_scaler(enabled=self.autocast_dtype is torch.float16)
        self.checkpoints = checkpoint.CheckpointDir(Path(config.checkpoint_dir))
        self.progress = Progress()
        if not self._resume():
            torch.manual_seed(config.seed + env.rank)
            random.seed(config.seed + env.rank)
        self.wrapped = backends.wrap_model(self.model, runtime)
        self.no_sync = getattr(self.wrapped, "no_sync", nullcontext)
        self.stop = StopAgreement(self.group, self.progress.global_step)

    def run(self) -> None:
        started, cpu_started = time.perf_counter(), time.process_time()
        try:
            while self.progress.epoch < self.config.epochs:
                if not self._train_epoch():
                    self.reporter.notice(f"interrupted: checkpoint saved at step {self.progress.global_step}")
                    return
            self._write_model(train_seconds=time.perf_counter() - started,
                              train_cpu_seconds=time.process_time() - cpu_started)
        finally:
            self.checkpoints.wait()

    def _train_epoch(self) -> bool:
        """Trains the rest of the current epoch; False when SIGTERM stopped it (after saving a checkpoint)."""
        progress, config = self.progress, self.config
        self.sampler.set_epoch(progress.epoch)
        self.sampler.start_index = progress.batches_done * config.batch_size
        window = _Window(self.device)
        epoch_start = (window.started, progress.epoch_samples)
        for batch_index, (features, targets) in enumerate(data.batches_on(self.loader, self.device),
                                                          start=progress.batches_done):
            group_start = batch_index - batch_index % config.grad_accum
            group_size = min(config.grad_accum, self.batches_per_epoch - group_start)
            closes_group = batch_index + 1 == group_start + group_size
            with nullcontext() if closes_group else self.no_sync():
                loss = self._forward_backward(features, targets, group_size)
            window.add(loss, targets.shape[0])
            if closes_group:
                self._optimizer_step()
                progress.global_step += 1
                progress.batches_done = batch_index + 1
                if not self._after_step(window, epoch_start):
                    return False
        return True

    def _after_step(self, window: _Window, epoch_start: tuple[float, int]) -> bool:
        """Reports, checkpoints and acts on SIGTERM at a step boundary; False when the run must stop."""
        config, step = self.config, self.progress.global_step
        if config.simulate_step_seconds:
            time.sleep(config.simulate_step_seconds)
        epoch_ends = self.progress.batches_done == self.batches_per_epoch
        if epoch_ends:
            self._end_epoch(window, *epoch_start)
        elif step % config.log_every == 0:
            started = window.started
            loss_mean, samples = self._flush(window)
            self.reporter.metric("log", self.progress.epoch + 1, step, self.total_steps, loss_mean,
                                 metrics.samples_per_second(samples, started))
        if step < self.total_steps and self.stop.should_stop(step):
            if not epoch_ends:
                self._flush(window)
                self._save_checkpoint()
            self.checkpoints.wait()
            dist.barrier(group=self.group)  # nobody exits before rank 0's checkpoint is on disk
            return False
        if config.checkpoint_every and step % config.checkpoint_every == 0 and not epoch_ends:
            self._flush(window)
            self._save_checkpoint()
        return True

    def _forward_backward(self, features: torch.Tensor, targets: torch.Tensor, group_size: int) -> torch.Tensor:
        autocast = (torch.autocast("cuda", dtype=self.autocast_dtype) if self.autocast_dtype is not None
                    else nullcontext())
        with autocast:
            loss = self.loss_function(self.wrapped(features), targets)
        self.scaler.scale(loss if group_size == 1 else loss / group_size).backward()
        return loss

    def _optimizer_step(self) -> None:
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.optimizer.zero_grad(set_to_none=True)

    def _flush(self, window: _Window) -> tuple[float, int]:
        """Moves the window, summed over all ranks, into the epoch totals; returns its mean loss and samples."""
        totals = torch.tensor([window.loss_sum.item(), window.micro_batches, window.samples], dtype=torch.float64)
        dist.all_reduce(totals, group=self.group)
        loss_sum, micro_batches, samples = totals.tolist()
        self.progress.epoch_loss_sum += loss_sum
        self.progress.epoch_micro_batches += int(micro_batches)
        self.progress.epoch_samples += int(samples)
        window.restart()
        return loss_sum / max(micro_batches, 1), int(samples)

    def _end_epoch(self, window: _Window, epoch_started: float, samples_before: int) -> None:
        progress = self.progress
        self._flush(window)
        epoch_loss = progress.epoch_loss_sum / max(progress.epoch_micro_batches, 1)
        self.reporter.metric("epoch", progress.epoch + 1, progress.global_step, self.total_steps, epoch_loss,
                             metrics.samples_per_second(progress.epoch_samples - samples_before, epoch_started),
                             samples_seen=progress.epoch_samples, dataset_size=self.dataset_size)
        progress.samples_per_epoch.append(progress.epoch_samples)
        progress.loss_per_epoch.append(epoch_loss)
        progress.epoch, progress.batches_done = progress.epoch + 1, 0
        progress.epoch_loss_sum, progress.epoch_micro_batches, progress.epoch_samples = 0.0, 0, 0
        self._save_checkpoint()

    def _save_checkpoint(self) -> None:
        """Collective, after a flush: every rank contributes its RNG state; rank 0 writes the file."""
        rng_states: list[Any] | None = [None] * self.env.world_size if self.env.rank == 0 else None
        dist.gather_object(_rng_state(), rng_states, dst=0, group=self.group)
        if rng_states is None:
            return
        path = self.checkpoints.save_in_background({
            "format": checkpoint.CHECKPOINT_FORMAT,
            "global_step": self.progress.global_step,
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scaler": self.scaler.state_dict(),
            "rng": rng_states,
            "progress": dataclasses.asdict(self.progress),
            "settings": self._settings(),
        })
        self.reporter.record("checkpoint", step=self.progress.global_step, path=str(path))

    def _resume(self) -> bool:
        """Loads the newest valid checkpoint that rank 0 finds (every rank reads that same file); False if none."""
        found = self.checkpoints.newest_valid(self.reporter.warn) if self.env.rank == 0 else None
        chosen = torch.tensor([found[0] if found else -1], dtype=torch.int64)
        dist.broadcast(chosen, src=0, group=self.group)
        step = int(chosen.item())
        if step < 0:
            self.reporter.notice(f"no checkpoint in {self.checkpoints.directory}; starting at step 0")
            return False
        state = found[1] if found else self.checkpoints.load(step)
        path = self.checkpoints.path(step)
        ours, theirs = self._settings(), state["settings"]
        differing = [key for key in ours if theirs.get(key) != ours[key]]
        if differing:
            raise CheckpointMismatch(
                f"{path} was written by a run with {', '.join(f'{key}={theirs.get(key)}' for key in differing)}; "
                f"this run has {', '.join(f'{key}={ours[key]}' for key in differing)}. To fix: resume with the "
                f"same settings, or point --checkpoint-dir at an empty directory.")
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scaler.load_state_dict(state["scaler"])
        self.progress = Progress(**state["progress"])
        _set_rng_state(state["rng"][self.env.rank])
        self.reporter.notice(f"resuming from {path}: epoch {self.progress.epoch + 1}, "
                             f"step {self.progress.global_step}/{self.total_steps}")
        return True

    def _settings(self) -> dict[str, Any]:
        """What fixes the data order and the step boundaries; a resumed run must match them."""
        return {"model": self.config.model, "world_size": self.env.world_size, "batch_size": self.config.batch_size,
                "grad_accum": self.config.grad_accum, "dataset_size": self.dataset_size, "seed": self.config.seed}

    def _write_model(self, train_seconds: float, train_cpu_seconds: float) -> None:
        """Compares the replicas, then rank 0 writes model.pt and model.json and prints the summary."""
        checksums: list[Any] = [None] * self.env.world_size
        dist.all_gather_object(checksums, metrics.state_checksum(self.model.state_dict()), group=self.group)
        if self.env.rank != 0:
            return
        in_sync = len(set(checksums)) == 1
        model_dir = self.paths.model_dir
        checkpoint.atomic_save(self.model.state_dict(), model_dir / dist_env.MODEL_STATE_FILE)
        final_loss = self.progress.loss_per_epoch[-1]
        metrics.write_json(model_dir / dist_env.MODEL_METADATA_FILE, {
            "model": self.config.model,
            "hyperparameters": self.config.hyperparameters(),
            "world_size": self.env.world_size,
            "launcher": self.env.launcher,
            "backend": self.runtime.backend,
            "trainer": self.runtime.trainer,
            "epochs": self.config.epochs,
            "steps": self.progress.global_step,
            "final_loss": final_loss,
            "loss_per_epoch": self.progress.loss_per_epoch,
            "samples_seen_per_epoch": self.progress.samples_per_epoch,
            "dataset_size": self.dataset_size,
            "replica_checksums": checksums,
            "replicas_in_sync": in_sync,
            "train_seconds": train_seconds,
            "train_cpu_seconds": train_cpu_seconds,
            "torch_version": torch.__version__,
        })
        self.reporter.notice(
            f"replicas {'in sync' if in_sync else 'NOT in sync'}: {len(set(checksums))} distinct checksum(s) "
            f"over {len(checksums)} rank(s)")
        self.reporter.notice(f"final train_loss={final_loss:.6f} steps={self.progress.global_step} "
                             f"model={model_dir / dist_env.MODEL_STATE_FILE}")


def _optimizer(config: TrainConfig, model: nn.Module) -> torch.optim.Optimizer:
    if config.optimizer == "adam":
        return torch.optim.Adam(model.parameters(), lr=config.lr)
    return torch.optim.SGD(model.parameters(), lr=config.lr)


def _grad_scaler(enabled: bool) -> Any:
    """A GradScaler for fp16 autocast; disabled, it passes losses and steps through unchanged."""
    if hasattr(torch.amp, "GradScaler"):  # torch >= 2.3, where torch.cuda.amp.GradScaler is deprecated
        return torch.amp.GradScaler("cuda", enabled=enabled)
    return torch.cuda.amp.GradScaler(enabled=enabled)


def _rng_state() -> dict[str, Any]:
    return {"python": random.getstate(), "torch": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None}


def _set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    torch.set_rng_state(state["torch"])
    if state["cuda"] is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
