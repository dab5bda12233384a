"""Which GPUs a local run's processes see: the CPU stand-in only where this machine has fewer GPUs per host than
the instance, with the catalog's model and memory; decided without importing torch."""

from __future__ import annotations

import subprocess
import sys

import pytest

from orchestrator.emulator.instances.standin import STANDIN_DIR, accelerators
from orchestrator.spec.catalog import lookup

G5 = lookup("ml.g5.12xlarge")
P4D = lookup("ml.p4d.24xlarge")


@pytest.mark.parametrize(("instance", "local_gpus", "variables"), [
    (G5, 0, {"SMTRAIN_GPU_STANDIN": "4", "SMTRAIN_GPU_STANDIN_NAME": "A10G", "SMTRAIN_GPU_STANDIN_MEMORY_GIB": "24"}),
    (P4D, 4, {"SMTRAIN_GPU_STANDIN": "8", "SMTRAIN_GPU_STANDIN_NAME": "A100", "SMTRAIN_GPU_STANDIN_MEMORY_GIB": "40"}),
])
def test_fewer_gpus_here_than_per_host_loads_the_standin(instance, local_gpus, variables):
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
    assert off.notice == "--no-gpu-standin: the training processes see this machine's 0 GPU(s), not the 4 x A10G of " \
                         "ml.g5.12xlarge"
    assert accelerators(lookup("ml.c5.2xlarge"), False, 0, True) == accelerators(lookup("ml.c5.2xlarge"), False, 0,
                                                                                     False)
    assert accelerators(lookup("ml.c5.2xlarge"), False, 0, True).notice is None


def test_the_emulator_never_imports_torch():
    probe = ("import sys, orchestrator.emulator.local_run, orchestrator.cli.main\n"
             "print(sorted(name for name in sys.modules if name.split('.')[0] in ('torch', 'smtrain_gpu_standin')))")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=600, check=True)
    assert result.stdout.strip() == "[]"
