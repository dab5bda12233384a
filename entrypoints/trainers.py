"""The training loop every trainer shares: data order, steps, metrics, checkpoints, SIGTERM and final outputs.

Per step (the hot path) nothing waits on another rank or on the device beyond the trainer's own gradient
collectives: losses are summed on the device and read, with one small CPU all-reduce, only on log, checkpoint and
epoch-end steps; the SIGTERM flag is compared about twice a second (see spot.py). How the model and optimizer are
laid out over ranks and devices is the strategy's business (strategy.py); the loop only calls it.
"""

from __future__ import annotations

import dataclasses
import gc
import math
import random
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, closing, nullcontext
from pathlib import Path
from types import ModuleType
from typing import Any

import backends
import checkpoint
import data
import dist_env
import metrics
import model_parallel
import replicated
import torch
import torch.distributed as dist
from backends import Runtime
from checkpoint import CheckpointMismatch
from config import HyperparameterError, TrainConfig
from dist_env import ContainerPaths, DistEnv
from models import TASKS, build_model
from prefetch import Prefetcher
from spot import StopAgreement
from strategy import OptimizerChoice, Strategy
from torch import nn

AUTOCAST_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
BATCH_NORMS = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d, nn.SyncBatchNorm)
# The trainers that offer each ZeRO stage (Rajbhandari et al. 2020): 1 shards the optimizer state over the ranks,
# 2 the gradients too, 3 the parameters too. `smtrain validate` refuses other pairings (orchestrator/contract.py).
ZERO_STAGE_TRAINERS = {1: ("ddp", "gloo"), 2: ("fsdp",), 3: ("fsdp",)}
_RESHARD_HINT = " (or, for trainer fsdp, the same world_size x batch_size and a dataset that divides alike)"


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
    runtime = backends.resolve_runtime(config.trainer, env, reporter.notice)
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
        on_gpu = runtime.device.type == "cuda"
        reporter.notice(f"launcher={env.launcher} world_size={env.world_size} trainer={runtime.trainer} "
                        f"({runtime.reason}) backend={runtime.backend} device={runtime.device} model={config.model}")
        if config.precision != "fp32" and not on_gpu:
            reporter.notice(f"precision {config.precision} applies on GPUs only (autocast); training in fp32")
        compute_dtype = AUTOCAST_DTYPES.get(config.precision) if on_gpu else None

        task = TASKS[config.model]
        dataset = data.training_dataset(task, config.num_samples, config.seed, environ, reporter.notice)
        self.sampler = data.ResumableDistributedSampler(dataset, env.world_size, env.rank, config.seed)
        self.loader = data.make_loader(dataset, self.sampler, config.batch_size, config.num_workers,
                                       pin_memory=on_gpu, seed=config.seed + env.rank)
        self.dataset_size = len(dataset)
        self.batches_per_epoch = math.ceil(self.sampler.num_samples / config.batch_size)
        self.total_steps = math.ceil(self.batches_per_epoch / config.grad_accum) * config.epochs

        torch.manual_seed(config.seed)  # identical initial weights on every rank
        self.strategy = build_strategy(config, env, runtime, compute_dtype, reporter.notice)
        require_batch_norm_samples(self.strategy, self.sampler, config)
        self.loss_function = task.loss_function()
        self.scaler = _grad_scaler(enabled=compute_dtype is torch.float16)
        self.checkpoints = checkpoint.CheckpointDir(Path(config.checkpoint_dir))
        self.progress = Progress()
        if not self._resume():
            self._seed_rank()
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
        window = _Window(self.strategy.output_device)
        epoch_start = (window.started, progress.epoch_samples)
        with self._batches() as batches:
            for batch_index, (features, targets) in enumerate(batches, start=progress.batches_done):
                group_start = batch_index - batch_index % config.grad_accum
                group_size = min(config.grad_accum, self.batches_per_epoch - group_start)
                closes_group = batch_index + 1 == group_start + group_size
                with nullcontext() if closes_group else self.strategy.no_sync():
                    loss = self._forward_backward(features, targets, group_size)
                window.add(loss, targets.shape[0])
                if closes_group:
                    self._optimizer_step()
                    progress.global_step += 1
                    progress.batches_done = batch_index + 1
                    if not self._after_step(window, epoch_start):
                        return False
        return True

    def _batches(self) -> AbstractContextManager[Iterator[tuple[torch.Tensor, torch.Tensor]]]:
        """This epoch's batches on their devices, loaded ahead on a thread with --prefetch; closing stops it."""
        devices = (self.strategy.input_device, self.strategy.output_device)
        if self.config.prefetch:
            return closing(Prefetcher(self.loader, devices, self.config.prefetch))
        return closing(data.batches_on(self.loader, *devices))

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
        dtype = self.strategy.autocast_dtype
        with torch.autocast("cuda", dtype=dtype) if dtype is not None else nullcontext():
            loss = self.loss_function(self.strategy.module(features), targets)
        self.scaler.scale(loss if group_size == 1 else loss / group_size).backward()
        return loss

    def _optimizer_step(self) -> None:
        self.scaler.step(self.strategy.optimizer)
        self.scaler.update()
        self.strategy.optimizer.zero_grad(set_to_none=True)

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
        """Collective, after a flush: every rank contributes its RNG state (and its shards, for fsdp); rank 0
        writes the file."""
        rng_states: list[Any] | None = [None] * self.env.world_size if self.env.rank == 0 else None
        dist.gather_object(_rng_state(), rng_states, dst=0, group=self.group)
        model_state = self.strategy.checkpoint_state(self.checkpoints, self.progress.global_step)
        if rng_states is None:
            return
        path = self.checkpoints.save_in_background({
            "format": checkpoint.CHECKPOINT_FORMAT,
            "global_step": self.progress.global_step,
            **model_state,
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
        self._check_settings(path, state["settings"])
        self.strategy.load_checkpoint_state(state, self.checkpoints)
        self.scaler.load_state_dict(state["scaler"])
        self.progress = Progress(**state["progress"])
        self.reporter.notice(f"resuming from {path}: epoch {self.progress.epoch + 1}, "
                             f"step {self.progress.global_step}/{self.total_steps}")
        if len(state["rng"]) == self.env.world_size:
            _set_rng_state(state["rng"][self.env.rank])
        else:
            self.reporter.notice(f"resharded from world_size {len(state['rng'])} to {self.env.world_size}: the "
                                 f"ranks' random generators start afresh (the data order does not use them)")
            self._seed_rank()
        return True

    def _seed_rank(self) -> None:
        """Per-rank seeds for anything random after the (identical) initial weights."""
        torch.manual_seed(self.config.seed + self.env.rank)
        random.seed(self.config.seed + self.env.rank)

    def _settings(self) -> dict[str, Any]:
        """What fixes the data order and the step boundaries; a resumed run must match them."""
        return {"model": self.config.model, "world_size": self.env.world_size, "batch_size": self.config.batch_size,
                "grad_accum": self.config.grad_accum, "dataset_size": self.dataset_size, "seed": self.config.seed}

    def _check_settings(self, path: Path, theirs: dict[str, Any]) -> None:
        """Raises CheckpointMismatch unless the checkpoint's run trained the same samples at every step.

        A sharded checkpoint may come from another world size: DistributedSampler deals the epoch's shuffled
        (and padded) indices round-robin, so step s trains the same samples whenever the global batch and the
        padded epoch length are the same.
        """
        ours = self._settings()
        differing = [key for key in ours if theirs.get(key) != ours[key]]
        if (self.strategy.reshardable and set(differing) <= {"world_size", "batch_size"}
                and _samples_per_step(theirs) == _samples_per_step(ours)):
            return
        if differing:
            raise CheckpointMismatch(
                f"{path} was written by a run with {', '.join(f'{key}={theirs.get(key)}' for key in differing)}; "
                f"this run has {', '.join(f'{key}={ours[key]}' for key in differing)}. To fix: resume with the "
                f"same settings{_RESHARD_HINT if self.strategy.reshardable else ''}, or point --checkpoint-dir at "
                f"an empty directory.")

    def _write_model(self, train_seconds: float, train_cpu_seconds: float) -> None:
        """Compares the replicas, then rank 0 writes model.pt and model.json and prints the summary."""
        final = self.strategy.final_model()
        if final is None:
            return
        state, checksums = final
        in_sync = len(set(checksums)) == 1
        model_dir = self.paths.model_dir
        checkpoint.atomic_save(state, model_dir / dist_env.MODEL_STATE_FILE)
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
            f"over {len(checksums)} replica(s)")
        self.reporter.notice(f"final train_loss={final_loss:.6f} steps={self.progress.global_step} "
                             f"model={model_dir / dist_env.MODEL_STATE_FILE}")


def build_strategy(config: TrainConfig, env: DistEnv, runtime: Runtime, compute_dtype: torch.dtype | None,
                   notify: Callable[[str], None]) -> Strategy:
    """A freshly built model, laid out as the trainer says; seed the global RNG first, for identical weights.

    Args:
        compute_dtype: bf16 or fp16 on GPUs when --precision asks for it, else None.
    """
    model, optimizer = build_model(config), _optimizer(config)
    zero_trainers = ZERO_STAGE_TRAINERS.get(config.zero_stage, ())
    if config.zero_stage and runtime.trainer not in zero_trainers:
        raise HyperparameterError(
            f"--zero-stage {config.zero_stage} needs trainer {' or '.join(zero_trainers)}; this run's trainer is "
            f"{runtime.trainer} ({runtime.reason}). To fix: set --trainer {zero_trainers[-1]}, or --zero-stage 0.")
    for name, value, default in (("num-stages", config.num_stages, 0), ("pipeline-chunks", config.pipeline_chunks, 1)):
        if value != default and runtime.trainer != "model_parallel":
            notify(f"{name} applies to trainer model_parallel; trainer {runtime.trainer} ignores it")
    if runtime.trainer == "fsdp":
        return _sharded_module().Sharded(model, runtime, env.world_size, optimizer, compute_dtype,
                                         reshard_after_forward=config.zero_stage != 2)
    if runtime.trainer == "model_parallel":
        return model_parallel.build(model, runtime, env.world_size, model_parallel.Pipeline(
            config.num_stages, config.pipeline_chunks), optimizer, compute_dtype, notify)
    return replicated.data_parallel(model, runtime, optimizer, config.zero_stage, compute_dtype)


def require_batch_norm_samples(strategy: Strategy, sampler: data.ResumableDistributedSampler,
                               config: TrainConfig) -> None:
    """Refuses, before the first step, a run in which a batch norm layer would train on one sample: it raises
    at that batch ("Expected more than 1 value per channel"), which may be the last of the first epoch."""
    if not any(isinstance(layer, BATCH_NORMS) for layer in strategy.module.modules()):
        return
    pieces, shard_size = strategy.batch_pieces, sampler.num_samples
    smallest = data.smallest_piece(shard_size, config.batch_size, pieces)
    if smallest >= 2:
        return
    workable = next((size for size in _nearest_first(config.batch_size, shard_size)
                     if data.smallest_piece(shard_size, size, pieces) >= 2), None)
    fix = (f"set --batch-size {workable}" if workable is not None else
           f"train on {2 * pieces * sampler.num_replicas} samples or more (--num-samples, for synthetic data)")
    cut = f", each cut into {pieces} pieces, leave a piece" if pieces > 1 else " leave a batch"
    raise HyperparameterError(
        f"model {config.model} has batch norm, which trains on 2 samples or more at once; each rank's "
        f"{shard_size} of the {len(sampler.dataset)} samples, in batches of {config.batch_size}{cut} of "
        f"{smallest} sample. To fix: {fix}.")


def _nearest_first(size: int, largest: int) -> Iterator[int]:
    """1..largest ordered by distance from `size`, the larger first on a tie."""
    for distance in range(1, max(size, largest)):
        for candidate in (size + distance, size - distance):
            if 1 <= candidate <= largest:
                yield candidate


def _sharded_module() -> ModuleType:
    """sharded.py, imported only for trainer fsdp: FSDP and DCP take about 1 s to import, and FSDP2's
    ``fully_shard`` exists only from torch 2.6 on."""
    try:
        import sharded
    except ImportError as error:
        raise backends.TrainerUnavailable(
            f"trainer fsdp needs FSDP2 (torch.distributed.fsdp.fully_shard, torch >= 2.6), but torch "
            f"{torch.__version__} cannot provide it: {error}. To fix: set framework_version to 2.6.0 or newer."
        ) from error
    return sharded


def _optimizer(config: TrainConfig) -> OptimizerChoice:
    if config.optimizer == "adam":
        return OptimizerChoice(torch.optim.Adam, {"lr": config.lr})
    return OptimizerChoice(torch.optim.SGD, {"lr": config.lr})


def _samples_per_step(settings: dict[str, Any]) -> tuple[int, int]:
    """The global batch and DistributedSampler's padded epoch length: what fixes each step's samples."""
    world_size, dataset_size = settings["world_size"], settings["dataset_size"]
    return world_size * settings["batch_size"], math.ceil(dataset_size / world_size) * world_size


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
