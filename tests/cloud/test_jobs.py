"""The SageMaker side of orchestrator.Job (cloud.jobs' client behind SageMakerBackend): list, status and logs against
moto's server; wait, follow and stop on a Stubber, since
moto creates every job Completed and lacks StopTrainingJob (HTTP 500, NotImplementedError)."""

from __future__ import annotations

from datetime import datetime, timezone

import boto3
import pytest
from job_fakes import BUCKET, EPOCH, NOW, SECRET, T0, create_jobs, described, seed_logs

import orchestrator
from orchestrator.backends.sagemaker import SageMakerBackend
from orchestrator.cloud.jobs import list_jobs
from orchestrator.observing.job_status import JobNotFound
from orchestrator.cloud.logs import LOG_GROUP


def _job(name: str, session) -> orchestrator.Job:
    return orchestrator.Job(SageMakerBackend(session), name)


@pytest.fixture
def three_jobs(tiny_plan, aws):
    """Three jobs on moto: tiny-a, tiny-b and other-c (all Completed, as moto makes them)."""
    names = ["tiny-a", "tiny-b", "other-c"]
    create_jobs(tiny_plan.create_training_job_request, names)
    return names


def test_list_jobs_filters_by_status_and_name_and_stops_at_max(three_jobs):
    assert {job.name for job in list_jobs()} == set(three_jobs)
    assert {job.name for job in list_jobs(name_contains="tiny")} == {"tiny-a", "tiny-b"}
    assert {job.name for job in list_jobs(status="Completed", name_contains="other")} == {"other-c"}
    assert list_jobs(status="Failed") == []
    assert len(list_jobs(max_results=2)) == 2
    row = list_jobs(name_contains="other")[0].to_dict()
    assert row["status"] == "Completed" and row["created"].startswith("20")


def test_status_reads_what_describe_training_job_says(three_jobs):
    current = orchestrator.attach("tiny-a").status()

    assert (current.status, current.secondary_status) == ("Completed", "Completed")
    assert (current.instance_type, current.instance_count) == ("ml.c5.2xlarge", 2)
    assert [item.status for item in current.transitions] == ["Starting"]
    assert current.model_artifact == f"s3://{BUCKET}/outputs/tiny-a/output/model.tar.gz"
    assert current.is_terminal and current.failure_reason is None
    assert current.console_url.endswith("#/jobs/tiny-a")


def test_attach_to_an_unknown_job_raises_job_not_found(aws):
    with pytest.raises(JobNotFound, match="no training job named nope in us-east-1") as raised:
        orchestrator.attach("nope")
    assert raised.value.exit_code == 2


def test_logs_merge_every_host_in_time_order_and_mask_secret_values(three_jobs):
    base = seed_logs(
        "tiny-a",
        {
            "algo-1": [(0, "a: start"), (20, f"a: token={SECRET}"), (40, "a: done")],
            "algo-2": [(10, "b: start"), (30, "b: done")],
        },
    )
    # A job whose name starts with the same letters must not leak into tiny-a's logs.
    seed_logs("tiny-ab", {"algo-1": [(5, "someone else")]})

    lines = list(orchestrator.attach("tiny-a").logs())

    assert [str(line) for line in lines] == [
        "[algo-1] a: start",
        "[algo-2] b: start",
        "[algo-1] a: token=****",
        "[algo-2] b: done",
        "[algo-1] a: done",
    ]
    started = datetime.fromtimestamp(base, tz=timezone.utc).isoformat()
    assert lines[0].to_dict() == {"host": "algo-1", "time": started, "message": "a: start"}


def test_logs_tail_longer_than_one_get_log_events_call_gives_every_line_asked_for(three_jobs):
    """GetLogEvents returns at most 10,000 events a call and refuses a larger limit (`smtrain logs --tail 20000`
    failed with InvalidParameterException): a longer tail pages back from the end."""
    base = seed_logs("tiny-a", {"algo-1": [(index, f"line {index}") for index in range(6000)]})
    boto3.client("logs").put_log_events(
        logGroupName=LOG_GROUP, logStreamName=f"tiny-a/algo-1-{EPOCH}",
        logEvents=[{"timestamp": base * 1000 + index, "message": f"line {index}"} for index in range(6000, 12000)])
    job = orchestrator.attach("tiny-a")

    asked = [line.message for line in job.logs(tail=10_001)]
    everything = [line.message for line in job.logs(tail=20_000)]

    assert asked == [f"line {index}" for index in range(1999, 12000)]
    assert everything == [f"line {index}" for index in range(12000)]


def test_logs_of_a_job_that_has_not_logged_yet_are_empty(three_jobs):
    assert list(orchestrator.attach("tiny-b").logs()) == []


def test_follow_reads_until_the_job_ends_and_then_the_last_lines(stubbed):
    name = "tiny-follow"
    sagemaker, logs = stubbed.stubbers["sagemaker"], stubbed.stubbers["logs"]
    stream = {"logStreamName": f"{name}/algo-1-{EPOCH}"}
    sagemaker.add_response("describe_training_job", described(name, "InProgress", "Training"))  # secrets
    sagemaker.add_response("describe_training_job", described(name, "InProgress", "Training"))
    logs.add_response("describe_log_streams", {"logStreams": [stream]})
    logs.add_response(
        "get_log_events",
        {
            "events": [{"timestamp": T0, "message": "epoch 1"}],
            "nextForwardToken": "f/1",
            "nextBackwardToken": "b/0",
        },
    )
    logs.add_response(
        "get_log_events",
        {"events": [], "nextForwardToken": "f/1", "nextBackwardToken": "b/1"},
        {
            "logGroupName": LOG_GROUP,
            "logStreamName": stream["logStreamName"],
            "startFromHead": True,
            "nextToken": "f/1",
        },
    )
    sagemaker.add_response("describe_training_job", described(name, "Completed", "Completed"))
    logs.add_response("describe_log_streams", {"logStreams": [stream]})
    logs.add_response(
        "get_log_events",
        {
            "events": [{"timestamp": T0 + 1, "message": "saved model"}],
            "nextForwardToken": "f/2",
            "nextBackwardToken": "b/1",
        },
    )
    logs.add_response("get_log_events", {"events": [], "nextForwardToken": "f/2", "nextBackwardToken": "b/2"})

    lines = [str(line) for line in _job(name, stubbed).logs(follow=True, poll_seconds=0)]

    assert lines == ["[algo-1] epoch 1", "[algo-1] saved model"]


def _put(job_name: str, host: str, base: int, events: list[tuple[int, str]]) -> None:
    boto3.client("logs").put_log_events(
        logGroupName=LOG_GROUP, logStreamName=f"{job_name}/{host}-{EPOCH}",
        logEvents=[{"timestamp": base * 1000 + offset, "message": text} for offset, text in events])


def test_follow_with_tail_reads_each_stream_from_its_end_and_goes_on_from_there(stubbed_sagemaker):
    """`logs --follow --tail 5` paged every stream forward from its start before the first line (a multi-GB
    log: thousands of GetLogEvents at 10,000 events each, throttled): each stream's last lines are read from
    its end, and following goes on after them, no line skipped or shown twice, hosts merged in time order."""
    name = "tiny-long"
    for status, secondary in [("InProgress", "Training")] * 2 + [("Completed", "Completed")]:
        stubbed_sagemaker.stubbers["sagemaker"].add_response(
            "describe_training_job",
            described(name, status, secondary, Environment={"WANDB_API_KEY": SECRET}))
    base = seed_logs(name, {"algo-1": [(index, f"line {index}") for index in range(10_000)],
                            "algo-2": [(29_997, f"b: token={SECRET}")]})
    for start in (10_000, 20_000):  # PutLogEvents takes at most 10,000 events a call
        _put(name, "algo-1", base, [(index, f"line {index}") for index in range(start, start + 10_000)])
    calls = []
    stubbed_sagemaker.events.register("before-parameter-build.cloudwatch-logs.GetLogEvents",
                                      lambda params, **_: calls.append(params))
    lines = (str(line) for line in _job(name, stubbed_sagemaker).logs(follow=True, tail=5, poll_seconds=0))

    first = [next(lines)]
    calls_before_first = len(calls)
    first += [next(lines) for _ in range(5)]
    _put(name, "algo-1", base, [(30_000, "line 30000"), (30_002, "line 30002")])
    _put(name, "algo-2", base, [(30_001, "b: later")])
    rest = list(lines)

    assert calls_before_first == 2  # one per stream, from its end: 6 when paged from the start
    assert [call["startFromHead"] for call in calls[:2]] == [False, False]
    assert first == ["[algo-1] line 29995", "[algo-1] line 29996", "[algo-1] line 29997",
                     "[algo-2] b: token=****", "[algo-1] line 29998", "[algo-1] line 29999"]
    assert rest == ["[algo-1] line 30000", "[algo-2] b: later", "[algo-1] line 30002"]


def test_wait_reports_each_status_change_once_and_returns_the_final_status(stubbed):
    name = "tiny-wait"
    sagemaker = stubbed.stubbers["sagemaker"]
    for status, secondary in [
        ("InProgress", "Starting"),
        ("InProgress", "Starting"),
        ("InProgress", "Training"),
    ]:
        sagemaker.add_response("describe_training_job", described(name, status, secondary))
    sagemaker.add_response(
        "describe_training_job",
        described(
            name,
            "Failed",
            "Failed",
            FailureReason=f"AlgorithmError: bad token {SECRET}",
            Environment={"WANDB_API_KEY": SECRET},
            BillableTimeInSeconds=42,
            TrainingEndTime=NOW,
        ),
    )
    seen = []

    final = _job(name, stubbed).wait(poll_seconds=0, on_status=seen.append)

    assert [(item.status, item.secondary_status) for item in seen] == [
        ("InProgress", "Starting"),
        ("InProgress", "Training"),
        ("Failed", "Failed"),
    ]
    assert final.status == "Failed" and final.billable_seconds == 42
    assert final.failure_reason == "AlgorithmError: bad token ****"


@pytest.mark.parametrize("status", ["Stopping", "Stopped", "Completed", "Failed"])
def test_stop_leaves_a_job_that_is_not_running_alone(stubbed, status):
    # moto has no StopTrainingJob: the Stubber would fail the test on any call not queued here.
    stubbed.stubbers["sagemaker"].add_response(
        "describe_training_job", described("tiny-done", status, status)
    )

    assert _job("tiny-done", stubbed).stop() is False


def test_stop_of_a_running_job_calls_stop_training_job(stubbed):
    sagemaker = stubbed.stubbers["sagemaker"]
    sagemaker.add_response("describe_training_job", described("tiny-run", "InProgress", "Training"))
    sagemaker.add_response("stop_training_job", {}, {"TrainingJobName": "tiny-run"})

    job = _job("tiny-run", stubbed)

    assert job.stop() is True
    assert job.last_status.status == "InProgress"


def test_stop_of_a_job_that_ended_meanwhile_is_not_an_error(stubbed):
    sagemaker = stubbed.stubbers["sagemaker"]
    sagemaker.add_response("describe_training_job", described("tiny-race", "InProgress", "Uploading"))
    sagemaker.add_client_error(
        "stop_training_job",
        "ValidationException",
        "The request was rejected because the training job is in status Completed.",
    )
    sagemaker.add_response("describe_training_job", described("tiny-race", "Completed", "Completed"))

    assert _job("tiny-race", stubbed).stop() is False


def test_job_repr_shows_what_is_known_without_a_call(stubbed):
    stubbed.stubbers["sagemaker"].add_response(
        "describe_training_job", described("tiny-r", "InProgress", "Training")
    )
    job = _job("tiny-r", stubbed)

    assert repr(job) == "Job('tiny-r', region='us-east-1', status='not read yet')"
    job.status()
    assert repr(job) == "Job('tiny-r', region='us-east-1', status='InProgress')"
    shown = job._repr_html_()
    assert "<b>Training job tiny-r</b>" in shown and ">InProgress</b> · Training" in shown
    assert 'href="https://us-east-1.console.aws.amazon.com/sagemaker/home?region=us-east-1#/jobs/tiny-r"' in shown
    assert "log-group/$252Faws$252Fsagemaker$252FTrainingJobs/log-events$3FlogStreamNameFilter$3Dtiny-r" in shown


def test_failure_cause_reads_no_logs_where_the_status_names_the_cause(stubbed_sagemaker):
    """A spot job Failed for want of capacity (hosts that never started) read every host's stream for a cause
    DescribeTrainingJob already gave, against docs/failures.md; a job failed by its script still reads them."""
    capacity = described("no-capacity", "Failed", "Failed", EnableManagedSpotTraining=True,
                         FailureReason="InsufficientCapacityError: Insufficient capacity for ml.c5.2xlarge spot")
    script = described("script-error", "Failed", "Failed", FailureReason="AlgorithmError: ExecuteUserScriptError")
    stubbed_sagemaker.stubbers["sagemaker"].add_response("describe_training_job", capacity)
    stubbed_sagemaker.stubbers["sagemaker"].add_response("describe_training_job", script)
    for name in ("no-capacity", "script-error"):
        seed_logs(name, {"algo-1": [(0, "Traceback (most recent call last):"), (1, "ValueError: bad")],
                         "algo-2": [(0, "waiting")]})
    stubbed_sagemaker.sent.clear()

    spot = _job("no-capacity", stubbed_sagemaker).failure_cause()
    read_none = list(stubbed_sagemaker.sent)
    _job("script-error", stubbed_sagemaker).failure_cause()

    assert spot.category == "spot_capacity" and "InsufficientCapacityError" in spot.exception
    assert read_none == []
    assert stubbed_sagemaker.sent == ["cloudwatch-logs.DescribeLogStreams"] + ["cloudwatch-logs.GetLogEvents"] * 2


def test_a_tail_pages_back_past_a_page_cut_short_at_one_megabyte():
    """GetLogEvents stops a page at 1 MB: long lines give fewer events than asked though more lie before them, and
    only a backward token that comes back unchanged marks the stream's start. Stubbed: moto does not cut pages."""
    from botocore.stub import Stubber

    from orchestrator.cloud.logs import _last_events

    client = boto3.client("logs", region_name="us-east-1")
    asked = {"logGroupName": LOG_GROUP, "logStreamName": "job/algo-1", "startFromHead": False}

    def page(first: int, last: int, backward: str) -> dict:
        long_line = "x" * 300_000  # three of them fill most of a page
        return {"events": [{"timestamp": index, "message": f"line {index} {long_line}", "ingestionTime": index}
                           for index in range(first, last)], "nextForwardToken": "f/end", "nextBackwardToken": backward}

    with Stubber(client) as stub:
        stub.add_response("get_log_events", page(7, 10, "b/7"), {**asked, "limit": 5})  # cut at 1 MB: 3 of 5
        stub.add_response("get_log_events", page(5, 7, "b/5"), {**asked, "limit": 2, "nextToken": "b/7"})
        events, forward = _last_events(client, "job/algo-1", 5)

    assert [event["message"].split()[1] for event in events] == [str(index) for index in range(5, 10)]
    assert forward == "f/end"
