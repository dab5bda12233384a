"""A SageMaker job's liveness (cloud.job_liveness) and the watch that stops a hung job (`orchestrator.Job.follow`).

CloudWatch Logs and metrics are moto's server; SageMaker is a Stubber, since moto creates every job Completed and
has no StopTrainingJob. A fake clock and sleep stand for minutes of watching: nothing here waits or depends on
how fast the machine is (log lines are tens of minutes old, timeouts tens of minutes long).
"""

from __future__ import annotations

import datetime as dt
from collections import Counter

import pytest
from job_fakes import seed_host_metrics, seed_logs, training

from orchestrator.backends.job import Job
from orchestrator.backends.sagemaker import SageMakerBackend
from orchestrator.cloud.hang_watch import WatchOptions
from orchestrator.cloud.job_liveness import GPU_BUSY_PERCENT
from orchestrator.cloud.jobs import JobClient
from orchestrator.observing.liveness import Verdict

MINUTE = 60_000
IDLE = {"GPUUtilization": 0.0, "GPUMemoryUtilization": 41.0, "CPUUtilization": 2.0}
BUSY = {"GPUUtilization": 97.0, "GPUMemoryUtilization": 80.0, "CPUUtilization": 110.0}


def _job(name: str, session) -> Job:
    """The job handle every watch follows: `orchestrator.Job` on the SageMaker backend."""
    return Job(SageMakerBackend(session), name)


class FakeClock:
    """The wall clock, frozen at the real time it was made and advanced only by its own `sleep`."""

    def __init__(self) -> None:
        self.now = dt.datetime.now(dt.timezone.utc)
        self.slept: list[float] = []

    def __call__(self) -> dt.datetime:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += dt.timedelta(seconds=seconds)


def silent_logs(name: str) -> None:
    """algo-2 wrote its last line 25 minutes ago, algo-1 20 minutes ago."""
    seed_logs(name, {"algo-1": [(-30 * MINUTE, "step=10/100 loss=0.9"), (-20 * MINUTE, "step=11/100 loss=0.8")],
                     "algo-2": [(-25 * MINUTE, "[rank 1] entering all_reduce")]})


def queue(session, name: str, *statuses: tuple[str, str]) -> None:
    for status, secondary in statuses:
        session.stubbers["sagemaker"].add_response("describe_training_job", training(name, status, secondary))


def test_silent_logs_and_idle_gpus_are_hung_and_say_which_host_went_silent_first(stubbed_sagemaker):
    silent_logs("tiny-hang")
    seed_host_metrics("tiny-hang", {"algo-1": IDLE, "algo-2": IDLE})
    queue(stubbed_sagemaker, "tiny-hang", ("InProgress", "Training"))

    liveness = JobClient("tiny-hang", stubbed_sagemaker).liveness(600)

    assert liveness.verdict is Verdict.HUNG
    assert liveness.silent_seconds >= 20 * 60
    assert [host.host for host in liveness.silent_first()] == ["algo-2", "algo-1"]
    assert [host.activity.busy for host in liveness.hosts] == [False, False]
    assert liveness.hosts[0].utilization == IDLE
    assert liveness.summary().startswith("silent for 2")
    assert liveness.summary().endswith("GPUs idle on every host (algo-1, algo-2)")
    reason = liveness.reason()
    assert reason.startswith("Hung: no host wrote a line or advanced a metric for 2")
    assert "(stall timeout 10 min), and every host is idle" in reason
    assert "algo-1: idle: GPU 0%, GPU memory 41%, CPU 2% at most over the last 5 min" in reason
    assert "algo-2 went silent first (last line " in reason and "then algo-1 (last line " in reason
    assert liveness.hosts[0].last_lines == ("step=10/100 loss=0.9", "step=11/100 loss=0.8")
    assert "  last lines of algo-2:\n    [rank 1] entering all_reduce" in liveness.last_lines_text()


def test_silent_logs_with_one_busy_gpu_host_are_slow(stubbed_sagemaker):
    silent_logs("tiny-slow")
    seed_host_metrics("tiny-slow", {"algo-1": BUSY, "algo-2": IDLE})
    queue(stubbed_sagemaker, "tiny-slow", ("InProgress", "Training"))

    liveness = JobClient("tiny-slow", stubbed_sagemaker).liveness(600)

    assert liveness.verdict is Verdict.SLOW
    assert liveness.summary().endswith("GPUs busy on algo-1; GPUs idle on algo-2")
    assert liveness.reason().startswith("Slow, not hung:")


def test_a_gpu_just_under_the_threshold_is_idle_and_one_at_it_is_busy(stubbed_sagemaker):
    silent_logs("tiny-edge")
    seed_host_metrics("tiny-edge", {"algo-1": {**IDLE, "GPUUtilization": GPU_BUSY_PERCENT - 1},
                                    "algo-2": {**IDLE, "GPUUtilization": GPU_BUSY_PERCENT}})
    queue(stubbed_sagemaker, "tiny-edge", ("InProgress", "Training"))

    liveness = JobClient("tiny-edge", stubbed_sagemaker).liveness(600)

    assert [host.activity.busy for host in liveness.hosts] == [False, True]


def test_hosts_without_utilization_metrics_are_never_called_hung(stubbed_sagemaker):
    silent_logs("tiny-unknown")
    queue(stubbed_sagemaker, "tiny-unknown", ("InProgress", "Training"))

    liveness = JobClient("tiny-unknown", stubbed_sagemaker).liveness(600)

    assert liveness.verdict is Verdict.SLOW
    assert liveness.summary().endswith("utilization unknown on every host (algo-1, algo-2)")


def test_a_recent_metric_point_is_speech_even_when_the_logs_are_silent(stubbed_sagemaker):
    import boto3

    silent_logs("tiny-metric")
    seed_host_metrics("tiny-metric", {"algo-1": IDLE, "algo-2": IDLE})
    stamp = (dt.datetime.now(dt.timezone.utc) - dt.timedelta(minutes=2)).replace(microsecond=0)
    boto3.client("cloudwatch").put_metric_data(Namespace="/aws/sagemaker/TrainingJobs", MetricData=[{
        "MetricName": "train:loss", "Dimensions": [{"Name": "TrainingJobName", "Value": "tiny-metric"}],
        "Timestamp": stamp, "Value": 0.7}])
    stubbed_sagemaker.stubbers["sagemaker"].add_response("describe_training_job", training(
        "tiny-metric", AlgorithmSpecification={"TrainingInputMode": "File", "TrainingImage": "pytorch-training",
                                               "MetricDefinitions": [{"Name": "train:loss", "Regex": "loss=(.*)"}]}))

    liveness = JobClient("tiny-metric", stubbed_sagemaker).liveness(600)

    assert liveness.verdict is Verdict.MOVING
    # The point's minute holds the logged value; its end is the latest the job can have spoken.
    assert stamp < liveness.last_spoke <= stamp + dt.timedelta(minutes=1)


def test_watch_stops_a_hung_job_once_and_says_why(stubbed_sagemaker):
    silent_logs("tiny-stop")
    seed_host_metrics("tiny-stop", {"algo-1": IDLE, "algo-2": IDLE})
    queue(stubbed_sagemaker, "tiny-stop", ("InProgress", "Training"), ("InProgress", "Training"))
    stubbed_sagemaker.stubbers["sagemaker"].add_response("stop_training_job", {}, {"TrainingJobName": "tiny-stop"})
    clock, verdicts = FakeClock(), []

    outcome = _job("tiny-stop", stubbed_sagemaker).follow(
        WatchOptions(stall_timeout=600, clock=clock, sleep=clock.sleep), on_verdict=verdicts.append)

    assert outcome.stop_requested and outcome.hang is not None and outcome.hang.verdict is Verdict.HUNG
    assert [item.verdict for item in verdicts] == [Verdict.HUNG]
    assert outcome.to_dict()["reason"].startswith("Hung: no host wrote a line")
    assert clock.slept == []  # judged at the first look: nothing waited


def test_watch_reports_a_slow_job_and_follows_it_to_its_end_without_stopping_it(stubbed_sagemaker):
    silent_logs("tiny-busy")
    seed_host_metrics("tiny-busy", {"algo-1": BUSY, "algo-2": BUSY})
    queue(stubbed_sagemaker, "tiny-busy", ("InProgress", "Training"), ("InProgress", "Training"),
          ("Completed", "Completed"))
    clock, verdicts = FakeClock(), []

    outcome = _job("tiny-busy", stubbed_sagemaker).follow(
        WatchOptions(stall_timeout=600, poll_seconds=60, clock=clock, sleep=clock.sleep),
                    on_verdict=verdicts.append)

    assert outcome.status.status == "Completed" and outcome.hang is None and not outcome.stop_requested
    assert [item.verdict for item in verdicts] == [Verdict.SLOW]  # reported once, not at every look
    assert clock.slept == [60, 60]


def test_watch_without_stop_reports_the_hang_and_leaves_the_job_running(stubbed_sagemaker):
    silent_logs("tiny-keep")
    seed_host_metrics("tiny-keep", {"algo-1": IDLE, "algo-2": IDLE})
    queue(stubbed_sagemaker, "tiny-keep", ("InProgress", "Training"))

    outcome = _job("tiny-keep", stubbed_sagemaker).follow(
        WatchOptions(stall_timeout=600, stop=False))

    assert outcome.hang is not None and outcome.hang.verdict is Verdict.HUNG and not outcome.stop_requested
    assert outcome.status.status == "InProgress"  # the Stubber would fail on any StopTrainingJob


def test_the_stall_clock_runs_on_the_injected_clock_and_stops_at_the_timeout(stubbed_sagemaker):
    clock, verdicts = FakeClock(), []
    last_line = -150_000  # 150 s before the clock starts
    seed_logs("tiny-clock", {"algo-1": [(last_line, "step=5/100")], "algo-2": [(last_line, "step=5/100")]},
              base=int(clock.now.timestamp()))
    seed_host_metrics("tiny-clock", {"algo-1": IDLE, "algo-2": IDLE})
    # Polls every 15 s, liveness every 60 s: silent 150, 210, 270, 330 s; the 300 s timeout passes at the 4th look.
    queue(stubbed_sagemaker, "tiny-clock", *[("InProgress", "Training")] * 14)
    stubbed_sagemaker.stubbers["sagemaker"].add_response("stop_training_job", {}, {"TrainingJobName": "tiny-clock"})

    outcome = _job("tiny-clock", stubbed_sagemaker).follow(
        WatchOptions(stall_timeout=300, clock=clock, sleep=clock.sleep), on_verdict=verdicts.append)

    assert outcome.stop_requested and [item.verdict for item in verdicts] == [Verdict.HUNG]
    assert clock.slept == [15.0] * 12  # 13 polls: the liveness looks at 0, 60, 120 and 180 s


def test_watching_costs_one_metric_call_and_a_log_read_per_host_a_minute(stubbed_sagemaker):
    """What docs/following-jobs.md says watching costs: each liveness look (once a minute) sends one
    DescribeLogStreams, one GetLogEvents per host and one GetMetricData for every host's series."""
    seed_logs("tiny-cost", {"algo-1": [(0, "step=1/100")], "algo-2": [(0, "step=1/100")]})
    seed_host_metrics("tiny-cost", {"algo-1": BUSY, "algo-2": BUSY})
    queue(stubbed_sagemaker, "tiny-cost", *[("InProgress", "Training")] * 20, ("Completed", "Completed"))
    clock = FakeClock()

    outcome = _job("tiny-cost", stubbed_sagemaker).follow(
        WatchOptions(stall_timeout=1800, clock=clock, sleep=clock.sleep))

    assert outcome.status.status == "Completed"
    minutes = sum(clock.slept) / 60  # 20 polls of 15 s: 5 minutes watched
    assert minutes == 5
    assert Counter(stubbed_sagemaker.sent) == {
        "cloudwatch-logs.DescribeLogStreams": 5, "cloudwatch-logs.GetLogEvents": 2 * 5, "cloudwatch.GetMetricData": 5}


@pytest.mark.parametrize("secondary", ["Downloading", "Uploading"])
def test_a_job_that_is_not_training_is_never_judged(stubbed_sagemaker, secondary):
    queue(stubbed_sagemaker, "tiny-phase", ("InProgress", secondary), ("Completed", "Completed"))
    clock = FakeClock()

    outcome = _job("tiny-phase", stubbed_sagemaker).follow(
        WatchOptions(stall_timeout=1, clock=clock, sleep=clock.sleep))

    assert outcome.hang is None and stubbed_sagemaker.sent == []


def test_utilization_that_cannot_be_read_is_unknown_so_the_job_is_slow_not_hung(aws):
    """moto cannot refuse GetMetricData for a missing permission: a Stubber on the CloudWatch client does."""
    import boto3
    from botocore.stub import Stubber

    from orchestrator.cloud.job_liveness import Clients, read_liveness

    silent_logs("tiny-denied")
    cloudwatch = boto3.client("cloudwatch")
    with Stubber(cloudwatch) as stubber:
        stubber.add_client_error("get_metric_data", "AccessDenied", "not authorized to perform GetMetricData")
        liveness = read_liveness(training("tiny-denied"), Clients(boto3.client("logs"), cloudwatch),
                                 dt.datetime.now(dt.timezone.utc), 600)

    assert liveness.verdict is Verdict.SLOW
    assert liveness.hosts[0].activity.detail.startswith("utilization unreadable (counted as busy): reading the "
                                                        "utilization metrics of tiny-denied from CloudWatch")
    assert "AccessDenied" in liveness.hosts[0].activity.detail


def test_a_secret_in_a_hosts_last_lines_is_masked_in_the_reason_and_the_json(stubbed_sagemaker):
    from job_fakes import SECRET

    seed_logs("tiny-secret", {"algo-1": [(-20 * MINUTE, f"connecting with token {SECRET}")]})
    seed_host_metrics("tiny-secret", {"algo-1": IDLE, "algo-2": IDLE})
    stubbed_sagemaker.stubbers["sagemaker"].add_response(
        "describe_training_job", training("tiny-secret", Environment={"WANDB_API_KEY": SECRET}))

    liveness = JobClient("tiny-secret", stubbed_sagemaker).liveness(600)

    assert liveness.hosts[0].last_lines == ("connecting with token ****",)
    assert SECRET not in liveness.last_lines_text() + str(liveness.to_dict())
