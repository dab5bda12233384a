"""The GPU trainers, on a machine with CUDA GPUs (skipped elsewhere, see tests/conftest.py): DataParallel over
every GPU of one host, and DDP over NCCL with one torchrun process per GPU."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.gpu, pytest.mark.slow]

ARGS = ["--model", "convnet", "--epochs", "1", "--num-samples", "4096", "--batch-size", "256", "--precision", "bf16"]


def test_dp_trains_on_the_gpus_of_the_host(launcher):
    run = launcher.single("gpu-dp", ["--trainer", "dp", *ARGS]).assert_ok()
    assert "device=cuda" in run.output
    metadata = run.model_json()
    assert metadata["trainer"] == "dp" and metadata["world_size"] == 1


def test_ddp_runs_nccl_with_one_process_per_gpu(launcher):
    import torch

    gpus = torch.cuda.device_count()
    run = launcher.torchrun("gpu-ddp", gpus, ["--trainer", "ddp", *ARGS]).assert_ok()
    metadata = run.model_json()
    assert metadata["backend"] == "nccl" and metadata["world_size"] == gpus
    assert metadata["replicas_in_sync"] is True
