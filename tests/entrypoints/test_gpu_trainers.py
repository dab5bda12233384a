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


def test_fsdp_trains_in_bf16_with_one_process_per_gpu(launcher):
    import torch

    gpus = torch.cuda.device_count()
    run = launcher.torchrun("gpu-fsdp", gpus, ["--trainer", "fsdp", *ARGS]).assert_ok()
    metadata = run.model_json()
    assert (metadata["trainer"], metadata["backend"], metadata["world_size"]) == ("fsdp", "nccl", gpus)
    assert metadata["final_loss"] < metadata["loss_per_epoch"][0] * 2  # finite and not diverging


def test_prefetching_on_a_side_stream_changes_no_number(launcher):
    """The side stream and non_blocking copies deliver the same batches: the mlp (no cuDNN) trains to the same
    losses with and without --prefetch."""
    args = ["--trainer", "dp", "--model", "mlp", "--epochs", "1", "--num-samples", "2048", "--batch-size", "64",
            "--log-every", "1"]
    plain = launcher.single("gpu-plain", args).assert_ok()
    prefetched = launcher.single("gpu-prefetch", [*args, "--prefetch", "2"]).assert_ok()
    losses = [[event["train_loss"] for event in run.metric_events("log")] for run in (plain, prefetched)]
    assert losses[0] and losses[0] == pytest.approx(losses[1], abs=1e-5, rel=0)


def test_model_parallel_pipelines_micro_batches_over_the_gpus(launcher):
    import torch

    if torch.cuda.device_count() < 2:
        pytest.skip("model parallelism needs 2 GPUs on the host")
    args = ["--trainer", "model_parallel", "--model", "resnet50", "--epochs", "1", "--num-samples", "1024",
            "--batch-size", "128", "--precision", "bf16", "--log-every", "1"]
    staged = launcher.single("gpu-mp", [*args, "--num-stages", "2"]).assert_ok()
    piped = launcher.single("gpu-mp-piped", [*args, "--num-stages", "2", "--pipeline-chunks", "4"]).assert_ok()
    assert "on cuda:0" in staged.output and "on cuda:1" in staged.output
    assert "4 micro-batches per batch" in piped.output
    for run in (staged, piped):
        assert run.model_json()["trainer"] == "model_parallel"
