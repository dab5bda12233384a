"""Real training launches on the CPU: torchrun, one rank in smddp mode on the stand-in, DataParallel, mpirun.

Reference runs are module fixtures shared by the tests that compare against them: every torch process costs
seconds to start on a 2-core machine. Two emulated SageMaker hosts, and SIGTERM then resume on them, are
test_parallel_runs.py's: its reference DDP run on two hosts serves those tests too.
"""

from __future__ import annotations

import json
import re

import pytest
import torch

from orchestrator.contract import DEFAULT_METRIC_DEFINITIONS
from orchestrator.emulator.gpu_standin.smtrain_gpu_standin import env as standin_env
from orchestrator.emulator.instances.standin import STANDIN_DIR

pytestmark = pytest.mark.slow

SMALL = ["--model", "mlp", "--num-samples", "256", "--epochs", "2", "--log-every", "4", "--lr", "0.05"]
METRIC_LINE = re.compile(r"^epoch=\d+ step=\d+/\d+ train_loss=\d+\.\d{6} samples_per_sec=\d+\.\d$")
SMDDP_MODE = json.dumps({"sagemaker_distributed_dataparallel_enabled": True})
# What `smtrain local` gives an ml.p4d.24xlarge's processes on this machine: the CPU stand-in for CUDA.
P4D_STANDIN = {"PYTHONPATH": str(STANDIN_DIR), standin_env.NUM_GPUS: "8", standin_env.GPU_NAME: "A100"}


@pytest.fixture(scope="module")
def two_ranks(launcher):
    """torchrun, 2 processes of batch 8."""
    return launcher.torchrun("torchrun-2", 2, [*SMALL, "--batch-size", "8"]).assert_ok()


@pytest.fixture(scope="module")
def one_rank_double_batch(launcher):
    """One process of batch 16 in smddp mode on a p4d, as `smtrain local` runs it here: trainer ddp on the CPU
    stand-in for CUDA, whose smdistributed stand-in runs the smddp backend over gloo."""
    return launcher.single("one-rank", [*SMALL, "--batch-size", "16", "--trainer", "ddp"], **P4D_STANDIN,
                           SM_FRAMEWORK_PARAMS=SMDDP_MODE).assert_ok()


def assert_same_weights(first: dict, second: dict, tolerance: float) -> None:
    assert first.keys() == second.keys()
    for name in first:
        torch.testing.assert_close(first[name], second[name], atol=tolerance, rtol=0)


def test_torchrun_two_processes_end_with_identical_replicas(two_ranks):
    two_ranks.assert_identical_replicas("torchrun", world_size=2, dataset_size=256)
    assert "replicas in sync: 1 distinct checksum(s) over 2 replica(s)" in two_ranks.output


def test_metric_lines_have_the_documented_format_and_match_the_metric_definitions(two_ranks):
    lines = [line for line in two_ranks.output.splitlines() if line.startswith("epoch=")]
    assert [line.split()[1] for line in lines] == ["step=4/32", "step=8/32", "step=12/32", "step=16/32",
                                                   "step=20/32", "step=24/32", "step=28/32", "step=32/32"]
    assert all(METRIC_LINE.match(line) for line in lines), lines
    # train.py's line carries these three; the other defaults (eval loss, learning rate) read other scripts' lines.
    read = {"train:loss", "train:samples_per_sec", "train:epoch"}
    for definition in DEFAULT_METRIC_DEFINITIONS:
        values = [float(match.group(1)) for line in lines if (match := re.search(definition["Regex"], line))]
        assert len(values) == (len(lines) if definition["Name"] in read else 0), definition
    final_loss = two_ranks.model_json()["final_loss"]
    assert f"final train_loss={final_loss:.6f}" in two_ranks.output


def test_one_rank_with_double_batch_matches_two_ranks(two_ranks, one_rank_double_batch):
    assert_same_weights(one_rank_double_batch.state_dict(), two_ranks.state_dict(), tolerance=1e-6)


def test_emulated_smddp_run_takes_the_gpu_path_on_the_standin(one_rank_double_batch):
    metadata = one_rank_double_batch.model_json()
    assert (metadata["trainer"], metadata["backend"]) == ("ddp", "smddp")
    assert "trainer=ddp (requested) backend=smddp device=cuda:0" in one_rank_double_batch.output


def test_dp_with_gradient_accumulation_matches_the_larger_batch(launcher, one_rank_double_batch):
    accumulated = launcher.single("dp-accumulated", [*SMALL, "--batch-size", "8", "--grad-accum", "2",
                                                     "--trainer", "dp"]).assert_ok()
    assert accumulated.output.count("trainer dp: no CUDA device") == 1
    assert accumulated.model_json()["steps"] == one_rank_double_batch.model_json()["steps"] == 32
    assert_same_weights(accumulated.state_dict(), one_rank_double_batch.state_dict(), tolerance=1e-6)


def test_mpirun_two_processes_end_with_identical_replicas(launcher, two_ranks):
    """Open MPI's ranks read as torchrun's: the same model. (That the world size changes no number is the one rank's
    test above; every rank here costs a torch import.)"""
    mpi_ranks = launcher.mpirun("mpirun-2", 2, "train.py", [*SMALL, "--batch-size", "8"]).assert_ok()
    mpi_ranks.assert_identical_replicas("mpirun", world_size=2, dataset_size=256)
    assert_same_weights(mpi_ranks.state_dict(), two_ranks.state_dict(), tolerance=1e-6)

