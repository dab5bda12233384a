"""Which trainer runs, on which device, over which process-group backend.

* ``dp``: one process per host; ``nn.DataParallel`` over every visible GPU, or plain CPU training when there is
  none. A gloo group of one still carries the loop's bookkeeping collectives.
* ``ddp``: ``DistributedDataParallel``, one process per GPU (``device_ids=[local_rank]``) over NCCL, or over
  ``smddp`` when SageMaker's smddp mode launched the job. When that backend does not exist here, the run stops
  with an error. (``smtrain local`` on a machine without the instance's GPUs loads its CPU stand-in for CUDA,
  so this trainer takes its GPU path there, nccl and smddp running over gloo.)
* ``gloo``: ``DistributedDataParallel`` on the CPU over gloo, any number of processes and hosts.
* ``fsdp``: FSDP2 (sharded.py), one process per GPU over NCCL (or smddp) as for ``ddp``; on a host without CUDA,
  one or more processes on the CPU over gloo.
* ``model_parallel``: one process per host whose model spans the host's GPUs (model_parallel.py), DDP between
  hosts over NCCL (or smddp); on a host without CUDA, the stages all sit on the CPU and the hosts talk over gloo.
* ``auto``: ``dp`` for one process with several GPUs, ``ddp`` with CUDA (or in smddp mode), else ``gloo``; it
  never picks ``fsdp`` or ``model_parallel``, which change how the model is laid out.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
from collections.abc import Callable, Mapping
from datetime import timedelta

import dist_env
import torch
import torch.distributed as dist
from dist_env import DistEnv
from torch import nn
from torch.nn.parallel import DistributedDataParallel

SMDDP_MODULE = "smdistributed.dataparallel.torch.torch_smddp"


class TrainerUnavailable(RuntimeError):
    """The requested trainer cannot run here; the message says what is missing and what to do."""


@dataclasses.dataclass(frozen=True)
class Runtime:
    """The resolved trainer and where it runs.

    Attributes:
        reason: why this trainer, for the start-up notice.
        control_group: gloo group for the loop's small CPU collectives (None: the default group is already gloo).
    """

    trainer: str
    reason: str
    backend: str
    device: torch.device
    control_group: dist.ProcessGroup | None = None


def choose_trainer(requested: str, env: DistEnv, num_gpus: int) -> tuple[str, str]:
    """Resolves ``auto`` and checks the trainer against the launch.

    Returns:
        The trainer and the reason for it.
    """
    if requested != "auto":
        trainer, reason = requested, "requested"
    elif env.world_size == 1 and num_gpus > 1:
        trainer, reason = "dp", f"auto: one process and {num_gpus} GPUs"
    elif num_gpus > 0:
        trainer, reason = "ddp", f"auto: CUDA with {env.world_size} process(es)"
    elif env.backend_hint == "smddp":
        trainer, reason = "ddp", "auto: SageMaker smddp mode"
    else:
        trainer, reason = "gloo", f"auto: no CUDA device, {env.world_size} process(es)"
    if trainer == "dp" and env.world_size > 1:
        raise TrainerUnavailable(
            f"trainer dp runs one process per host, but {env.launcher} started world_size={env.world_size}. "
            f"To fix: use trainer ddp (GPU) or gloo (CPU) for several processes, or launch one process per host.")
    if trainer == "model_parallel" and env.local_world_size > 1:
        raise TrainerUnavailable(
            f"trainer model_parallel runs one process per host (its stages use all of the host's devices), but "
            f"{env.launcher} started {env.local_world_size} on this host. To fix: launch one process per host "
            f"(mode none, or processes_per_host: 1), or use trainer ddp or fsdp for one process per GPU.")
    return trainer, reason


def resolve_runtime(requested: str, env: DistEnv, notify: Callable[[str], None]) -> Runtime:
    """Picks the trainer, backend and device, importing the smddp backend when it is the one needed."""
    num_gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    trainer, reason = choose_trainer(requested, env, num_gpus)
    cpu = torch.device("cpu")
    if trainer == "gloo" or (trainer in ("fsdp", "model_parallel") and num_gpus == 0):
        if env.backend_hint == "smddp":
            notify(f"trainer {trainer} ignores SageMaker's smddp mode and trains on the CPU over gloo")
        return Runtime(trainer, reason, "gloo", cpu)
    if trainer == "dp":
        if num_gpus == 0:
            notify("trainer dp: no CUDA device, so no DataParallel; training on one CPU device")
            return Runtime(trainer, reason, "gloo", cpu)
        return Runtime(trainer, reason, "gloo", torch.device("cuda", 0))
    wanted = "smddp" if env.backend_hint == "smddp" else "nccl"
    missing = _load_backend(wanted)
    if missing is None:
        if env.local_rank >= num_gpus:
            raise TrainerUnavailable(
                f"LOCAL_RANK {env.local_rank} needs GPU {env.local_rank}, but {num_gpus} are visible. "
                f"To fix: launch at most {num_gpus} processes per host.")
        return Runtime(trainer, reason, wanted, torch.device("cuda", env.local_rank))
    raise TrainerUnavailable(
        f"trainer {trainer} needs the {wanted} backend, but {missing}. To fix: run on a GPU instance"
        f"{' with the SMDDP library (SageMaker PyTorch GPU image, ml.p4d/p4de)' if wanted == 'smddp' else ''}, "
        f"use trainer gloo for CPU training, or run the job with `smtrain local`, which gives a GPU instance's "
        f"processes its CPU stand-in for CUDA on a machine without the GPUs.")


def init_process_group(runtime: Runtime, env: DistEnv, timeout_seconds: float = 1800) -> Runtime:
    """Creates the default process group (a world of one needs no rendezvous) and the control group.

    Args:
        timeout_seconds: how long a collective of either group waits for the other ranks: then gloo raises,
            and NCCL (with `nccl_error_handling`) tears the process down, so a hung job fails with a reason.
    """
    if runtime.device.type == "cuda":
        torch.cuda.set_device(runtime.device)
    if runtime.backend == "nccl":
        os.environ.update(nccl_error_handling(os.environ, torch.__version__))
    timeout = timedelta(seconds=timeout_seconds)
    if env.world_size == 1:
        dist.init_process_group(runtime.backend, store=dist.HashStore(), rank=0, world_size=1, timeout=timeout)
    else:
        dist_env.export_torch_env(env, os.environ)
        dist.init_process_group(runtime.backend, init_method="env://", timeout=timeout)
    if runtime.backend == "gloo":
        return runtime
    return dataclasses.replace(runtime, control_group=dist.new_group(backend="gloo", timeout=timeout))


def nccl_error_handling(environ: Mapping[str, str], torch_version: str) -> dict[str, str]:
    """The variable that makes NCCL's watchdog end a process whose collective ran past the timeout, unless the
    environment already chose (either spelling, or blocking wait).

    torch 2.2 renamed NCCL_ASYNC_ERROR_HANDLING to TORCH_NCCL_ASYNC_ERROR_HANDLING and made 3 (tear down
    without aborting the communicator, which can itself hang) its default; before, 1 (abort, then tear down).
    TORCH_NCCL_BLOCKING_WAIT, the other way to get an error, is left alone: it makes every wait block the CPU.
    """
    chosen = ("TORCH_NCCL_ASYNC_ERROR_HANDLING", "NCCL_ASYNC_ERROR_HANDLING", "TORCH_NCCL_BLOCKING_WAIT",
              "NCCL_BLOCKING_WAIT")
    if any(name in environ for name in chosen):
        return {}
    major, minor = (int(part) for part in torch_version.split(".")[:2])
    if (major, minor) >= (2, 2):
        return {"TORCH_NCCL_ASYNC_ERROR_HANDLING": "3"}
    return {"NCCL_ASYNC_ERROR_HANDLING": "1"}


def wrap_model(model: nn.Module, runtime: Runtime) -> nn.Module:
    """DataParallel for dp on GPUs, DistributedDataParallel for ddp and gloo; the bare model for dp on a CPU."""
    if runtime.trainer == "dp":
        return nn.DataParallel(model) if runtime.device.type == "cuda" else model
    device_ids = [runtime.device.index] if runtime.device.type == "cuda" else None
    return DistributedDataParallel(model, device_ids=device_ids)


def _load_backend(name: str) -> str | None:
    """Makes backend `name` usable (importing smddp registers it); returns why it is unavailable, or None."""
    if not torch.cuda.is_available():
        return "no CUDA device is visible"
    if name == "nccl":
        return None if dist.is_nccl_available() else "this torch build has no NCCL"
    try:
        importlib.import_module(SMDDP_MODULE)
    except ImportError as error:
        return f"{SMDDP_MODULE} cannot be imported ({error})"
    return None
