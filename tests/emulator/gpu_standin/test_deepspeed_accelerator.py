"""DeepSpeed runs on its CUDA accelerator under the stand-in, as on the instance, and its questions about where
tensors are get the CPU's answer (scripts/deepspeed_probe.py). The Trainer's ZeRO runs are in
tests/emulator/test_local_frameworks.py."""

from __future__ import annotations

import sys

import pytest
from installed import needs_packages

pytestmark = needs_packages("deepspeed")


@pytest.mark.slow
def test_deepspeed_picks_cuda_and_zero3_gathers_modified_weights(standin):
    """Without the stand-in's answer (``current_device_name()`` naming the CPU), the gather with
    ``modifier_rank=0`` stops on "Parameter 0 is on cpu but broadcast requires it to be on cuda:0"."""
    result = standin.run([sys.executable, str(standin.scripts / "deepspeed_probe.py")],
                         standin.environment(num_gpus=1))
    assert standin.json_lines(result.stdout)[-1] == {
        "accelerator": "cuda", "backend": "nccl", "process_group": "gloo", "device": "cuda:0",
        "current_device_name": "cpu", "on_accelerator": True, "partitioned_shape": [0], "gathered_sum": 8.0}
