"""`job.status()` as a notebook cell shows it: one short line (the status with its secondary status, the
instances, the cost so far, a failure's reason cut short and where its cause and fix are), not the dataclass's repr
of every transition and setting, which ran to thousands of characters."""

from __future__ import annotations

from datetime import timedelta

from job_fakes import NOW, described

from orchestrator.observing.job_status import JobStatus


def test_a_running_job_s_status_is_one_line_with_its_secondary_status_instances_and_cost():
    running = described("mlp-1", "InProgress", "Training", TrainingStartTime=NOW - timedelta(hours=1),
                        BillableTimeInSeconds=3600,
                        SecondaryStatusTransitions=[{"Status": status, "StartTime": NOW, "StatusMessage": "x" * 200}
                                                    for status in ("Starting", "Downloading", "Training")])

    shown = repr(JobStatus.from_description(running, "us-east-1"))

    assert shown.startswith("JobStatus('mlp-1', InProgress (Training), 2 x ml.c5.2xlarge, cost so far USD ")
    assert "\n" not in shown and len(shown) < 120


def test_a_failed_job_s_status_names_the_first_line_of_its_reason_cut_short():
    failed = described("mlp-2", "Failed", "Failed", FailureReason="AlgorithmError: " + "x" * 300 + "\nTraceback")

    shown = repr(JobStatus.from_description(failed, "us-east-1"))

    assert shown.startswith("JobStatus('mlp-2', Failed, 2 x ml.c5.2xlarge, failure 'AlgorithmError: xxx")
    assert shown.endswith("xxx...', its cause and fix: job.failure_cause())") and len(shown) < 220
