"""Which GPUs a local run's processes see: the CPU stand-in only where this machine has fewer GPUs per host than
the instance, with the catalog's model and memory; decided without importing torch."""

from __future__ import annotations

import subprocess
import sys

import pytest

from orchestrator.emulator.instances import standin
from orchestrator.emulator.instances.standin import STANDIN_DIR, accelerators, cpu_has_native_bf16
from orchestrator.specs.catalog import lookup

G5 = lookup("ml.g5.12xlarge")
P4D = lookup("ml.p4d.24xlarge")


@pytest.mark.parametrize(("instance", "local_gpus", "variables"), [
    (G5, 0, {"SMTRAIN_GPU_STANDIN": "4", "SMTRAIN_GPU_STANDIN_NAME": "A10G", "SMTRAIN_GPU_STANDIN_MEMORY_GIB": "24"}),
    (P4D, 4, {"SMTRAIN_GPU_STANDIN": "8", "SMTRAIN_GPU_STANDIN_NAME": "A100", "SMTRAIN_GPU_STANDIN_MEMORY_GIB": "40"}),
])
def test_fewer_gpus_here_than_per_host_loads_the_standin(instance, local_gpus, variables, monkeypatch):
    monkeypatch.setattr(standin, "cpu_has_native_bf16", lambda: True)
    chosen = accelerators(instance, smddp_library=False, local_gpus=local_gpus, standin_allowed=True)
    assert chosen.python_path == (STANDIN_DIR,) and chosen.environment == variables
    assert chosen.notice.startswith("This GPU job runs on the CPU") and "--no-gpu-standin" in chosen.notice


def test_enough_gpus_here_runs_real_cuda_and_smddp_gets_only_the_library_standin():
    plain = accelerators(P4D, smddp_library=False, local_gpus=8, standin_allowed=True)
    assert (plain.python_path, plain.environment) == ((), {})
    smddp = accelerators(P4D, smddp_library=True, local_gpus=8, standin_allowed=True)
    assert (smddp.python_path, smddp.environment) == ((STANDIN_DIR,), {})
    assert "SMDDP library" in smddp.notice


def test_no_gpu_standin_and_cpu_instances_get_nothing():
    off = accelerators(G5, smddp_library=True, local_gpus=0, standin_allowed=False)
    assert (off.python_path, off.environment) == ((), {})
    assert off.notice == "--no-gpu-standin: the training processes see this machine's 0 GPUs, not the 4 x A10G of " \
                         "ml.g5.12xlarge"
    assert accelerators(lookup("ml.c5.2xlarge"), False, 0, True) == accelerators(lookup("ml.c5.2xlarge"), False, 0,
                                                                                     False)
    assert accelerators(lookup("ml.c5.2xlarge"), False, 0, True).notice is None


def test_the_emulator_never_imports_torch():
    probe = ("import sys, orchestrator.emulator.local_run, orchestrator.cli.main\n"
             "print(sorted(name for name in sys.modules if name.split('.')[0] in ('torch', 'smtrain_gpu_standin')))")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=600, check=True)
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize(("cpu_info", "native"), [
    ("processor\t: 0\nflags\t\t: fpu sse2 avx avx2 fma avx512f avx512bw\n", False),  # AVX2, AVX-512 without BF16
    ("flags\t\t: fpu avx2 avx512f avx512_bf16 amx_tile\n", True),
    ("flags\t\t: fpu avx2 amx_bf16 amx_tile\n", True),
    ("Features\t: fp asimd sve bf16 i8mm\n", True),  # Arm FEAT_BF16 (Graviton 3)
    ("Features\t: fp asimd evtstrm aes crc32\n", False),  # Graviton 2
])
def test_native_bf16_is_read_from_the_cpu_flags(tmp_path, cpu_info, native):
    path = tmp_path / "cpuinfo"
    path.write_text(cpu_info)
    assert cpu_has_native_bf16(path) is native
    assert cpu_has_native_bf16(tmp_path / "missing") is True  # nothing known: nothing changed


def test_without_native_bf16_autocast_computes_in_float32_unless_exact_is_asked(monkeypatch):
    monkeypatch.setattr(standin, "cpu_has_native_bf16", lambda: False)
    emulated = accelerators(G5, smddp_library=False, local_gpus=0, standin_allowed=True)
    assert emulated.environment["SMTRAIN_GPU_STANDIN_AUTOCAST"] == "float32"
    assert "CUDA autocast regions compute in float32" in emulated.notice and "--exact-autocast" in emulated.notice
    exact = accelerators(G5, smddp_library=False, local_gpus=0, standin_allowed=True, exact_autocast=True)
    assert "SMTRAIN_GPU_STANDIN_AUTOCAST" not in exact.environment
    assert "CUDA autocast runs as CPU bfloat16 autocast" in exact.notice
    monkeypatch.setattr(standin, "cpu_has_native_bf16", lambda: True)
    native = accelerators(G5, smddp_library=False, local_gpus=0, standin_allowed=True)
    assert "SMTRAIN_GPU_STANDIN_AUTOCAST" not in native.environment
