"""A rank's line under Open MPI 4's `mpirun --tag-output` is read whole, whatever other ranks wrote while it was
unended: `smtrain logs` and `status` of a local run and of a SageMaker job, and the failure reason.

The lines are algo-1's log of a real 3-host `mode: mpi` run under Open MPI 4.1.4 (Debian's, as in SageMaker's
images): each rank printed `step=0 loss=`, its value, then its newline, apart, and a tqdm-like bar with carriage
returns; rank 2 then raised while rank 0 printed dots without a newline. A bar's carriage returns are line breaks
in the log (each state a line)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import psutil
from click.testing import CliRunner
from job_fakes import described, seed_lines

from orchestrator.backends.local import LocalBackend
from orchestrator.cli.main import main
from orchestrator.contract import RUN_MARKER_FILE
from orchestrator.observing.rank_lines import rejoined
from orchestrator.observing.root_cause import MPI, Launcher, read_cause

T0, T1, T2 = "[1,mpirank:0,algo-1]", "[1,mpirank:1,algo-2]", "[1,mpirank:2,algo-3]"
STEP_AND_BAR = f"""\
{T1}<stdout>:step=0 loss={T2}<stdout>:step=0 loss={T0}<stdout>:step=0 loss={T1}<stdout>:1.00{T0}<stdout>:0.00{T2}<stdout>:2.00{T1}<stdout>:
{T0}<stdout>:
{T2}<stdout>:
{T0}<stderr>:
  0%|bar| 0/2 [rank 0]{T2}<stderr>:
  0%|bar| 0/2 [rank 2]{T1}<stderr>:
  0%|bar| 0/2 [rank 1]{T0}<stderr>:
 50%|bar| 1/2 [rank 0]{T1}<stderr>:
 50%|bar| 1/2 [rank 1]{T2}<stderr>:
 50%|bar| 1/2 [rank 2]{T0}<stderr>:
100%|bar| 2/2 [rank 0]{T1}<stderr>:
100%|bar| 2/2 [rank 1]{T2}<stderr>:
100%|bar| 2/2 [rank 2]{T1}<stderr>:
{T2}<stderr>:
{T0}<stderr>:""".splitlines()
RAISED = f"""\
{T0}<stdout>:.{T0}<stdout>:.{T0}<stdout>:..{T0}<stdout>:...{T2}<stderr>:Traceback (most recent call last):
{T0}<stdout>:.....{T2}<stderr>:  File "<frozen runpy>", line 88, in _run_code
{T2}<stderr>:  File "/usr/lib/python3/dist-packages/mpi4py/__main__.py", line 7, in <module>
{T2}<stderr>:    {T2}<stderr>:main(){T2}<stderr>:
{T2}<stderr>:  File "/opt/ml/code/pieces.py", line 28, in <module>
{T2}<stderr>:    {T2}<stderr>:raise ValueError("shape mismatch in rank 2"){T2}<stderr>:
{T2}<stderr>:ValueError{T2}<stderr>:: {T2}<stderr>:shape mismatch in rank 2{T2}<stderr>:
--------------------------------------------------------------------------
MPI_ABORT was invoked on rank 2 in communicator MPI_COMM_WORLD
with errorcode 1.
--------------------------------------------------------------------------
{T0}<stdout>:......""".splitlines()
TRACEBACK = [f"{T2}<stderr>:{line}" for line in (
    "Traceback (most recent call last):", '  File "<frozen runpy>", line 88, in _run_code',
    '  File "/usr/lib/python3/dist-packages/mpi4py/__main__.py", line 7, in <module>', "    main()",
    '  File "/opt/ml/code/pieces.py", line 28, in <module>', '    raise ValueError("shape mismatch in rank 2")',
    "ValueError: shape mismatch in rank 2")]
MPIRUNS_OWN = ["-" * 74, "MPI_ABORT was invoked on rank 2 in communicator MPI_COMM_WORLD", "with errorcode 1.",
               "-" * 74]
DOTS = f"{T0}<stdout>:" + "." * 18
"""Rank 0's dots, which it never ended with a newline: handed on when the log ends."""
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
    (run_dir / "logs").mkdir(parents=True)
    (run_dir / RUN_MARKER_FILE).write_text("")
    (run_dir / "status.json").write_text(json.dumps({
        "TrainingJobName": "pieces", "TrainingJobStatus": "Completed", "SecondaryStatus": "Completed",
        "CreationTime": "2026-11-28T11:40:00+00:00", "SecondaryStatusTransitions": [],
        "ResourceConfig": {"InstanceType": "ml.c5.2xlarge", "InstanceCount": 3},
        "LocalRun": {"run_dir": str(run_dir), "pid": os.getpid(), "process_started": psutil.Process().create_time()}}))
    (run_dir / "logs" / "algo-1.log").write_text("\n".join(lines) + "\n")
    return run_dir


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
