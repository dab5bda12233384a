"""Accelerate's own published multi-GPU test scripts run unchanged by `smtrain local` on the CPU stand-in: the
scripts Accelerate's CI launches on machines with two GPUs, taken byte for byte from the installed wheel
(accelerate 1.15.0 from PyPI, `accelerate/test_utils/scripts/`, tag v1.15.0; digests below), on 2 x ml.g5.2xlarge
(one A10G per host, world size 2) under `torch_distributed`. Each script asserts its own checks (collectives, RNG
and sampler synchronisation, training equal to one process, `no_sync` and gradient accumulation) and exits non-zero
on the first that fails; the test checks that it completed and that its distributed sections ran.

Not run here, and why (docs/frameworks.md): test_ops.py's debug-mode operation check compares a tensor's device
with the accelerator's (`cpu` against `cuda` under the stand-in); test_distributed_data_loop.py needs torchdata.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from installed import needs_packages

from orchestrator.emulator.instances.standin import local_gpu_count

pytestmark = [
    pytest.mark.slow,
    needs_packages("accelerate"),
    pytest.mark.skipif(local_gpu_count() > 0, reason="checks the CPU stand-in; with GPUs here real CUDA runs"),
]

SMTRAIN = Path(sys.executable).with_name("smtrain")
VERSION = "1.15.0"
SHA256 = {
    "test_script.py": "698b0b4250a6d1ac7facb381a9e55a71ab9a0b179f8e0bac3ce38d8a2c275c92",
    "test_sync.py": "05fd0921da9d94e80391aaad570e26f90a6b4cbc3d218f2c2b15e9d0908949ce",
}
TIMEOUT_S = 1800  # only a hang reaches it


def _published(script: str, source_dir: Path) -> None:
    """Copies Accelerate's own script into `source_dir`, after checking it is the recorded one."""
    import accelerate

    assert accelerate.__version__ == VERSION, f"accelerate {accelerate.__version__}: record its scripts' digests"
    published = Path(accelerate.__file__).parent / "test_utils" / "scripts" / script
    assert hashlib.sha256(published.read_bytes()).hexdigest() == SHA256[script]
    source_dir.mkdir()
    shutil.copyfile(published, source_dir / script)


def _run(script: str, tmp_path: Path, *args: str) -> tuple[dict, str]:
    _published(script, tmp_path / "src")
    spec = {"name": f"accelerate-{script.removesuffix('.py').replace('_', '-')}", "entry_point": script,
            "source_dir": "src", "framework_version": "2.3.0", "instance": {"type": "ml.g5.2xlarge", "count": 2},
            "distribution": {"mode": "torch_distributed"}, "metrics": [], "max_run_seconds": 1200}
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    done = subprocess.run([str(SMTRAIN), "local", str(tmp_path / "spec.yaml"), "--run-dir", str(tmp_path / "run"),
                           "-o", "json", "--stall-timeout", "1200", *args],
                          capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    assert done.stdout, done.stderr
    result = json.loads(done.stdout)
    logs = (tmp_path / "run" / "logs" / "algo-1.log").read_text()
    assert (result["status"], result["exit_code"]) == ("Completed", 0), (result["failure_reason"], logs[-6000:])
    assert result["world_size"] == 2
    return result, logs


def test_accelerates_test_script(tmp_path):
    """Its main test script, as Accelerate's multi-GPU CI runs it. Its fp32-wrapper check feeds a float16 input to a
    float32 layer inside fp16 autocast, which works only where the region casts as autocast does (on a CPU without
    native bfloat16, in the stand-in's float32 regions too)."""
    _, logs = _run("test_script.py", tmp_path)
    for line in ("Distributed environment: DistributedType.MULTI_GPU  Backend: nccl", "Num processes: 2",
                 "All rng are properly synched.", "Shuffled central dataloader passing.",
                 "Training yielded the same results on one CPU or distributed setup with batch split.",
                 "FP16 training check.", "BF16 training check.", "**Test reinstantiated state**"):
        assert line in logs, line


def test_accelerates_gradient_sync_script(tmp_path):
    _, logs = _run("test_sync.py", tmp_path)
    for line in ("**Test Distributed `no_sync` context manager**",
                 "**Test Distributed `no_sync` context manager with multiple forwards**",
                 "**Test `accumulate` gradient accumulation,  `split_batches=True` and `dispatch_batches=True` and "
                 "`sync_each_batch=True`**"):
        assert line in logs, line
