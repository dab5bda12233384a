"""Ctrl-C in `job.wait()` ends the wait, not the job (as on SageMaker, a local run goes on in this process's
thread): the wait says so once, with how to stop it, and the KeyboardInterrupt still reaches the caller."""

from __future__ import annotations

import pytest

from orchestrator.backends.job import Job


class _InterruptedBackend:
    """A local backend whose status read is where Ctrl-C lands."""

    name = "local"
    poll_seconds = 0.0

    def describe(self, job_id):
        raise KeyboardInterrupt


def test_ctrl_c_in_wait_says_once_that_the_job_still_runs_and_how_to_stop_it_then_reraises(capsys):
    job = Job(_InterruptedBackend(), "runs/train-1")

    with pytest.raises(KeyboardInterrupt):
        job.wait()

    said = capsys.readouterr().err
    assert said.count("\n") == 1 and "job train-1 still runs: job.stop() stops it" in said
