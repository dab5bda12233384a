"""`smtrain watch`, `submit --wait --stall-timeout` and `status` of a silent SageMaker job, through CliRunner.

CloudWatch Logs and metrics are moto's server; SageMaker is a Stubber (moto creates every job Completed and has
no StopTrainingJob): a StopTrainingJob not queued here would fail the command, so "not stopped" is checked by
the Stubber. The hosts' last lines are 20 and 25 minutes old, the stall timeout 10 minutes: no test waits.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from job_fakes import seed_host_metrics, seed_logs, training

from orchestrator.cli.main import main

IDLE = {"GPUUtilization": 0.0, "GPUMemoryUtilization": 41.0, "CPUUtilization": 2.0}
BUSY = {"GPUUtilization": 97.0, "GPUMemoryUtilization": 80.0, "CPUUtilization": 110.0}
MINUTE = 60_000


def smtrain(session, *args: str):
    from click.testing import CliRunner

    return CliRunner().invoke(main, list(args), obj=session)


def silent_job(session, name: str, activity: dict[str, float], describes: int) -> None:
    seed_logs(name, {"algo-1": [(-20 * MINUTE, "step=11/100 loss=0.8")],
                     "algo-2": [(-25 * MINUTE, "[rank 1] entering all_reduce")]})
    seed_host_metrics(name, {"algo-1": activity, "algo-2": IDLE})
    for _ in range(describes):
        session.stubbers["sagemaker"].add_response("describe_training_job", training(name))


def test_watch_stops_a_hung_job_and_prints_why_with_each_hosts_last_lines(stubbed_sagemaker):
    silent_job(stubbed_sagemaker, "tiny-hung", IDLE, describes=3)
    stubbed_sagemaker.stubbers["sagemaker"].add_response("stop_training_job", {}, {"TrainingJobName": "tiny-hung"})

    result = smtrain(stubbed_sagemaker, "watch", "tiny-hung", "--stall-timeout", "600", "--poll-seconds", "0")

    assert result.exit_code == 4, result.output
    assert "hung: silent for 2" in result.stdout and "GPUs idle on every host (algo-1, algo-2)" in result.stdout
    assert "Hung: no host wrote a line or advanced a metric for 2" in result.stdout
    assert "algo-2 went silent first" in result.stdout
    assert "  last lines of algo-2:\n    [rank 1] entering all_reduce\n" in result.stdout
    assert "  last lines of algo-1:\n    step=11/100 loss=0.8\n" in result.stdout
    assert result.stdout.rstrip().endswith("stopped tiny-hung: StopTrainingJob requested (it goes Stopping, "
                                           "then Stopped)")


def test_watch_json_carries_the_verdict_the_reason_and_the_stop(stubbed_sagemaker):
    silent_job(stubbed_sagemaker, "tiny-json", IDLE, describes=3)
    stubbed_sagemaker.stubbers["sagemaker"].add_response("stop_training_job", {}, {"TrainingJobName": "tiny-json"})

    result = smtrain(stubbed_sagemaker, "watch", "tiny-json", "--stall-timeout", "600", "-o", "json")

    assert result.exit_code == 4, result.output
    document = json.loads(result.stdout)
    assert document["verdict"] == "hung" and document["stop_requested"] is True
    assert document["reason"].startswith("Hung: no host wrote a line or advanced a metric for 2")
    assert document["liveness"]["silent_first"] == ["algo-2", "algo-1"]
    assert [host["busy"] for host in document["liveness"]["hosts"]] == [False, False]
    assert document["liveness"]["hosts"][1]["last_lines"] == ["[rank 1] entering all_reduce"]
    assert "hung: silent for" in result.stderr  # progress on stderr, one document on stdout


def test_watch_no_stop_reports_the_hang_and_leaves_the_job_running(stubbed_sagemaker):
    silent_job(stubbed_sagemaker, "tiny-left", IDLE, describes=2)

    result = smtrain(stubbed_sagemaker, "watch", "tiny-left", "--stall-timeout", "600", "--no-stop", "-o", "json")

    assert result.exit_code == 4, result.output
    document = json.loads(result.stdout)
    assert document["verdict"] == "hung" and document["stop_requested"] is False
    assert document["final_status"]["status"] == "InProgress"


def test_watch_reports_a_silent_job_with_busy_gpus_as_slow_and_does_not_stop_it(stubbed_sagemaker):
    silent_job(stubbed_sagemaker, "tiny-busy", BUSY, describes=2)
    stubbed_sagemaker.stubbers["sagemaker"].add_response(
        "describe_training_job", training("tiny-busy", "Completed", "Completed"))

    result = smtrain(stubbed_sagemaker, "watch", "tiny-busy", "--stall-timeout", "600", "--poll-seconds", "0")

    assert result.exit_code == 0, result.output
    assert "slow: silent for 2" in result.stdout
    assert "GPUs busy on algo-1; GPUs idle on algo-2" in result.stdout
    assert "StopTrainingJob" not in result.stdout and "\ntiny-busy Completed\n" in result.stdout


def test_submit_wait_with_a_stall_timeout_stops_a_hung_job(write_spec, stubbed_sagemaker, bucket):
    name = "tiny-sub"
    sagemaker = stubbed_sagemaker.stubbers["sagemaker"]
    sagemaker.add_response("create_training_job",
                           {"TrainingJobArn": f"arn:aws:sagemaker:us-east-1:123456789012:training-job/{name}"})
    silent_job(stubbed_sagemaker, name, IDLE, describes=2)
    sagemaker.add_response("stop_training_job", {}, {"TrainingJobName": name})

    result = smtrain(stubbed_sagemaker, "submit", str(write_spec()), "--job-name", name, "--wait",
                     "--stall-timeout", "600", "--poll-seconds", "0", "-o", "json")

    assert result.exit_code == 4, result.output
    document = json.loads(result.stdout)
    assert document["job_name"] == name and document["verdict"] == "hung" and document["stop_requested"] is True
    assert "Hung: no host wrote a line" in document["reason"]


def test_submit_with_a_stall_timeout_and_no_wait_follows_the_job_rather_than_dropping_the_flag(
        write_spec, stubbed_sagemaker, bucket):
    """`submit job.yaml --stall-timeout 1800` without --wait once created the job and returned: the hang watch the
    user asked for never ran. A follow flag now implies --wait, as --logs does."""
    name = "tiny-nowait"
    sagemaker = stubbed_sagemaker.stubbers["sagemaker"]
    sagemaker.add_response("create_training_job",
                           {"TrainingJobArn": f"arn:aws:sagemaker:us-east-1:123456789012:training-job/{name}"})
    silent_job(stubbed_sagemaker, name, IDLE, describes=1)

    result = smtrain(stubbed_sagemaker, "submit", str(write_spec()), "--job-name", name,
                     "--stall-timeout", "600", "--no-stop", "--poll-seconds", "0", "-o", "json")

    assert result.exit_code == 4, result.output
    document = json.loads(result.stdout)
    assert document["verdict"] == "hung" and document["stop_requested"] is False


def test_status_of_a_silent_training_job_says_how_long_and_which_gpus_idle(stubbed_sagemaker):
    silent_job(stubbed_sagemaker, "tiny-st", BUSY, describes=2)

    text = smtrain(stubbed_sagemaker, "status", "tiny-st")
    judged = smtrain(stubbed_sagemaker, "status", "tiny-st", "--stall-timeout", "600", "-o", "json")

    assert text.exit_code == 0, text.output
    row = next(line for line in text.stdout.splitlines() if line.lstrip().startswith("liveness"))
    assert row.split(None, 1)[1].startswith("silent for 2")  # below the default 30 min stall timeout: no verdict
    assert row.endswith("GPUs busy on algo-1; GPUs idle on algo-2")
    liveness = json.loads(judged.stdout)["liveness"]
    assert liveness["verdict"] == "slow" and liveness["reason"].startswith("Slow, not hung")


def test_watch_refuses_bad_input_before_any_aws_call(stubbed_sagemaker):
    bad_name = smtrain(stubbed_sagemaker, "watch", "not a job name!")
    negative = smtrain(stubbed_sagemaker, "watch", "tiny-x", "--stall-timeout", "-5")

    assert bad_name.exit_code == 2 and "Traceback" not in bad_name.output
    assert "not a training job name SageMaker accepts" in bad_name.output
    assert negative.exit_code == 2 and "--stall-timeout" in negative.output
    assert stubbed_sagemaker.sent == []  # and the Stubber, with nothing queued, saw no call


def test_watch_of_a_job_that_already_ended_exits_with_its_status(stubbed_sagemaker):
    for _ in range(2):
        stubbed_sagemaker.stubbers["sagemaker"].add_response(
            "describe_training_job", training("tiny-done", "Failed", "Failed", FailureReason="AlgorithmError: boom"))

    result = smtrain(stubbed_sagemaker, "watch", "tiny-done", "-o", "json")

    assert result.exit_code == 1, result.output
    document = json.loads(result.stdout)
    assert document["verdict"] is None and document["final_status"]["failure_reason"] == "AlgorithmError: boom"


@pytest.mark.parametrize(("status", "said"), [("Completed", "Training job completed"),
                                              ("Stopped", "Training job stopped"), ("Failed", "Training job failed")])
def test_watch_of_a_finished_local_run_says_its_end_once(tmp_path, status, said):
    """`smtrain watch` of a finished local run printed `Completed: Completed` (`Stopped: Stopped`): the last
    transition's message was the status word again; it is SageMaker's words for the end now."""
    from datetime import datetime, timezone

    from orchestrator.contract import RUN_MARKER_FILE
    from orchestrator.emulator.supervising.status import StatusReport

    (tmp_path / "logs").mkdir()
    (tmp_path / RUN_MARKER_FILE).write_text("")
    report = StatusReport(tmp_path, {"TrainingJobName": "ended-1"}, datetime.now(timezone.utc))
    report.transition("Training")
    report.finish(status, status, None, None)

    result = CliRunner().invoke(main, ["watch", str(tmp_path)])

    assert f"  {status}: {said}\n" in result.stdout, result.stdout
    assert f"{status}: {status}" not in result.stdout
