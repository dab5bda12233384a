"""Plain DDP on the CPU over gloo on two emulated SageMaker hosts, and FSDP, ZeRO-1, model parallelism and
prefetching against it; SIGTERM then resume.

Every run trains the same mlp with Adam on 16 samples per step (32 steps per epoch, 2 epochs): two emulated
SageMaker hosts (one process each) of batch 8 unless a test says otherwise, or one process of batch 16.
Reference runs are module fixtures, shared by the tests that compare against them.
"""

from __future__ import annotations

import re
import signal

import pytest
import torch

pytestmark = pytest.mark.slow

ARGS = ["--model", "mlp", "--num-samples", "512", "--epochs", "2", "--optimizer", "adam", "--lr", "0.01",
        "--log-every", "1", "--checkpoint-every", "5"]
STEPS_PER_EPOCH = 512 // 16
COMPARED_STEPS = 20
TOLERANCE = 1e-5


def _hosts(launcher, name: str, trainer: list[str], num_hosts: int = 2, batch_size: int = 8):
    checkpoints = launcher.root / name / "checkpoints"
    args = [*ARGS, "--batch-size", str(batch_size), "--checkpoint-dir", str(checkpoints), *trainer]
    first, *_ = [run.assert_ok() for run in launcher.hosts(name, args, num_hosts)]
    return first


def _single(launcher, name: str, trainer: list[str]):
    checkpoints = launcher.root / name / "checkpoints"
    return launcher.single(name, [*ARGS, "--batch-size", "16", "--checkpoint-dir", str(checkpoints), *trainer]
                           ).assert_ok()


@pytest.fixture(scope="module")
def ddp(launcher):
    """Uninterrupted: the reference of the other trainers here and of plain DDP's resume."""
    return _hosts(launcher, "ddp", ["--trainer", "gloo"])


@pytest.fixture(scope="module")
def fsdp(launcher):
    return _hosts(launcher, "fsdp", ["--trainer", "fsdp"])


@pytest.fixture(scope="module")
def zero2(launcher):
    return _hosts(launcher, "zero2", ["--trainer", "fsdp", "--zero-stage", "2"])


@pytest.fixture(scope="module")
def zero1(launcher):
    return _hosts(launcher, "zero1", ["--trainer", "gloo", "--zero-stage", "1"])


@pytest.fixture(scope="module")
def one_device(launcher):
    """The unsplit model in one process."""
    return _single(launcher, "one-device", ["--trainer", "gloo"])


def step_losses(run) -> list[float]:
    """The loss of each of the first steps (the mean over the ranks), from metrics.jsonl at full precision."""
    events = run.metric_events("log")[:COMPARED_STEPS]
    assert [event["step"] for event in events] == list(range(1, COMPARED_STEPS + 1))
    return [event["train_loss"] for event in events]


def assert_close_weights(first: dict, second: dict, tolerance: float) -> None:
    assert first.keys() == second.keys()
    for name, tensor in first.items():
        torch.testing.assert_close(tensor, second[name], atol=tolerance, rtol=0, msg=name)


def assert_equal_weights(first: dict, second: dict) -> None:
    assert first.keys() == second.keys()
    assert all(torch.equal(first[name], second[name]) for name in first), "weights differ"


def test_two_sagemaker_hosts_end_with_identical_replicas(launcher, ddp):
    ddp.assert_identical_replicas("sagemaker", world_size=2, dataset_size=512)
    assert not (launcher.root / "ddp" / "algo-2" / "model").exists()  # only rank 0 writes the model


def test_fsdp_gives_the_ddp_losses_and_weights(ddp, fsdp):
    assert step_losses(fsdp) == pytest.approx(step_losses(ddp), abs=TOLERANCE, rel=0)
    assert_close_weights(fsdp.state_dict(), ddp.state_dict(), TOLERANCE)
    metadata = fsdp.model_json()
    assert (metadata["trainer"], metadata["world_size"], metadata["samples_seen_per_epoch"]) == ("fsdp", 2, [512, 512])
    assert len(metadata["replica_checksums"]) == 1  # one replica, sharded


def test_fsdp_zero2_gives_the_ddp_losses_and_weights(ddp, zero2):
    """Parameters kept gathered from forward to backward: the same numbers, only fewer all-gathers."""
    assert step_losses(zero2) == pytest.approx(step_losses(ddp), abs=TOLERANCE, rel=0)
    assert_close_weights(zero2.state_dict(), ddp.state_dict(), TOLERANCE)
    assert zero2.model_json()["hyperparameters"]["zero-stage"] == 2


def test_zero1_gives_the_ddp_losses_and_weights(ddp, zero1):
    assert step_losses(zero1) == pytest.approx(step_losses(ddp), abs=TOLERANCE, rel=0)
    assert_close_weights(zero1.state_dict(), ddp.state_dict(), TOLERANCE)
    assert zero1.model_json()["replicas_in_sync"] is True


def test_model_parallel_gives_the_unsplit_model_numbers(launcher, one_device):
    split = _single(launcher, "model-parallel", ["--trainer", "model_parallel"])
    assert "model_parallel: 2 stages, layers 0-2 on cpu (5,504 parameters), layers 3-4 on cpu (650 parameters)" \
        in split.output
    assert step_losses(split) == step_losses(one_device)
    assert_equal_weights(split.state_dict(), one_device.state_dict())


def test_pipelined_model_parallel_gives_the_unsplit_model_numbers(launcher, one_device):
    piped = _single(launcher, "pipelined", ["--trainer", "model_parallel", "--num-stages", "3",
                                            "--pipeline-chunks", "4"])
    assert "; 4 micro-batches per batch" in piped.output
    assert step_losses(piped) == pytest.approx(step_losses(one_device), abs=TOLERANCE, rel=0)
    assert_close_weights(piped.state_dict(), one_device.state_dict(), TOLERANCE)


def test_resnet50_trains_in_two_pipelined_stages_on_two_hosts(launcher):
    """The seeds' ResNet-50 split in two stages on each of two hosts, DDP between them, 2 micro-batches per batch."""
    args = ["--model", "resnet50", "--num-samples", "48", "--batch-size", "8", "--epochs", "1", "--log-every", "1",
            "--optimizer", "adam", "--lr", "0.001", "--trainer", "model_parallel", "--pipeline-chunks", "2",
            "--checkpoint-dir", str(launcher.root / "resnet50" / "checkpoints")]
    first, _ = [run.assert_ok() for run in launcher.hosts("resnet50", args)]
    assert "model_parallel: 2 stages, layers 0-17 on cpu (14,582,848 parameters), layers 18-22 on cpu " \
           "(8,945,674 parameters); 2 micro-batches per batch" in first.output
    metadata = first.model_json()
    assert (metadata["trainer"], metadata["world_size"], metadata["replicas_in_sync"]) == ("model_parallel", 2, True)
    state = first.state_dict()
    assert sum(tensor.numel() for name, tensor in state.items() if "running" not in name
               and "num_batches_tracked" not in name) == 23_528_522
    losses = [event["train_loss"] for event in [*first.metric_events("log"), *first.metric_events("epoch")]]
    assert metadata["steps"] == len(losses) == 3 and all(0 < loss < 50 for loss in losses)  # finite: not NaN


def test_model_parallel_on_two_hosts_gives_the_ddp_numbers(launcher, ddp):
    split = _hosts(launcher, "model-parallel-hosts", ["--trainer", "model_parallel", "--num-stages", "3"])
    assert step_losses(split) == pytest.approx(step_losses(ddp), abs=TOLERANCE, rel=0)
    assert_close_weights(split.state_dict(), ddp.state_dict(), TOLERANCE)
    assert split.model_json()["replicas_in_sync"] is True


def test_prefetching_changes_no_number(launcher, one_device):
    prefetched = _single(launcher, "prefetch", ["--trainer", "gloo", "--prefetch", "3"])
    assert step_losses(prefetched) == step_losses(one_device)
    assert_equal_weights(prefetched.state_dict(), one_device.state_dict())


def test_fsdp_checkpoints_are_sharded_and_pruned(launcher, fsdp):
    checkpoints = launcher.root / "fsdp" / "checkpoints"
    steps = [55, 60, 64]  # the newest 3 of every 5th step and the epoch ends
    assert sorted(path.name for path in checkpoints.glob("ckpt-*.pt")) == [f"ckpt-{s:06d}.pt" for s in steps]
    assert sorted(path.name for path in checkpoints.glob("*.dcp")) == [f"ckpt-{s:06d}.dcp" for s in steps]
    for step in steps:
        shards = checkpoints / f"ckpt-{step:06d}.dcp"
        assert sorted(path.name for path in shards.iterdir()) == [".metadata", "__0_0.distcp", "__1_0.distcp"]


def interrupt_then_resume(launcher, name: str, trainer: list[str], hosts_before: int = 2, batch_before: int = 8):
    """Runs until step 4 has passed, sends SIGTERM to every host, then restarts on 2 hosts of batch 8."""
    checkpoints = launcher.root / name / "checkpoints"
    args = [*ARGS, "--checkpoint-dir", str(checkpoints), *trainer]
    hosts = launcher.start_hosts(f"{name}/interrupted", [*args, "--batch-size", str(batch_before),
                                                         "--simulate-step-seconds", "0.05"], hosts_before)
    launcher.wait_for(hosts, "step=4/")
    for host in hosts:
        host.process.send_signal(signal.SIGTERM)
    interrupted = [host.wait() for host in hosts]
    assert [run.returncode for run in interrupted] == [0] * hosts_before, interrupted[0].output
    saved = re.search(r"interrupted: checkpoint saved at step (\d+)", interrupted[0].output)
    assert saved, interrupted[0].output
    step = int(saved.group(1))
    assert 0 < step < STEPS_PER_EPOCH  # mid-epoch
    resumed, _ = [run.assert_ok() for run in launcher.hosts(f"{name}/restarted", [*args, "--batch-size", "8"])]
    assert f"resuming from {checkpoints / f'ckpt-{step:06d}.pt'}: epoch 1, step {step}/64" in resumed.output
    assert resumed.model_json()["samples_seen_per_epoch"] == [512, 512]
    return resumed


def test_sigterm_mid_epoch_then_resume_past_a_corrupt_checkpoint_is_bit_identical(launcher, ddp):
    checkpoints = launcher.root / "ddp-resume" / "checkpoints"
    args = [*ARGS, "--batch-size", "8", "--checkpoint-dir", str(checkpoints), "--trainer", "gloo"]
    hosts = launcher.start_hosts("ddp-resume/interrupted", [*args, "--simulate-step-seconds", "0.05"])
    launcher.wait_for(hosts, "step=4/")
    for host in hosts:
        host.process.send_signal(signal.SIGTERM)
    interrupted = [host.wait() for host in hosts]
    assert [run.returncode for run in interrupted] == [0, 0], interrupted[0].output + interrupted[1].output
    saved = re.search(r"interrupted: checkpoint saved at step (\d+)", interrupted[0].output)
    assert saved, interrupted[0].output
    step = int(saved.group(1))
    assert step % STEPS_PER_EPOCH != 0 and step < 2 * STEPS_PER_EPOCH  # mid-epoch
    assert not interrupted[0].model_dir.exists()
    corrupt = checkpoints / f"ckpt-{step + 1:06d}.pt"
    corrupt.write_bytes(b"a partial upload")

    resumed, _ = [run.assert_ok() for run in launcher.hosts("ddp-resume/restarted", args)]
    assert f"skipping checkpoint: {corrupt} is not a readable checkpoint" in resumed.output
    epoch = step // STEPS_PER_EPOCH + 1
    assert f"resuming from {checkpoints / f'ckpt-{step:06d}.pt'}: epoch {epoch}, step {step}/64" \
        in resumed.output
    assert_equal_weights(resumed.state_dict(), ddp.state_dict())
    assert resumed.model_json()["samples_seen_per_epoch"] == [512, 512]


def test_fsdp_resumes_after_sigterm_with_the_uninterrupted_weights(launcher, fsdp):
    resumed = interrupt_then_resume(launcher, "fsdp-resume", ["--trainer", "fsdp"])
    assert_equal_weights(resumed.state_dict(), fsdp.state_dict())


def test_fsdp_resumes_a_four_rank_checkpoint_on_two_ranks(launcher, fsdp):
    resumed = interrupt_then_resume(launcher, "fsdp-reshard", ["--trainer", "fsdp"], hosts_before=4, batch_before=4)
    assert "resharded from world_size 4 to 2" in resumed.output
    # The steps before the interruption averaged the gradients of 4 ranks instead of 2: equal up to rounding.
    assert_close_weights(resumed.state_dict(), fsdp.state_dict(), TOLERANCE)


def test_zero1_resumes_after_sigterm_with_the_uninterrupted_weights(launcher, zero1):
    resumed = interrupt_then_resume(launcher, "zero1-resume", ["--trainer", "gloo", "--zero-stage", "1"])
    assert_equal_weights(resumed.state_dict(), zero1.state_dict())


def test_fsdp_refuses_a_checkpoint_whose_steps_trained_other_samples(launcher, fsdp):
    checkpoints = launcher.root / "fsdp" / "checkpoints"
    args = [*ARGS, "--batch-size", "8", "--checkpoint-dir", str(checkpoints), "--trainer", "fsdp"]
    refused = launcher.single("fsdp-refused", args)  # 1 rank of batch 8: 8 samples per step, not 16
    assert refused.returncode == 1
    assert "written by a run with world_size=2; this run has world_size=1" in refused.output
    assert "the same world_size x batch_size" in refused.output

