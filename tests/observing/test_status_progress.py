"""`smtrain status`: progress, rate, ETA and cost so far from a job's log lines and DescribeTrainingJob, and the
failing host's last lines. Logs are moto's server, seeded as SageMaker writes them; DescribeTrainingJob comes
from moto for a Completed job and from a Stubber for a running or failed one, which moto cannot play (every job
it creates is Completed at once, without BillableTimeInSeconds, and its MetricDefinitions are replaced:
sdk-facts.md §9)."""

from __future__ import annotations

import json
import re
import time
from datetime import datetime, timedelta, timezone

import boto3
import pytest
from click.testing import CliRunner
from job_fakes import create_jobs, described

from orchestrator.cli.main import main
from orchestrator import Job
from orchestrator.cloud.logs import LOG_GROUP
from orchestrator.contract import DEFAULT_METRIC_DEFINITIONS
from orchestrator.specs.catalog import lookup

PRICE = lookup("ml.c5.2xlarge").price_per_hour


def smtrain(*args: str, obj=None):
    return CliRunner().invoke(main, list(args), obj=obj)


def seed_streams(job_name: str, events_by_host: dict[str, list[tuple[float, str]]]) -> None:
    """Streams named as SageMaker names them; each event is (seconds before now, message)."""
    logs = boto3.client("logs")
    if not logs.describe_log_groups(logGroupNamePrefix=LOG_GROUP)["logGroups"]:
        logs.create_log_group(logGroupName=LOG_GROUP)
    now_ms = int(time.time() * 1000)
    for host, events in events_by_host.items():
        stream = f"{job_name}/{host}-{now_ms // 1000 - 600}"
        logs.create_log_stream(logGroupName=LOG_GROUP, logStreamName=stream)
        logs.put_log_events(logGroupName=LOG_GROUP, logStreamName=stream, logEvents=[
            {"timestamp": now_ms - int(ago * 1000), "message": text} for ago, text in events])


def progress(step: int, total: int, loss: float, epoch: int = 1) -> str:
    return f"epoch={epoch} step={step}/{total} train_loss={loss:.6f} samples_per_sec=512.0"


def running(name: str, **extra) -> dict:
    now = datetime.now(timezone.utc)
    return described(
        name, "InProgress", "Training",
        AlgorithmSpecification={"TrainingInputMode": "File", "TrainingImage": "pytorch-training:2.3.0-cpu-py311",
                                "MetricDefinitions": list(DEFAULT_METRIC_DEFINITIONS)},
        HyperParameters={"epochs": "2", "sagemaker_program": '"train.py"'},
        TrainingStartTime=now - timedelta(seconds=600),
        SecondaryStatusTransitions=[
            {"Status": "Starting", "StatusMessage": "Preparing the instances for training",
             "StartTime": now - timedelta(seconds=720), "EndTime": now - timedelta(seconds=660)},
            {"Status": "Downloading", "StatusMessage": "Downloading the training image",
             "StartTime": now - timedelta(seconds=660), "EndTime": now - timedelta(seconds=600)},
            {"Status": "Training", "StatusMessage": "Training image download completed. Training in progress.",
             "StartTime": now - timedelta(seconds=600)},
        ],
        **extra,
    )


def test_status_of_a_running_job_shows_progress_rate_eta_loss_and_cost_so_far(stubbed_sagemaker):
    stubbed_sagemaker.stubbers["sagemaker"].add_response("describe_training_job", running("tiny-run"))
    # 1 step/s over the last 30 s: 360 of 400 steps to go, about 6 minutes after the last line (10 s ago).
    seed_streams("tiny-run", {
        "algo-1": [(45, "smtrain: trainer gloo (requested)")]
                  + [(40 - 10 * index, progress(10 + 10 * index, 400, 0.9 - 0.1 * index)) for index in range(4)],
        "algo-2": [(44, "smtrain: warning (rank 1): nothing wrong")],
    })

    shown = smtrain("status", "tiny-run", obj=stubbed_sagemaker)

    assert shown.exit_code == 0, shown.output
    rows = dict(re.findall(r"^  (\S+) +(.*)$", shown.stdout, re.MULTILINE))
    assert shown.stdout.startswith("tiny-run: InProgress (Training)\n")
    assert rows["progress"].startswith("step 40/400 (10%), epoch 1 of 2 at 20")
    assert rows["rate"] == "1 steps/s"
    eta_seconds = 360 - 10
    minutes = re.fullmatch(r"(\d+) min (\d+) s, about .* UTC", rows["eta"])
    assert minutes and abs(int(minutes[1]) * 60 + int(minutes[2]) - eta_seconds) <= 5, rows["eta"]
    assert rows["train:loss"] == "0.6 (latest logged)"
    assert rows["billable"].startswith("about 60") and "since TrainingStartTime" in rows["billable"]
    cost = re.fullmatch(r"about USD (\d+\.\d\d) so far = (\d+) s x 2 x USD ([\d.]+)/h \(on-demand\)", rows["cost"])
    assert cost and float(cost[3]) == PRICE and 600 <= int(cost[2]) <= 610
    assert float(cost[1]) == round(int(cost[2]) * 2 * PRICE / 3600, 2)
    history = shown.stdout.split("  history\n", 1)[1].splitlines()
    assert history[0].endswith("Starting     Preparing the instances for training  (1 min 0 s)")
    assert history[2].split("  (for ")[1].startswith("10 min")


def test_status_json_of_a_running_job(stubbed_sagemaker):
    stubbed_sagemaker.stubbers["sagemaker"].add_response("describe_training_job", running("tiny-json"))
    seed_streams("tiny-json", {"algo-1": [(30, progress(10, 100, 0.5)), (10, progress(30, 100, 0.25))]})

    document = json.loads(smtrain("status", "tiny-json", "-o", "json", obj=stubbed_sagemaker).stdout)

    assert document["progress"]["step"] == 30 and document["progress"]["total_steps"] == 100
    assert document["progress"]["epochs"] == 2 and document["progress"]["percent"] == 30.0
    assert document["progress"]["steps_per_second"] == 1.0
    assert 50 <= document["progress"]["eta_seconds"] <= 60
    assert document["latest_metrics"]["train:loss"] == 0.25
    assert document["cost_so_far"]["estimated"] is True and document["cost_so_far"]["instance_count"] == 2
    assert document["failing_host"] is None


def test_status_of_a_failed_job_shows_the_host_that_failed_first_and_its_last_lines(stubbed_sagemaker):
    stubbed_sagemaker.stubbers["sagemaker"].add_response("describe_training_job", running(
        "tiny-fail", TrainingJobStatus="Failed", SecondaryStatus="Failed", BillableTimeInSeconds=420,
        FailureReason="AlgorithmError: ExecuteUserScriptError: ExitCode 1", TrainingEndTime=datetime.now(timezone.utc)))
    seed_streams("tiny-fail", {
        "algo-1": [(30, progress(10, 100, 0.5)), (12, "RuntimeError: Connection closed by peer [127.0.0.1]:1234")],
        "algo-2": [(25, "loading shard 3"), (20, "Traceback (most recent call last):"),
                   (19, '  File "train.py", line 9, in <module>'), (18, "ValueError: bad batch at step 12")],
    })

    shown = smtrain("status", "tiny-fail", obj=stubbed_sagemaker)

    assert shown.exit_code == 0, shown.output
    rows = dict(re.findall(r"^  (\S+) +(.*)$", shown.stdout, re.MULTILINE))
    assert rows["billable"] == "420 s per instance"
    assert rows["cost"] == f"USD {420 * 2 * PRICE / 3600:,.2f} = 420 s x 2 x USD {PRICE}/h (on-demand)"
    assert "eta" not in rows
    assert shown.stdout.split("  history\n", 1)[1].splitlines()[2].endswith("  (10 min 0 s)")  # until it ended
    tail = shown.stdout.split("  last lines of algo-2 (the host that failed first)\n", 1)[1]
    assert tail.splitlines() == ["    [algo-2] loading shard 3", "    [algo-2] Traceback (most recent call last):",
                                 '    [algo-2]   File "train.py", line 9, in <module>',
                                 "    [algo-2] ValueError: bad batch at step 12"]


def test_status_of_a_completed_job_on_moto_reads_progress_from_the_seeded_logs(aws, tiny_request):
    create_jobs(tiny_request, ["tiny-done"])
    seed_streams("tiny-done", {"algo-1": [(40, progress(30, 60, 0.4)), (20, progress(60, 60, 0.2))],
                               "algo-2": [(39, "host 2 says hello")]})

    shown = smtrain("status", "tiny-done")
    job = Job.attach("tiny-done")
    job.progress()

    assert shown.exit_code == 0, shown.output
    rows = dict(re.findall(r"^  (\S+) +(.*)$", shown.stdout, re.MULTILINE))
    assert rows["progress"].startswith("step 60/60 (100%), epoch 1 of 1 at ")
    assert rows["rate"] == "1.5 steps/s" and "eta" not in rows
    # moto: TrainingStartTime == TrainingEndTime and no BillableTimeInSeconds: 0 s, estimated.
    assert rows["cost"].startswith("about USD 0.00 = 0 s x 2")
    assert repr(job).startswith("Job('tiny-done', region='us-east-1', status='Completed', progress='step 60/60 (100%)")


def test_status_without_log_permission_still_shows_the_status(stubbed_sagemaker, monkeypatch):
    from orchestrator.cloud import jobs
    from orchestrator.errors import AwsError

    def denied(*args, **kwargs):
        raise AwsError("reading the logs of tiny-deny: GetLogEvents failed: AccessDeniedException: no")

    monkeypatch.setattr(jobs, "tail", denied)
    stubbed_sagemaker.stubbers["sagemaker"].add_response("describe_training_job", running("tiny-deny"))

    shown = smtrain("status", "tiny-deny", obj=stubbed_sagemaker)

    assert shown.exit_code == 0, shown.output
    assert "  progress   unknown: the logs could not be read (reading the logs of tiny-deny: GetLogEvents " in (
        shown.stdout)


# Recorded lines of scripts that number their epochs differently, each ending in its epoch 2 of 3 (or, 0-based
# and completed, its epoch 3 of 3): `status` shows the epoch in progress counted from 1 whatever the script counts
# from, and leaves alone what is already right.
EPOCH_NUMBERINGS = {
    # `for epoch in range(args.epochs)`: the run completed its third and last epoch.
    "0-based, completed": ("Completed", [f"epoch={epoch} step={10 * epoch + 10}/30 loss=0.{5 - epoch}"
                                         for epoch in range(3)], "step 30/30 (100%), epoch 3 of 3"),
    "0-based, running": ("InProgress", ["epoch=0 step=10/30 loss=0.5", "epoch=1 step=15/30 loss=0.4"],
                         "step 15/30 (50%), epoch 2 of 3"),
    "1-based": ("InProgress", ["epoch=1 step=10/30 loss=0.5", "epoch=2 step=15/30 loss=0.4"],
                "step 15/30 (50%), epoch 2 of 3"),
    "1-based, completed": ("Completed", [f"epoch={epoch} step={10 * epoch}/30 loss=0.{5 - epoch}"
                                         for epoch in range(1, 4)], "step 30/30 (100%), epoch 3 of 3"),
    # The total the line states wins over the hyperparameter (2 here, for every case).
    "Epoch k/N": ("InProgress", ["Epoch 1/3 step=10/30 loss=0.5", "Epoch 2/3 step=15/30 loss=0.4"],
                  "step 15/30 (50%), epoch 2 of 3"),
    # Lightning's `Epoch 0:` is its first epoch; its epoch-0 lines are out of the tail here.
    "Lightning's bar": ("InProgress", [
        "\rEpoch 1:  25%|\u2588\u2588\u258c       | 1/4 [00:01<00:03,  1.00it/s, v_num=0, train_loss_step=0.5]",
        "\rEpoch 1:  50%|\u2588\u2588\u2588\u2588\u2588     | 2/4 [00:02<00:02,  1.00it/s, v_num=0, train_loss_step=0.4]",
    ], "step 6, epoch 2 of 3"),
    # transformers' dicts give the epochs done (1.5: half of the second); its bar gives the step.
    "transformers": ("InProgress", [
        "\r 30%|\u2588\u2588\u2588       | 9/30 [00:01<00:02,  2.00it/s]\r{'loss': 0.5, 'learning_rate': 5e-05, "
        "'epoch': 0.9}",
        "\r 50%|\u2588\u2588\u2588\u2588\u2588     | 15/30 [00:02<00:02,  2.00it/s]\r{'loss': 0.4, "
        "'learning_rate': 4e-05, 'epoch': 1.5}",
    ], "step 15/30 (50%), epoch 2 of 3"),
}


@pytest.mark.parametrize("case", EPOCH_NUMBERINGS)
def test_status_shows_the_epoch_in_progress_counted_from_one_whatever_the_script_counts_from(
        stubbed_sagemaker, case):
    status, lines, shown_progress = EPOCH_NUMBERINGS[case]
    epochs = "2" if case == "Epoch k/N" else "3"
    name = f"tiny-epochs-{list(EPOCH_NUMBERINGS).index(case)}"
    document = running(name, TrainingJobStatus=status, SecondaryStatus="Completed" if status == "Completed"
                       else "Training")
    document["HyperParameters"]["epochs"] = epochs
    stubbed_sagemaker.stubbers["sagemaker"].add_response("describe_training_job", document)
    seed_streams(name, {"algo-1": [(30 - 10 * index, line) for index, line in enumerate(lines)]})

    shown = smtrain("status", name, obj=stubbed_sagemaker)

    assert shown.exit_code == 0, shown.output
    rows = dict(re.findall(r"^  (\S+) +(.*)$", shown.stdout, re.MULTILINE))
    assert rows["progress"].startswith(shown_progress), rows["progress"]
