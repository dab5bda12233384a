"""Ctrl-C in `job.wait()` ends the wait, not the job (as on SageMaker, a local run goes on in this process's
thread): the wait reads the status once more and says where the job is, with how to stop it while it runs, and the
KeyboardInterrupt (`errors.Interrupted`, whose one line a notebook shows instead of a traceback) still reaches the
caller. The job may have ended in the same moment: then "still runs" is false."""

from __future__ import annotations

import pytest
from job_fakes import described

from orchestrator.backends.job import Job
from orchestrator.backends.sagemaker import SageMakerBackend
from orchestrator.errors import Interrupted
from orchestrator.observing.job_status import JobStatus


class _InterruptedBackend:
    """A local backend whose first status read is where Ctrl-C lands; the read after it finds `after`."""

    name = "local"
    poll_seconds = 0.0

    def __init__(self, after: str) -> None:
        self._reads = [KeyboardInterrupt(), JobStatus.from_description(described("train-1", after, after), "local")]

    def describe(self, job_id):
        read = self._reads.pop(0)
        if isinstance(read, BaseException):
            raise read
        return read

    def notices(self, job_id):
        return []

    def phase_advice(self, job_id, any_lines):
        return None

    def submission(self, job_id):
        return None


def test_ctrl_c_in_wait_says_once_that_the_job_still_runs_and_how_to_stop_it_then_reraises(capsys):
    job = Job(_InterruptedBackend("InProgress"), "runs/train-1")

    with pytest.raises(KeyboardInterrupt) as interrupted:
        job.wait()

    assert interrupted.value._render_traceback_() == [
        "KeyboardInterrupt: interrupted the wait; job train-1 still runs (InProgress): job.stop() stops it"]
    assert capsys.readouterr().err == ""  # said once, by the interrupt itself


def test_ctrl_c_in_wait_names_where_the_running_job_is_by_its_secondary_status():
    backend = _InterruptedBackend("InProgress")
    backend._reads[1] = JobStatus.from_description(described("train-1", "InProgress", "Training"), "local")

    with pytest.raises(Interrupted) as interrupted:
        Job(backend, "runs/train-1").wait()

    assert interrupted.value.message == "interrupted the wait; job train-1 still runs (Training): job.stop() stops it"


def test_ctrl_c_as_the_local_run_ends_says_it_ended_not_that_it_runs():
    job = Job(_InterruptedBackend("Completed"), "runs/train-1")

    with pytest.raises(Interrupted) as interrupted:
        job.wait()

    assert interrupted.value.message == "interrupted the wait; job train-1 had already ended: Completed"


def _interrupt(_status: JobStatus) -> None:
    raise KeyboardInterrupt  # Ctrl-C while the wait handles a poll


def test_ctrl_c_as_a_sagemaker_job_fails_reads_its_status_once_and_says_it_ended(stubbed):
    sagemaker = stubbed.stubbers["sagemaker"]
    sagemaker.add_response("describe_training_job", described("tiny-w", "InProgress", "Training"))
    sagemaker.add_response("describe_training_job", described("tiny-w", "Failed", "Failed"))

    with pytest.raises(Interrupted) as interrupted:
        Job(SageMakerBackend(stubbed), "tiny-w").wait(poll_seconds=0, on_status=_interrupt)

    assert interrupted.value.message == ("interrupted the wait; job tiny-w had already ended: Failed; "
                                         "job.failure_cause() says why")  # and the Stubber fails on a third call


def test_ctrl_c_in_a_sagemaker_wait_whose_status_read_fails_still_reraises_the_interrupt(stubbed):
    sagemaker = stubbed.stubbers["sagemaker"]
    sagemaker.add_response("describe_training_job", described("tiny-w", "InProgress", "Training"))
    sagemaker.add_client_error("describe_training_job", service_error_code="ThrottlingException",
                               service_message="Rate exceeded", http_status_code=400)

    with pytest.raises(Interrupted) as interrupted:
        Job(SageMakerBackend(stubbed), "tiny-w").wait(poll_seconds=0, on_status=_interrupt)

    said = interrupted.value.message
    assert said.startswith("interrupted the wait; job tiny-w may still run (its status could not be read: ")
    assert "Rate exceeded" in said and said.endswith("job.stop() stops it if it does") and "\n" not in said
