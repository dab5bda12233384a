"""A rank's line under Open MPI 4's `mpirun --tag-output` is read whole, whatever other ranks wrote while it was
unended: `smtrain logs` and `status` of a local run and of a SageMaker job, and the failure reason. The lines are
a real run's under Open MPI 4 (open_mpi4_lines)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import psutil
from click.testing import CliRunner
from job_fakes import described, seed_lines
from local_run_dirs import written_run_dir
from open_mpi4_lines import DOTS, MPIRUNS_OWN, RAISED, STEP_AND_BAR, T0, T1, T2, TRACEBACK

from orchestrator.backends.local import LocalBackend
from orchestrator.cli.main import main
from orchestrator.observing.rank_lines import rejoined
from orchestrator.observing.root_cause import MPI, Launcher, read_cause

THREE_HOSTS = Launcher(MPI, ("algo-1", "algo-2", "algo-3"), 1)


def test_each_ranks_line_is_whole_whatever_other_ranks_wrote_before_its_newline():
    lines = rejoined(STEP_AND_BAR)

    assert [line for line in lines if "loss=" in line] == [
        f"{T1}<stdout>:step=0 loss=1.00", f"{T0}<stdout>:step=0 loss=0.00", f"{T2}<stdout>:step=0 loss=2.00"]


def test_each_state_of_a_ranks_bar_is_read_under_that_ranks_tag():
    lines = rejoined(STEP_AND_BAR)

    for rank, tag in enumerate((T0, T1, T2)):
        assert [line for line in lines if f"[rank {rank}]" in line] == [
            f"{tag}<stderr>:  0%|bar| 0/2 [rank {rank}]", f"{tag}<stderr>: 50%|bar| 1/2 [rank {rank}]",
            f"{tag}<stderr>:100%|bar| 2/2 [rank {rank}]"]


def test_a_traceback_written_in_pieces_reads_whole_mpiruns_own_lines_stay_and_an_unended_line_comes_last():
    assert rejoined(RAISED) == [*TRACEBACK, *MPIRUNS_OWN, DOTS]


def test_the_failure_reason_is_the_ranks_exception_written_in_pieces():
    cause = read_cause({"algo-1": ["mpirun --host algo-1,algo-2,algo-3 -np 3 python -m mpi4py pieces.py", *RAISED],
                        "algo-2": [], "algo-3": []}, THREE_HOSTS, exit_codes={"algo-1": 1})

    assert cause.headline() == "algo-3 (rank 2) failed: ValueError: shape mismatch in rank 2 at pieces.py:28"


def _local_run(root: Path, lines: list[str]) -> Path:
    """A finished run directory as `smtrain local` writes it, algo-1's log holding `lines`."""
    run_dir = root / "runs" / "pieces"
    return written_run_dir(run_dir, {"algo-1": "\n".join(lines) + "\n"}, TrainingJobStatus="Completed",
                           SecondaryStatus="Completed", ResourceConfig={"InstanceType": "ml.c5.2xlarge",
                                                                        "InstanceCount": 3},
                           LocalRun={"run_dir": str(run_dir), "pid": os.getpid(),
                                     "process_started": psutil.Process().create_time()})


def test_smtrain_logs_of_a_local_run_shows_each_ranks_lines_whole(tmp_path):
    run_dir = _local_run(tmp_path, [*STEP_AND_BAR, *RAISED])

    shown = [line.message for line in LocalBackend().logs(str(run_dir))]

    assert shown == rejoined([*STEP_AND_BAR, *RAISED])
    assert f"{T2}<stdout>:step=0 loss=2.00" in shown and shown[-6:] == [TRACEBACK[-1], *MPIRUNS_OWN, DOTS]


def test_status_of_a_sagemaker_job_shows_the_failing_ranks_lines_whole(stubbed_sagemaker):
    """CloudWatch holds the lines as the toolkit copied them from mpirun."""
    failed = described("pieces-job", "Failed", "Failed", HyperParameters={
        "sagemaker_program": '"pieces.py"', "sagemaker_mpi_enabled": "true",
        "sagemaker_mpi_num_of_processes_per_host": "1"}, ResourceConfig={
        "InstanceType": "ml.c5.2xlarge", "InstanceCount": 3, "VolumeSizeInGB": 30},
        FailureReason='AlgorithmError: ExecuteUserScriptError:\nExitCode 1\nErrorMessage ""')
    stubbed_sagemaker.stubbers["sagemaker"].add_response("describe_training_job", failed)
    seed_lines("pieces-job", {"algo-1": RAISED, "algo-2": [], "algo-3": []})

    shown = CliRunner().invoke(main, ["status", "pieces-job", "--output", "json"], obj=stubbed_sagemaker).stdout

    assert json.loads(shown)["failing_host_last_lines"] == TRACEBACK



def test_a_credential_a_rank_wrote_in_pieces_is_masked_when_its_line_is_rejoined(tmp_path):
    """The supervisor masked each piece as it came: neither `token hf_Ab12Cd34` nor the rest of the token alone
    is a credential by its form (a Hugging Face token is `hf_` and 34 letters), the rejoined line is."""
    token = "hf_Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr"
    run_dir = _local_run(tmp_path, [f"{T0}<stdout>:token {token[:11]}{T1}<stdout>:step=1",
                                    f"{T0}<stdout>:{token[11:]}"])

    shown = [line.message for line in LocalBackend().logs(str(run_dir))]

    assert shown == [f"{T1}<stdout>:step=1", f"{T0}<stdout>:token ****"]
