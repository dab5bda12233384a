"""`smtrain status` of a managed spot job: the cost is the billable time SageMaker reports (the spot discount is
fewer billed seconds, at the on-demand rate) with the saving, an upper bound before SageMaker reports it, and the
interruptions in one line. DescribeTrainingJob comes from botocore's Stubber (moto creates every job Completed at
once, with no spot fields nor transitions); the logs are moto's server, empty here."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone

from click.testing import CliRunner
from job_fakes import described

import orchestrator
from orchestrator.cli.main import main
from orchestrator.specs.catalog import lookup

PRICE = lookup("ml.c5.2xlarge").price_per_hour
CHECKPOINTS = "s3://smtrain-test/checkpoints/spot/"


def spot_job(name: str, status: str, secondary: str, interruptions: int = 0, **extra) -> dict:
    """A 2-host spot job that started 50 minutes ago, interrupted `interruptions` times (each followed by a
    restart and a new Training phase)."""
    now = datetime.now(timezone.utc)
    started = now - timedelta(minutes=50)
    transitions = [{"Status": "Training", "StatusMessage": "Training image download completed.", "StartTime": started}]
    for number in range(interruptions):
        at = started + timedelta(minutes=10 * (number + 1))
        transitions[-1]["EndTime"] = at
        transitions += [
            {"Status": "Interrupted", "StatusMessage": "The job was interrupted by a spot interruption.",
             "StartTime": at, "EndTime": at + timedelta(minutes=2)},
            {"Status": "Restarting", "StatusMessage": "Restarting the training job after an interruption.",
             "StartTime": at + timedelta(minutes=2), "EndTime": at + timedelta(minutes=4)},
            {"Status": "Training", "StatusMessage": "Training in progress.", "StartTime": at + timedelta(minutes=4)},
        ]
    return described(name, status, secondary, EnableManagedSpotTraining=True, TrainingStartTime=started,
                     CheckpointConfig={"S3Uri": CHECKPOINTS},
                     StoppingCondition={"MaxRuntimeInSeconds": 3600, "MaxWaitTimeInSeconds": 7200},
                     SecondaryStatusTransitions=transitions, **extra)


def status_rows(session, job: dict, *options: str):
    session.stubbers["sagemaker"].add_response("describe_training_job", job)
    shown = CliRunner().invoke(main, ["status", job["TrainingJobName"], *options], obj=session)
    assert shown.exit_code == 0, shown.output
    return shown.stdout if options else dict(re.findall(r"^  (\S+) +(.*)$", shown.stdout, re.MULTILINE))


def test_a_completed_spot_job_costs_its_billable_time_and_says_the_saving(stubbed_sagemaker):
    """Before: `USD ... = 900 s x 2 x USD .../h (on-demand)`, which read as the on-demand bill, and no saving."""
    rows = status_rows(stubbed_sagemaker, spot_job(
        "spot-done", "Completed", "Completed", BillableTimeInSeconds=900, TrainingTimeInSeconds=3000,
        TrainingEndTime=datetime.now(timezone.utc)))

    assert rows["billable"] == "900 s per instance of 3000 s trained (managed spot: 70% saved)"
    assert rows["cost"] == (f"USD {900 * 2 * PRICE / 3600:,.2f} = 900 s x 2 x USD {PRICE}/h (managed spot: the "
                            "billable time SageMaker reports, at the on-demand rate, 70% saved)")


def test_a_running_spot_job_says_its_cost_is_an_upper_bound(stubbed_sagemaker):
    """Before: `about USD ... so far ... (on-demand)`, counting the interrupted minutes at the full price as if
    they were the bill."""
    rows = status_rows(stubbed_sagemaker, spot_job("spot-running", "InProgress", "Training", interruptions=2))

    assert rows["billable"].startswith("at most 300") and "interruptions included" in rows["billable"]
    assert re.fullmatch(r"at most USD [\d.]+ so far = 30\d\d s x 2 x USD [\d.]+/h \(managed spot: an upper bound "
                        r"at the on-demand price until SageMaker reports the billable time\)", rows["cost"]), rows
    assert rows["spot"] == f"interrupted 2 times, resumed from checkpoint ({CHECKPOINTS})"


def test_the_status_json_and_the_notebook_say_spot_and_the_bound(stubbed_sagemaker):
    job = spot_job("spot-json", "InProgress", "Training", interruptions=1)
    document = json.loads(status_rows(stubbed_sagemaker, job, "-o", "json"))
    cost = document["cost_so_far"]
    assert (cost["spot"], cost["upper_bound"], cost["spot_saving"]) == (True, True, None)
    assert document["settings"]["spot"] == f"interrupted 1 time, resumed from checkpoint ({CHECKPOINTS})"

    for _ in range(2):  # attach reads the job to find it, status() reads it again
        stubbed_sagemaker.stubbers["sagemaker"].add_response("describe_training_job", job)
    shown = repr(orchestrator.attach("sagemaker:spot-json", boto=stubbed_sagemaker).status())
    assert "cost so far at most USD" in shown


def test_a_spot_job_interrupted_without_checkpoints_says_each_restart_began_again(stubbed_sagemaker):
    job = spot_job("spot-bare", "InProgress", "Training", interruptions=1)
    del job["CheckpointConfig"]
    rows = status_rows(stubbed_sagemaker, job)
    assert rows["spot"] == ("interrupted 1 time, restarted without a checkpoint (no checkpoint.s3_uri): each restart "
                            "trained from the start")
