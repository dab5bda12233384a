"""`smtrain logs JOB --host algo-N` of a SageMaker job reads only that host's CloudWatch streams: a 16-host job
asked for one host made 16 hosts' GetLogEvents calls (and met CloudWatch's throttling) before it filtered. SageMaker
names streams `<job>/algo-N-<epoch>`, so `algo-1` is a prefix of `algo-10`: the host is kept exactly."""

from __future__ import annotations

import pytest
from job_fakes import EPOCH, described, seed_logs

import orchestrator
from orchestrator.backends.sagemaker import SageMakerBackend

HOSTS = 12
NAME = "tiny-wide"


@pytest.mark.parametrize(("follow", "tail"), [(False, None), (False, 2), (True, None), (True, 2)],
                         ids=["dump", "tail", "follow", "follow-tail"])
def test_one_host_reads_only_that_hosts_streams_and_never_algo_10s(stubbed_sagemaker, follow, tail):
    wide = {"ResourceConfig": {"InstanceType": "ml.c5.2xlarge", "InstanceCount": HOSTS, "VolumeSizeInGB": 30}}
    # check_host's status, the read's own describe (masking), and with --follow the status that says it ended.
    for _ in range(3 if follow else 2):
        stubbed_sagemaker.stubbers["sagemaker"].add_response(
            "describe_training_job", described(NAME, "Completed", "Completed", **wide))
    seed_logs(NAME, {f"algo-{index}": [(0, f"start {index}"), (index, f"done {index}")]
                     for index in range(1, HOSTS + 1)})
    read = []
    stubbed_sagemaker.events.register("before-parameter-build.cloudwatch-logs.GetLogEvents",
                                      lambda params, **_: read.append(params["logStreamName"]))
    stubbed_sagemaker.sent.clear()

    job = orchestrator.Job(SageMakerBackend(stubbed_sagemaker), NAME)
    lines = [str(line) for line in job.logs(host="algo-1", follow=follow, tail=tail, poll_seconds=0)]

    assert lines == ["[algo-1] start 1", "[algo-1] done 1"]
    assert set(read) == {f"{NAME}/algo-1-{EPOCH}"}  # neither algo-10's, algo-11's nor algo-12's stream
    assert stubbed_sagemaker.sent.count("cloudwatch-logs.GetLogEvents") == len(read) <= 2  # one stream's worth
    assert stubbed_sagemaker.sent.count("cloudwatch-logs.DescribeLogStreams") <= (2 if follow else 1)


def test_every_hosts_lines_without_host(stubbed_sagemaker):
    stubbed_sagemaker.stubbers["sagemaker"].add_response("describe_training_job",
                                                         described(NAME, "Completed", "Completed"))
    seed_logs(NAME, {"algo-1": [(0, "one")], "algo-10": [(1, "ten")]})

    lines = [str(line) for line in orchestrator.Job(SageMakerBackend(stubbed_sagemaker), NAME).logs()]

    assert lines == ["[algo-1] one", "[algo-10] ten"]
