"""Which GPUs a local run's training processes see: this machine's, or smtrain's CPU stand-in for CUDA.

A GPU instance's script takes its GPU branches (`nccl`, `.to(local_rank)`, `device_count()` processes) only where
CUDA answers. When this machine has fewer GPUs per host than the instance (or none), every training process gets
the stand-in (`gpu_standin/`): its directory first on PYTHONPATH, never in the source dir or the tarball, and
its variables naming the instance's GPUs. With enough GPUs here, real CUDA and NCCL run; only in the modes that
launch SageMaker's SMDDP library (which ships only in SageMaker's GPU images) is the directory put on PYTHONPATH,
for its `smdistributed` stand-in, with the CUDA stand-in itself off.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.emulator.gpu_standin.smtrain_gpu_standin import env as standin_env
from orchestrator.emulator.gpu_standin.smtrain_gpu_standin.notice import start_of_run_notice
from orchestrator.specs.catalog import InstanceType
from orchestrator.wording import counted

STANDIN_DIR = Path(__file__).resolve().parent.with_name("gpu_standin")
NO_STANDIN_FLAG = "--no-gpu-standin"
TURN_OFF = f" Turn it off with {NO_STANDIN_FLAG}."
EXACT_AUTOCAST_FLAG = "--exact-autocast"
CPU_INFO = Path("/proc/cpuinfo")
NATIVE_BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16", "bf16"})
"""/proc/cpuinfo's names for bfloat16 arithmetic in hardware: x86's AVX-512 BF16 and AMX, Arm's FEAT_BF16."""


@dataclass(frozen=True)
class Accelerators:
    """What a run adds to every training process's environment for the instance's GPUs, and says once."""

    python_path: tuple[Path, ...] = ()
    """Goes first on PYTHONPATH."""
    environment: dict[str, str] = field(default_factory=dict)
    notice: str | None = None

    @property
    def standin_gpus(self) -> int:
        """GPUs per host the CPU stand-in emulates; 0 when it is off."""
        return int(self.environment.get(standin_env.NUM_GPUS, "0"))


def accelerators(instance: InstanceType, smddp_library: bool, local_gpus: int, standin_allowed: bool,
                 exact_autocast: bool = False) -> Accelerators:
    """The stand-in's part of a run of `instance` on a machine with `local_gpus` GPUs.

    Args:
        smddp_library: the mode launches SageMaker's SMDDP library (smddp, and pytorchddp which the SDK rewrites
            to it), which no machine but SageMaker's GPU images has.
        standin_allowed: False with --no-gpu-standin: the processes see this machine as it is.
        exact_autocast: True with --exact-autocast: CUDA autocast computes in bfloat16 even on a CPU that only
            emulates it (else such a CPU computes autocast regions in float32: see `cpu_has_native_bf16`).
    """
    if instance.gpus == 0:
        return Accelerators()
    if not standin_allowed:
        return Accelerators(notice=f"{NO_STANDIN_FLAG}: the training processes see this machine's "
                                   f"{counted(local_gpus, 'GPU')}, not the {instance.gpus} x {_model(instance)} "
                                   f"of {instance.name}")
    if local_gpus >= instance.gpus:
        if not smddp_library:
            return Accelerators(notice=f"this machine has {counted(local_gpus, 'GPU')}: real CUDA and NCCL run (each emulated "
                                       f"host sees all of them)")
        return Accelerators(python_path=(STANDIN_DIR,),
                            notice=f"this machine has {counted(local_gpus, 'GPU')}: real CUDA runs; the SMDDP library exists "
                                   "only in SageMaker's GPU images, so smtrain's stand-in for it (smdistributed."
                                   "dataparallel) runs its collectives over gloo")
    environment = {standin_env.NUM_GPUS: str(instance.gpus), standin_env.GPU_NAME: _model(instance)}
    if instance.accelerator_memory_gib:
        environment[standin_env.GPU_MEMORY_GIB] = f"{instance.accelerator_memory_gib:g}"
    in_float32 = not exact_autocast and not cpu_has_native_bf16()
    if in_float32:
        environment[standin_env.AUTOCAST] = standin_env.AUTOCAST_FLOAT32
    fewer = f" This machine has {counted(local_gpus, 'GPU')}, fewer than the instance." if local_gpus else ""
    return Accelerators(python_path=(STANDIN_DIR,), environment=environment,
                        notice=f"{start_of_run_notice(instance.gpus, _model(instance), in_float32)}{fewer}{TURN_OFF}")


@functools.cache
def cpu_has_native_bf16(cpu_info: Path = CPU_INFO) -> bool:
    """Whether this CPU computes bfloat16 in hardware. Without it torch emulates bfloat16 about ten times slower
    than float32 (bench/bench_autocast.py), so a CUDA job's autocast would make a
    smoke's cost hang on the CPU model. True where /proc/cpuinfo cannot be read: nothing is changed unasked."""
    try:
        text = cpu_info.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return True
    return any(NATIVE_BF16_FLAGS & set(line.partition(":")[2].split()) for line in text.splitlines()
               if line.startswith(("flags", "Features")))


def _model(instance: InstanceType) -> str:
    return instance.accelerator_model or "GPU"


def local_gpu_count() -> int:
    """As the toolkit counts them: `GPU ` lines of `nvidia-smi --list-gpus`."""
    if not shutil.which("nvidia-smi"):
        return 0
    try:
        listing = subprocess.run(["nvidia-smi", "--list-gpus"], capture_output=True, text=True, timeout=30,
                                 check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(1 for line in listing.splitlines() if line.startswith("GPU "))
