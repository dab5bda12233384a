"""`smtrain status` of a job long in one phase: a long `Downloading` and a `Training` no host has logged from are
judged, with what usually helps. DescribeTrainingJob comes from botocore's Stubber (moto creates every job Completed
at once, with no secondary status); CloudWatch Logs is moto's server."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone

from click.testing import CliRunner
from job_fakes import BUCKET, described, seed_lines

from orchestrator.cli.main import main

ROLE = "arn:aws:iam::123456789012:role/SageMakerExecution"


def in_phase(name: str, phase: str, minutes: float, input_mode: str = "File") -> dict:
    """A 2-host job in `phase` for `minutes`, with one channel `train` in `input_mode`."""
    now = datetime.now(timezone.utc)
    began = now - timedelta(minutes=minutes)
    return described(
        name, "InProgress", phase, RoleArn=ROLE,
        InputDataConfig=[{"ChannelName": "train", "InputMode": input_mode, "DataSource": {"S3DataSource": {
            "S3DataType": "S3Prefix", "S3Uri": f"s3://{BUCKET}/data/train/"}}}],
        TrainingStartTime=began if phase == "Training" else None,
        SecondaryStatusTransitions=[
            {"Status": "Starting", "StatusMessage": "Preparing the instances for training",
             "StartTime": began - timedelta(minutes=2), "EndTime": began},
            {"Status": phase, "StatusMessage": f"{phase} in progress.", "StartTime": began},
        ])


def status(session, job: dict, *options: str):
    if job["TrainingStartTime"] is None:
        del job["TrainingStartTime"]
    session.stubbers["sagemaker"].add_response("describe_training_job", job)
    shown = CliRunner().invoke(main, ["status", job["TrainingJobName"], *options], obj=session)
    assert shown.exit_code == 0, shown.output
    return json.loads(shown.stdout) if options else dict(re.findall(r"^  (\S+) +(.*)$", shown.stdout, re.MULTILINE))


def test_a_long_download_of_a_file_mode_channel_is_judged_with_what_helps(stubbed_sagemaker):
    """Before: the history said `Downloading ... (for 45 min 0 s so far)` and nothing of whether that is normal."""
    rows = status(stubbed_sagemaker, in_phase("slow-download", "Downloading", 45))

    assert rows["judgement"].startswith("Downloading for 45 min")
    assert "File mode copies channel train whole to every instance" in rows["judgement"]
    assert rows["fix"].startswith("`input_mode: FastFile` on the channel")
    assert "fewer, larger files" in rows["fix"]
    assert f"aws s3 ls --recursive --summarize s3://{BUCKET}/data/train/" in rows["fix"]


def test_a_short_download_or_a_streamed_channel_is_not_judged(stubbed_sagemaker):
    assert "judgement" not in status(stubbed_sagemaker, in_phase("quick-download", "Downloading", 5))
    assert "judgement" not in status(stubbed_sagemaker, in_phase("fastfile", "Downloading", 45, "FastFile"))


def test_training_without_a_log_line_from_any_host_points_at_the_roles_log_permissions(stubbed_sagemaker):
    """Before: `progress  no log lines yet` however long the job had trained, which reads as a slow start. The
    actions named are those `smtrain check` simulates (before, CreateLogGroup was left out, so a role allowed what
    the advice named could still write no log)."""
    document = status(stubbed_sagemaker, in_phase("no-streams", "Training", 15), "-o", "json")

    advice = document["phase_advice"]
    assert advice["judgement"].startswith("Training for 15 min")
    assert ("no host has written a log line: this usually means the execution role cannot write CloudWatch Logs "
            "(logs:CreateLogGroup, logs:CreateLogStream and logs:PutLogEvents)") in advice["judgement"]
    assert "allow the role logs:CreateLogGroup, logs:CreateLogStream and logs:PutLogEvents on" in advice["fix"]
    assert (f"--policy-source-arn {ROLE} --action-names logs:CreateLogGroup logs:CreateLogStream logs:PutLogEvents`"
            in advice["fix"])
    assert "`smtrain infra" in advice["fix"] and "`smtrain check SPEC`" in advice["fix"]


def test_training_that_has_logged_or_only_just_began_is_not_judged(stubbed_sagemaker):
    seed_lines("logged", {"algo-1": ["epoch=1 step=1/10 loss=0.5"]})
    assert status(stubbed_sagemaker, in_phase("logged", "Training", 15), "-o", "json")["phase_advice"] is None
    assert "judgement" not in status(stubbed_sagemaker, in_phase("just-began", "Training", 2))



def test_a_notebooks_job_summary_shows_the_judgement_and_fix_status_shows(stubbed_sagemaker):
    """`smtrain status` and the notebook's summary of the same job say the same: before, the summary (its HTML and
    its text) showed `InProgress / Training` and no judgement, however long no host had logged."""
    from orchestrator.backends.job import Job
    from orchestrator.backends.sagemaker import SageMakerBackend

    job = in_phase("silent", "Training", 15)
    del job["TrainingStartTime"]
    stubbed_sagemaker.stubbers["sagemaker"].add_response("describe_training_job", job)
    shown = Job(SageMakerBackend(boto=stubbed_sagemaker), "silent")
    shown.status()
    shown.progress()  # CloudWatch on moto's server: no stream, no line

    rows = dict(re.findall(r"^  (judgement|fix): (.*)$", shown.summary().to_text(), re.MULTILINE))
    assert rows["judgement"].startswith("Training for 15 min") and "cannot write CloudWatch Logs" in rows["judgement"]
    assert f"--policy-source-arn {ROLE} --action-names logs:CreateLogGroup logs:CreateLogStream" in rows["fix"]
    page = shown.summary().to_html()
    assert "<i>judgement</i>" in page and "<i>fix</i>" in page and "cannot write CloudWatch Logs" in page
