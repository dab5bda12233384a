"""`smtrain tune submit | status | list | stop` and the `Tuning` handle against the local AWS emulator.

moto's server implements CreateHyperParameterTuningJob, DescribeHyperParameterTuningJob and
ListHyperParameterTuningJobs (every tuning job Completed at once, with a made-up best job); it lacks
ListTrainingJobsForHyperParameterTuningJob and StopHyperParameterTuningJob. Those two, and a tuning job still
in progress, are answered by botocore's Stubber (the `stubbed` session): with moto lacking the API, that is the
only way to see smtrain's calls and its reading of the answers.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import timedelta
from pathlib import Path

import boto3
import pytest
from botocore.exceptions import ConnectionClosedError
from click.testing import CliRunner
from job_fakes import BUCKET, NOW, SECRET, shared_loader_session

import orchestrator
from orchestrator.api import plan_tuning, submit_tuning
from orchestrator.backends.tuning import SageMakerTuning, Tuning
from orchestrator.cli.main import main
from orchestrator.cloud.tuning import list_tunings
from orchestrator.observing.trials import TuningNotFound

SEARCH = """\
job: job.yaml
name: tiny-search
objective: {metric: "train:loss", type: Minimize}
strategy: Random
parameters:
  lr: {type: continuous, min: 0.001, max: 0.1, scaling: Logarithmic}
  optimizer: {type: categorical, values: [sgd, adam]}
max_jobs: 6
max_parallel_jobs: 2
"""


@pytest.fixture
def search_file(write_spec, tmp_path: Path) -> Path:
    """The job-lifecycle tests' job spec (a channel, a secret environment value) without a static lr, tuned."""
    job = write_spec()
    job.rename(tmp_path / "job.yaml")
    path = tmp_path / "search.yaml"
    path.write_text(SEARCH)
    return path


def _tuning_jobs() -> list[str]:
    listed = boto3.client("sagemaker").list_hyper_parameter_tuning_jobs()["HyperParameterTuningJobSummaries"]
    return [item["HyperParameterTuningJobName"] for item in listed]


def test_submit_uploads_the_source_once_and_creates_the_planned_tuning_job(search_file, bucket, calls):
    session, sent = calls
    tuning_plan = plan_tuning(search_file, boto=session, job_name="tiny-search-1")
    captured: dict = {}
    session.events.register("before-parameter-build.sagemaker.CreateHyperParameterTuningJob",
                            lambda params, **_: captured.update(params))

    tuning = submit_tuning(tuning_plan, boto=session)

    assert sent == ["s3.HeadBucket", "s3.HeadObject", "s3.PutObject", "sagemaker.CreateHyperParameterTuningJob"]
    assert captured == tuning_plan.request
    assert tuning.name == "tiny-search-1" and _tuning_jobs() == ["tiny-search-1"]
    echo = boto3.client("sagemaker").describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=tuning.name)
    definition = tuning_plan.request["TrainingJobDefinition"]
    assert echo["TrainingJobDefinition"]["InputDataConfig"] == definition["InputDataConfig"]
    assert echo["TrainingJobDefinition"]["Environment"] == definition["Environment"]
    assert echo["HyperParameterTuningJobConfig"] == tuning_plan.request["HyperParameterTuningJobConfig"]
    key = tuning_plan.job.source_uri.removeprefix(f"s3://{BUCKET}/")
    assert boto3.client("s3").get_object(Bucket=BUCKET, Key=key)["Body"].read() == tuning_plan.job.source.tarball.read_bytes()


def test_submit_adopts_the_tuning_job_when_the_create_response_is_lost(search_file, bucket, calls):
    session, sent = calls
    failures: list[Exception] = []

    def lose_response(**_):
        if not failures:  # the server has created it; the caller never hears so
            failures.append(ConnectionClosedError(endpoint_url="http://sagemaker"))
            raise failures[0]

    session.events.register("after-call.sagemaker.CreateHyperParameterTuningJob", lose_response)
    tuning = submit_tuning(plan_tuning(search_file, boto=session, job_name="tiny-search-2"), boto=session)

    assert failures
    assert sent.count("sagemaker.CreateHyperParameterTuningJob") == 1
    assert sent[-1] == "sagemaker.DescribeHyperParameterTuningJob"
    assert _tuning_jobs() == [tuning.name]


def test_a_second_submit_under_the_same_name_is_a_clash_not_a_second_search(search_file, bucket, calls):
    session, _ = calls
    submit_tuning(plan_tuning(search_file, boto=session, job_name="tiny-search-3"), boto=session)

    result = CliRunner().invoke(main, ["tune", "submit", str(search_file), "--name", "tiny-search-3"], obj=session)

    assert result.exit_code == 1
    assert "a tuning job named tiny-search-3 already exists" in result.output
    assert "leave out --job-name for a timestamped one" in result.output  # the name --help gives the option
    with pytest.raises(orchestrator.AwsError, match="leave out job_name= for a timestamped one"):  # in the API's words
        submit_tuning(search_file, boto=session, job_name="tiny-search-3")
    assert _tuning_jobs() == ["tiny-search-3"]


def test_submit_and_list_from_the_command_line_never_show_a_secret(search_file, bucket, calls):
    session, _ = calls
    submitted = CliRunner().invoke(main, ["tune", "submit", str(search_file), "--name", "tiny-search-4"], obj=session)
    planned = CliRunner().invoke(main, ["tune", "plan", str(search_file)], obj=session)
    listed = CliRunner().invoke(main, ["tune", "list", "--name-contains", "tiny"], obj=session)

    assert submitted.exit_code == 0, submitted.output
    assert "submitted tuning job tiny-search-4: 6 trials, 2 at a time (Random)" in submitted.output
    assert listed.exit_code == 0 and "tiny-search-4" in listed.output and "Random" in listed.output
    assert planned.exit_code == 0 and SECRET not in planned.output and SECRET not in submitted.output
    assert [row.name for row in list_tunings(boto=session, status="Completed")] == ["tiny-search-4"]
    assert list_tunings(boto=session, name_contains="other") == []


def test_attach_to_an_unknown_tuning_job_is_exit_2(aws):
    with pytest.raises(TuningNotFound, match="no tuning job named nope"):
        Tuning.attach("nope", boto=shared_loader_session(region_name="us-east-1"))

    result = CliRunner().invoke(main, ["tune", "status", "nope"])
    assert result.exit_code == 2 and "smtrain tune list" in result.output


def _described(name: str, status: str, counters: dict, best: dict | None) -> dict:
    """A DescribeHyperParameterTuningJob response with every member botocore requires."""
    response = {
        "HyperParameterTuningJobName": name,
        "HyperParameterTuningJobArn": f"arn:aws:sagemaker:us-east-1:123456789012:hyper-parameter-tuning-job/{name}",
        "HyperParameterTuningJobConfig": {
            "Strategy": "Random",
            "HyperParameterTuningJobObjective": {"Type": "Minimize", "MetricName": "train:loss"},
            "ResourceLimits": {"MaxNumberOfTrainingJobs": 6, "MaxParallelTrainingJobs": 2},
            "ParameterRanges": {"ContinuousParameterRanges": [
                {"Name": "lr", "MinValue": "0.001", "MaxValue": "0.1", "ScalingType": "Logarithmic"}]},
        },
        "HyperParameterTuningJobStatus": status,
        "CreationTime": NOW,
        "TrainingJobStatusCounters": counters,
        "ObjectiveStatusCounters": {"Succeeded": counters.get("Completed", 0), "Pending": 0, "Failed": 0},
    }
    if best:
        response["BestTrainingJob"] = best
    return response


def _trial(name: str, status: str, lr: str, optimizer: str, loss: float | None) -> dict:
    summary = {"TrainingJobName": name, "TrainingJobArn": f"arn:aws:sagemaker:us-east-1:123456789012:training-job/{name}",
               "CreationTime": NOW, "TrainingStartTime": NOW, "TrainingEndTime": NOW + timedelta(seconds=90),
               "TrainingJobStatus": status, "TunedHyperParameters": {"lr": lr, "optimizer": optimizer}}
    if loss is not None:
        summary["FinalHyperParameterTuningJobObjectiveMetric"] = {"Type": "Minimize", "MetricName": "train:loss",
                                                                 "Value": loss}
    return summary


TRIALS = [_trial("ts-001-aaa", "Completed", "0.01", '"sgd"', 0.41), _trial("ts-002-bbb", "Completed", "0.05",
                                                                              '"adam"', 0.22),
          _trial("ts-003-ccc", "Stopped", "0.002", '"sgd"', 0.93), _trial("ts-004-ddd", "InProgress", "0.03",
                                                                         '"adam"', None)]


def test_status_shows_progress_best_and_every_trial_sorted_by_objective(stubbed, tmp_path):
    sagemaker = stubbed.stubbers["sagemaker"]
    counters = {"Completed": 2, "InProgress": 1, "Stopped": 1, "RetryableError": 0, "NonRetryableError": 0}
    sagemaker.add_response("describe_hyper_parameter_tuning_job",
                           _described("ts", "InProgress", counters, TRIALS[1]), {"HyperParameterTuningJobName": "ts"})
    sagemaker.add_response("list_training_jobs_for_hyper_parameter_tuning_job", {"TrainingJobSummaries": TRIALS},
                           {"HyperParameterTuningJobName": "ts", "SortBy": "CreationTime", "SortOrder": "Ascending"})

    result = CliRunner().invoke(main, ["tune", "status", "ts"], obj=stubbed)

    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "ts: InProgress (Random); trials: 2 completed, 1 in progress, 1 stopped, 0 failed of 6"
    assert lines[1].startswith("  best: ts-002-bbb  train:loss = 0.22  {'lr': 0.05, 'optimizer': 'adam'}")
    rows = [line.split()[1] for line in lines[3:]]
    assert rows == ["ts-002-bbb", "ts-001-aaa", "ts-003-ccc", "ts-004-ddd"]


def _completed_early(details: dict) -> dict:
    """A tuning job Completed at 7 of 20 trials whose spec stops it after 5 trials not improving or on
    convergence, with these completion details and 3725 s of runtime."""
    described = _described("ts", "Completed", {"Completed": 7}, TRIALS[1])
    described["HyperParameterTuningJobConfig"]["ResourceLimits"]["MaxNumberOfTrainingJobs"] = 20
    described["HyperParameterTuningJobConfig"]["TuningJobCompletionCriteria"] = {
        "BestObjectiveNotImproving": {"MaxNumberOfTrainingJobsNotImproving": 5},
        "ConvergenceDetected": {"CompleteOnConvergence": "Enabled"}}
    return {**described, "TuningJobCompletionDetails": details, "ConsumedResources": {"RuntimeInSeconds": 3725}}


@pytest.mark.parametrize(("details", "row", "converged"), [
    ({"NumberOfTrainingJobsObjectiveNotImproving": 5},
     "  completed early: the objective did not improve in 5 trials (completion.max_jobs_not_improving: 5)", None),
    ({"NumberOfTrainingJobsObjectiveNotImproving": 2, "ConvergenceDetectedTime": NOW},
     "  completed early: converged at 2026-01-01 00:00:00 UTC", NOW.isoformat()),
])
def test_status_says_why_a_tuning_job_completed_early_and_its_runtime(stubbed, details, row, converged):
    """Before, `tune status` left out TuningJobCompletionDetails and ConsumedResources: a tuning job that its
    completion criteria ended at 7 of 20 trials read only Completed. moto's server answers with fixed made-up
    details (123 trials not improving, converged 2024-01-01, 123 s) and lacks
    ListTrainingJobsForHyperParameterTuningJob, which `tune status` calls, so botocore's Stubber answers (and
    checks these members against botocore's model)."""
    sagemaker = stubbed.stubbers["sagemaker"]
    for _ in range(2):  # text, then JSON
        sagemaker.add_response("describe_hyper_parameter_tuning_job", _completed_early(details))
        sagemaker.add_response("list_training_jobs_for_hyper_parameter_tuning_job",
                               {"TrainingJobSummaries": TRIALS[:2]})

    text = CliRunner().invoke(main, ["tune", "status", "ts"], obj=stubbed)
    document = CliRunner().invoke(main, ["tune", "status", "ts", "-o", "json"], obj=stubbed)

    assert text.exit_code == 0, text.output
    lines = text.output.splitlines()
    assert lines[2:4] == [row, "  runtime: 1 h 02 min"]
    assert document.exit_code == 0, document.output
    printed = json.loads(document.stdout)
    assert printed["completion_reason"] == row.removeprefix("  completed early: ")
    assert (printed["trials_not_improving"], printed["converged"], printed["runtime_seconds"]) == (
        details["NumberOfTrainingJobsObjectiveNotImproving"], converged, 3725)


def test_status_of_a_running_tuning_job_counts_its_trials_not_improving(stubbed):
    """Under its limit of 5 the count is progress toward the criterion, not why the job ended (Stubber as above)."""
    sagemaker = stubbed.stubbers["sagemaker"]
    described = _completed_early({"NumberOfTrainingJobsObjectiveNotImproving": 2})
    sagemaker.add_response("describe_hyper_parameter_tuning_job",
                           {**described, "HyperParameterTuningJobStatus": "InProgress"})
    sagemaker.add_response("list_training_jobs_for_hyper_parameter_tuning_job", {"TrainingJobSummaries": TRIALS[:2]})

    result = CliRunner().invoke(main, ["tune", "status", "ts"], obj=stubbed)

    assert result.exit_code == 0, result.output
    assert "completed early" not in result.output
    assert result.output.splitlines()[2:4] == ["  not improving: 2 trials improved the objective by 1% or less",
                                               "  runtime: 1 h 02 min"]


def test_tuning_handle_gives_trials_best_trial_table_and_plot(stubbed, tmp_path):
    sagemaker = stubbed.stubbers["sagemaker"]
    counters = {"Completed": 2, "InProgress": 1, "Stopped": 1}
    sagemaker.add_response("describe_hyper_parameter_tuning_job", _described("ts", "InProgress", counters, TRIALS[1]))
    for _ in range(2):  # the results, then the plot's trials
        sagemaker.add_response("list_training_jobs_for_hyper_parameter_tuning_job", {"TrainingJobSummaries": TRIALS})
    sagemaker.add_response("describe_hyper_parameter_tuning_job", _described("ts", "InProgress", counters, TRIALS[1]))

    tuning = Tuning(SageMakerTuning(stubbed), "ts")
    status = tuning.status()
    best = tuning.best_trial()
    frame = tuning.results()
    figure = tuning.plot()

    assert status.counts == {"Completed": 2, "InProgress": 1, "Stopped": 1, "Failed": 0}
    assert best.name == "ts-002-bbb"
    assert list(frame["name"]) == ["ts-002-bbb", "ts-001-aaa", "ts-003-ccc", "ts-004-ddd"]
    assert list(frame["optimizer"])[:2] == ["adam", "sgd"]
    assert len(figure.axes) == 3  # objective over trials, against lr, against optimizer
    assert figure.axes[1].get_xscale() == "log"
    figure.savefig(tmp_path / "tuning.png")
    assert "best='ts-002-bbb'" in repr(tuning) and "train:loss=0.22" in repr(tuning)


def test_stop_requests_a_stop_of_a_running_search_only(stubbed):
    sagemaker = stubbed.stubbers["sagemaker"]
    sagemaker.add_response("describe_hyper_parameter_tuning_job", _described("ts", "InProgress", {}, None))
    sagemaker.add_response("stop_hyper_parameter_tuning_job", {}, {"HyperParameterTuningJobName": "ts"})
    sagemaker.add_response("describe_hyper_parameter_tuning_job", _described("ts", "Completed", {"Completed": 6}, None))

    assert Tuning(SageMakerTuning(stubbed), "ts").stop() is True
    result = CliRunner().invoke(main, ["tune", "stop", "ts"], obj=stubbed)
    assert result.exit_code == 0 and "ts is already Completed: nothing to stop" in result.output


def test_the_submitted_plan_is_kept_on_the_handle(search_file, bucket, calls):
    session, _ = calls
    tuning_plan = plan_tuning(search_file, boto=session, job_name="tiny-search-5")

    tuning = submit_tuning(tuning_plan, boto=session)

    assert dataclasses.asdict(tuning.plan.cost) == dataclasses.asdict(tuning_plan.cost)


def test_submit_tuning_returns_the_one_tuning_handle_whose_best_job_is_an_orchestrator_job(search_file, bucket,
                                                                                            calls):
    """moto completes a tuning job at once with a made-up best trial; `best_job` is that trial as the whole
    `orchestrator.Job` handle (the same class `run`, `submit` and `attach` return), read from SageMaker."""
    session, _ = calls
    tuning = submit_tuning(plan_tuning(search_file, boto=session, job_name="tiny-search-6"), boto=session)
    assert type(tuning) is orchestrator.Tuning and tuning.full_id == "sagemaker:tiny-search-6"
    best = tuning.best_trial()
    assert best is not None
    sagemaker = boto3.client("sagemaker")
    definition = tuning.plan.request["TrainingJobDefinition"]
    sagemaker.create_training_job(
        TrainingJobName=best.name, AlgorithmSpecification=definition["AlgorithmSpecification"],
        RoleArn=definition["RoleArn"], OutputDataConfig=definition["OutputDataConfig"],
        ResourceConfig=definition["ResourceConfig"], StoppingCondition=definition["StoppingCondition"])

    job = tuning.best_job()

    assert type(job) is orchestrator.Job
    assert job.full_id == f"sagemaker:{best.name}" and job.last_status.name == best.name
    again = Tuning.attach(f"sagemaker:{tuning.name}", boto=session)
    assert again.best_job().full_id == job.full_id


def test_a_bare_name_that_is_a_local_search_and_a_tuning_job_asks_which(search_file, bucket, calls, tmp_path,
                                                                        monkeypatch):
    """With --region SageMaker is asked too: a name both have is refused naming both ids (exit 2); the prefixed
    ids and --backend each pick one (moto completes a tuning job at once, so the SageMaker one has nothing to
    stop; moto lists no trials, so its status is not asked for)."""
    session, _ = calls
    submit_tuning(plan_tuning(search_file, boto=session, job_name="tiny-search-7"), boto=session)
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "runs" / "tiny-search-7"
    folder.mkdir(parents=True)
    (folder / "tuning.json").write_text(json.dumps({
        "tuning_job_name": "tiny-search-7", "status": "Completed", "strategy": "Grid", "parallel": 1,
        "objective": {"metric": "train:loss", "type": "Minimize"}, "trials": []}))

    both = CliRunner().invoke(main, ["tune", "status", "tiny-search-7", "--region", "us-east-1"], obj=session)
    local = CliRunner().invoke(main, ["tune", "status", "local:tiny-search-7", "--region", "us-east-1"], obj=session)
    remote = CliRunner().invoke(main, ["tune", "stop", "tiny-search-7", "--backend", "sagemaker"], obj=session)

    assert both.exit_code == 2 and "local:tiny-search-7 or sagemaker:tiny-search-7" in both.output
    assert local.exit_code == 0 and local.output.startswith("tiny-search-7: Completed (Grid)"), local.output
    assert remote.exit_code == 0 and "tiny-search-7 is already Completed" in remote.output, remote.output


@pytest.mark.hardening
def test_status_shows_a_failed_search_and_trial_without_the_terminal_controls_their_jobs_printed(stubbed):
    """A trial's FailureReason quotes its script's error: a title or clipboard escape in it, or a carriage return
    that would overwrite the row, never reaches the terminal (observing/plain_text.py)."""
    sagemaker = stubbed.stubbers["sagemaker"]
    counters = {"Completed": 0, "InProgress": 0, "Stopped": 0, "RetryableError": 0, "NonRetryableError": 1}
    failed = {**_trial("ts-001-aaa", "Failed", "0.01", '"sgd"', None),
              "FailureReason": "AlgorithmError: ValueError: bad\x1b]52;c;cm0=\x07 shape\x1b[1A\rCompleted"}
    for _ in ("text", "json"):
        sagemaker.add_response("describe_hyper_parameter_tuning_job", {
            **_described("ts", "Failed", counters, None), "FailureReason": "\x1b]0;pwned\x07No training job succeeded"},
            {"HyperParameterTuningJobName": "ts"})
        sagemaker.add_response("list_training_jobs_for_hyper_parameter_tuning_job", {"TrainingJobSummaries": [failed]},
                               {"HyperParameterTuningJobName": "ts", "SortBy": "CreationTime", "SortOrder": "Ascending"})

    result = CliRunner().invoke(main, ["tune", "status", "ts"], obj=stubbed, color=True)
    document = json.loads(CliRunner().invoke(main, ["tune", "status", "ts", "-o", "json"], obj=stubbed).stdout)

    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.output and "\x07" not in result.output and "\r" not in result.output, result.output
    assert "  failure: No training job succeeded" in result.output
    assert document["trial_list"][0]["failure_reason"] == "AlgorithmError: ValueError: bad shape\nCompleted"


HF_TOKEN_VALUE = "hf_" + "a1B2c3D4e5" * 4


@pytest.mark.hardening
def test_status_masks_the_failure_reasons_of_a_search_and_its_trials_as_a_jobs(stubbed):
    """A FailureReason quotes the job: the tuning job's and each trial's are masked as a training job's is, for
    the tuning job's own secret values (its training definition's, which `tune status` reads once) and every
    credential-looking value (a flag's, a token by its form), in text and JSON (Stubber as above)."""
    sagemaker = stubbed.stubbers["sagemaker"]
    counters = {"Completed": 0, "InProgress": 0, "Stopped": 0, "RetryableError": 0, "NonRetryableError": 1}
    definition = {"AlgorithmSpecification": {"TrainingInputMode": "File"}, "RoleArn": "arn:aws:iam::1:role/r",
                  "OutputDataConfig": {"S3OutputPath": "s3://b/outputs/"}, "StoppingCondition": {},
                  "StaticHyperParameters": {"wandb-key": SECRET}}
    failed = {**_trial("ts-001-aaa", "Failed", "0.01", '"sgd"', None),
              "FailureReason": f"AlgorithmError: ValueError: bad token {HF_TOKEN_VALUE} (key {SECRET})\n"
                               "Command \"train.py --api-key XYZ-1234\""}
    for _ in ("text", "json"):
        sagemaker.add_response("describe_hyper_parameter_tuning_job", {
            **_described("ts", "Failed", counters, None), "TrainingJobDefinition": definition,
            "FailureReason": f"No training job succeeded: last: train.py --api-key XYZ-1234 {SECRET}"})
        sagemaker.add_response("list_training_jobs_for_hyper_parameter_tuning_job", {"TrainingJobSummaries": [failed]})

    result = CliRunner().invoke(main, ["tune", "status", "ts"], obj=stubbed)
    document = json.loads(CliRunner().invoke(main, ["tune", "status", "ts", "-o", "json"], obj=stubbed).stdout)

    assert result.exit_code == 0, result.output
    for leaked in (SECRET, HF_TOKEN_VALUE, "XYZ-1234"):
        assert leaked not in result.output and leaked not in json.dumps(document), leaked
    assert "  failure: No training job succeeded: last: train.py --api-key **** ****" in result.output
    assert "  ts-001-aaa failed: AlgorithmError: ValueError: bad token **** (key ****)" in result.output
    assert document["trial_list"][0]["failure_reason"] == (
        "AlgorithmError: ValueError: bad token **** (key ****)\nCommand \"train.py --api-key ****\"")


def test_tune_submit_waits_for_the_tuning_job_as_submit_waits_for_a_job(search_file, bucket, calls, monkeypatch):
    """Before, `tune submit` had no --wait (`No such option`), so a CI step could not follow the tuning job it
    created to its end and exit by its status, as `submit --wait` does for a job; `--job-name` names it as it names
    a job. moto completes every tuning job at once and lacks ListTrainingJobsForHyperParameterTuningJob: its
    trials are read as none."""
    session, _ = calls
    monkeypatch.setattr(SageMakerTuning, "trials", lambda self, tuning_id: [])

    text = CliRunner().invoke(main, ["tune", "submit", str(search_file), "--job-name", "tiny-search-5", "--wait",
                                     "--poll-seconds", "0"], obj=session)
    document = CliRunner().invoke(main, ["tune", "submit", str(search_file), "--job-name", "tiny-search-6",
                                         "--poll-seconds", "0", "-o", "json"], obj=session)

    assert text.exit_code == 0, text.output
    assert "submitted tuning job tiny-search-5" in text.output
    lines = text.output.splitlines()
    assert lines[3].endswith("  Completed; trials: 1 completed, 0 in progress, 0 stopped, 0 failed of 6")
    assert lines[4] == "tiny-search-5: Completed (Random); trials: 1 completed, 0 in progress, 0 stopped, 0 failed of 6"
    assert document.exit_code == 0, document.output
    printed = json.loads(document.stdout)  # --poll-seconds asks to follow, as for submit; progress on stderr
    assert printed["tuning_job_name"] == "tiny-search-6" and printed["final_status"]["status"] == "Completed"
    assert printed["final_status"]["trial_list"] == []


def test_interrupting_tune_submit_wait_says_the_tuning_job_keeps_running(search_file, bucket, calls, monkeypatch):
    session, _ = calls

    def interrupted(self, tuning_id):
        raise KeyboardInterrupt

    monkeypatch.setattr(SageMakerTuning, "status", interrupted)

    result = CliRunner().invoke(main, ["tune", "submit", str(search_file), "--job-name", "tiny-search-7", "--wait"],
                                obj=session)

    assert result.exit_code == 130
    assert "tiny-search-7 keeps running (`smtrain tune status tiny-search-7`" in result.output
    assert _tuning_jobs() == ["tiny-search-7"]
