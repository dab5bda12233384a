"""A failed job read by a user whose credentials may not read CloudWatch Logs (no `logs:DescribeLogStreams`, as
many platform teams hand out SageMaker access): the FailureReason still names the cause, in `smtrain status`, its
JSON and the notebook's `Job.failure_cause()`.

Both calls answer from botocore's Stubber: moto creates every job Completed at once (a Failed description cannot
come from it), and its server, as the suite runs it, grants every action (an AccessDenied cannot come from it)."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner
from job_fakes import NOW, described
from recorded_sagemaker_logs import failure_reason

import orchestrator
from orchestrator.cli.main import main
from orchestrator.errors import AwsError

DENIED = ("User: arn:aws:iam::123456789012:user/analyst is not authorized to perform: logs:DescribeLogStreams on "
          "resource: arn:aws:logs:us-east-1:123456789012:log-group:/aws/sagemaker/TrainingJobs:log-stream: because "
          "no identity-based policy allows the logs:DescribeLogStreams action")
KILLED = failure_reason(137)
"""The toolkit's report of a script the OOM killer ended, as SageMaker keeps it."""
IMPORT = failure_reason(1).replace('ErrorMessage ""', "ErrorMessage \"Traceback (most recent call last)\n File "
                                   "\"/opt/ml/code/train.py\", line 3, in <module>\n import wandb\n "
                                   "ModuleNotFoundError: No module named 'wandb'\n\"")


def _failed_and_denied(stubbed, name: str, reason: str, log_reads: int = 1) -> None:
    """`log_reads`: how often the logs are asked for; `orchestrator.attach` reads a failed job's cause once, as
    `smtrain status` shows it, and the notebook's next call reads it again."""
    stubbed.stubbers["sagemaker"].add_response("describe_training_job", described(
        name, "Failed", "Failed", FailureReason=reason, TrainingStartTime=NOW, TrainingEndTime=NOW))
    for _ in range(log_reads):
        stubbed.stubbers["logs"].add_client_error("describe_log_streams", "AccessDeniedException", DENIED)


@pytest.mark.parametrize(("reason", "headline", "fix"), [
    (KILLED, "the job was killed by signal 9 (SIGKILL)", "OOM killer"),
    (IMPORT, "the job failed: ModuleNotFoundError: No module named 'wandb'", "requirements.txt"),
])
def test_status_without_log_permissions_names_the_cause_the_failure_reason_gives(stubbed, reason, headline, fix):
    """Before: `progress unknown: the logs could not be read` and no cause nor fix, although the FailureReason
    says the script was OOM-killed or could not import a package."""
    _failed_and_denied(stubbed, "denied-text", reason)

    shown = CliRunner().invoke(main, ["status", "denied-text"], obj=stubbed)

    assert shown.exit_code == 0, shown.output
    rows = dict(re.findall(r"^  (\S+) +(.*)$", shown.stdout, re.MULTILINE))
    assert rows["progress"] == ("unknown: the logs could not be read (your credentials were refused "
                                "logs:DescribeLogStreams)")
    assert rows["cause"] == headline and fix in rows["fix"]


def test_status_without_log_permissions_says_it_in_a_row_and_names_the_permission_in_a_fix(stubbed):
    """Before: the progress row held AWS's whole AccessDenied message (about 300 characters: the user's ARN, the
    resource, the policy wording) and no fix row said what to allow."""
    _failed_and_denied(stubbed, "denied-row", KILLED)

    shown = CliRunner().invoke(main, ["status", "denied-row"], obj=stubbed)

    lines = shown.stdout.splitlines()
    progress = next(index for index, line in enumerate(lines) if line.startswith("  progress "))
    assert len(lines[progress]) < 120 and "analyst" not in lines[progress]
    assert re.fullmatch(r"  fix +allow your credentials logs:DescribeLogStreams and logs:GetLogEvents: "
                        r"docs/sagemaker\.md .*", lines[progress + 1])


def test_status_json_without_log_permissions_carries_the_cause_and_why_the_logs_were_not_read(stubbed):
    _failed_and_denied(stubbed, "denied-json", KILLED)

    shown = CliRunner().invoke(main, ["status", "denied-json", "-o", "json"], obj=stubbed)

    document = json.loads(shown.stdout)
    assert document["failure_cause"]["category"] == "oom_killed"
    assert document["logs_unreadable"].startswith("reading the logs of denied-json: DescribeLogStreams failed: ")
    assert document["progress"] is None and document["failing_host"] is None


def test_the_notebooks_failure_cause_without_log_permissions_is_the_failure_reasons(stubbed):
    """Before: `job.failure_cause()` raised AwsError for the unreadable logs, so a notebook got no cause at all."""
    _failed_and_denied(stubbed, "denied-notebook", KILLED, log_reads=2)
    job = orchestrator.attach("sagemaker:denied-notebook", boto=stubbed)

    cause = job.failure_cause()

    assert (cause.headline(), cause.category) == ("the job was killed by signal 9 (SIGKILL)", "oom_killed")
    assert cause.detail[-1].startswith("logs unread: reading the logs of denied-notebook: DescribeLogStreams failed")


def test_the_notebooks_progress_without_log_permissions_says_what_is_known_and_why_the_logs_are_not(stubbed):
    """Before: `job.progress()` raised AwsError, so a notebook cell got a traceback instead of the job's status."""
    _failed_and_denied(stubbed, "denied-progress", KILLED, log_reads=2)
    job = orchestrator.attach("sagemaker:denied-progress", boto=stubbed)

    progress = job.progress()

    assert progress.logs_unread == "your credentials were refused logs:DescribeLogStreams"
    assert "logs:DescribeLogStreams and logs:GetLogEvents" in progress.logs_fix
    assert progress.failure_cause.category == "oom_killed" and job.last_status.status == "Failed"
    rows = dict(job.summary().rows)
    assert rows["logs"] == "not read: your credentials were refused logs:DescribeLogStreams"


def test_without_log_permissions_a_failure_reason_that_names_nothing_leaves_the_permission_error(stubbed):
    """SageMaker's bare `AlgorithmError` names no cause: the notebook is told which permission would read it,
    never given None, which says the job did not fail."""
    _failed_and_denied(stubbed, "denied-bare", "AlgorithmError: see the job's logs", log_reads=2)
    job = orchestrator.attach("sagemaker:denied-bare", boto=stubbed)

    with pytest.raises(AwsError, match="logs:DescribeLogStreams"):
        job.failure_cause()
