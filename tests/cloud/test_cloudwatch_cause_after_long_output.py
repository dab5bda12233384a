"""A failed job's cause read from CloudWatch however much its logs hold after the error that started it.

Before, only each stream's last 1000 events were read: rank 3's traceback, followed by the other 15 ranks' NCCL
teardown errors and 5,000 lines of warnings, lay outside them, and `smtrain status` named algo-2's rank 8 and its
`remote process exited` as the cause (peer_lost), the rank that only lost its peer. CloudWatch Logs is moto's
server; DescribeTrainingJob comes from botocore's Stubber (moto cannot play a Failed job)."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from click.testing import CliRunner
from job_fakes import described, seed_lines
from long_failures import HEADLINE, RANK_3_TRACEBACK, rank_3_fails_then

from orchestrator.cli.main import main
from orchestrator.cloud import jobs
from orchestrator.cloud.jobs import JobClient

NOISE_BEYOND_THE_FIRST_WINDOW = 2000
"""More than the first window's 1000 events (FAILURE_READ_LINES): rank 3's traceback is found in the window grown
once (4000 lines), then read doubled, as 5,000 lines found it two growths on; each line costs moto's server."""
NOISE_BEYOND_TWO_CALLS = 5000
"""More than two GetLogEvents calls read back (the first window, then the grown one: 4000 lines and the
private-key margin), so that the bound stops the search before rank 3's traceback."""


def _status(session, name: str, noise: int) -> dict:
    hyperparameters = {"sagemaker_program": '"train.py"', "sagemaker_torch_distributed_enabled": "true"}
    session.stubbers["sagemaker"].add_response("describe_training_job", described(
        name, "Failed", "Failed", HyperParameters=hyperparameters, TrainingEndTime=datetime.now(timezone.utc),
        ResourceConfig={"InstanceType": "ml.p4d.24xlarge", "InstanceCount": 2, "VolumeSizeInGB": 100},
        FailureReason='AlgorithmError: ExecuteUserScriptError:\nExitCode 1\nErrorMessage ""'))
    seed_lines(name, rank_3_fails_then(noise))
    shown = CliRunner().invoke(main, ["status", name, "-o", "json"], obj=session)
    assert shown.exit_code == 0, shown.output
    return json.loads(shown.stdout)


def test_rank_3s_error_is_the_cause_whatever_its_host_printed_after_it(stubbed_sagemaker):
    alone = _status(stubbed_sagemaker, "rank3-alone", noise=0)
    followed = _status(stubbed_sagemaker, "rank3-followed", noise=NOISE_BEYOND_THE_FIRST_WINDOW)

    assert followed["failure_cause"]["headline"] == HEADLINE
    assert followed["failure_cause"] == alone["failure_cause"]
    # what status shows under the cause stays short: rank 3's own traceback, not the warnings after it
    assert (followed["failing_rank"], followed["failing_host_last_lines"]) == (3, RANK_3_TRACEBACK)


def test_a_search_stopped_by_its_bound_says_so_rather_than_naming_a_consequence_alone(stubbed_sagemaker,
                                                                                      monkeypatch):
    """Each stream is read back with at most CAUSE_MOST_CALLS GetLogEvents calls; two here, so that a few
    thousand events exceed them."""
    monkeypatch.setattr(jobs, "CAUSE_MOST_CALLS", 2)
    status = _status(stubbed_sagemaker, "rank3-far", noise=NOISE_BEYOND_TWO_CALLS)

    cause = status["failure_cause"]
    assert cause["headline"] != HEADLINE
    assert cause["detail"][0].startswith("searched: the last ")
    assert "events of algo-1's CloudWatch stream hold no error of a rank's own" in cause["detail"][0]
    assert "the failure may have started earlier" in cause["detail"][0]
    reads = [call for call in stubbed_sagemaker.sent if call == "logs.GetLogEvents"]
    assert len(reads) <= 2 * 2  # two streams, two calls each at most


@pytest.mark.parametrize("noise", [0, NOISE_BEYOND_THE_FIRST_WINDOW])
def test_the_job_handles_failure_cause_reads_as_far_back_as_status(stubbed_sagemaker, noise):
    status = _status(stubbed_sagemaker, f"rank3-handle-{noise}", noise)
    hyperparameters = {"sagemaker_program": '"train.py"', "sagemaker_torch_distributed_enabled": "true"}
    stubbed_sagemaker.stubbers["sagemaker"].add_response("describe_training_job", described(
        f"rank3-handle-{noise}", "Failed", "Failed", HyperParameters=hyperparameters,
        TrainingEndTime=datetime.now(timezone.utc),
        FailureReason='AlgorithmError: ExecuteUserScriptError:\nExitCode 1\nErrorMessage ""'))
    cause = JobClient(f"rank3-handle-{noise}", stubbed_sagemaker).failure_cause()
    assert cause.headline() == status["failure_cause"]["headline"] == HEADLINE
