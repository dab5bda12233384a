"""A failed job in a notebook gives the advice `smtrain status` gives: the Job's repr names the failing rank's error
and the fix once `wait()` has seen the job fail or `attach` found it failed (before: `Job('x', backend='local',
status='Failed')` and nothing more), and the JobStatus `wait()` returns says where they are."""

from __future__ import annotations

import pytest
from forked import smtrain
from job_fakes import write_spec_file

import orchestrator

MISSING = "not_a_module_smtrain_test"


@pytest.fixture(scope="module")
def failed(tmp_path_factory):
    """A local run whose script imports a module no image has: it fails with a cause and a fix; (job, final)."""
    folder = tmp_path_factory.mktemp("failed")
    spec = write_spec_file(folder, inputs={}, instance={"type": "ml.c5.2xlarge", "count": 1})
    (folder / "src" / "train.py").write_text(f"import {MISSING}\n")
    job = orchestrator.run(spec, run_dir=folder / "run")
    return job, job.wait()


def test_the_job_s_repr_names_the_cause_and_fix_smtrain_status_shows(failed):
    job, final = failed
    shown = repr(job)  # what wait() read: no further call made
    cause = job.failure_cause()
    assert final.status == "Failed" and cause is not None and cause.fix

    status = smtrain("status", f"local:{job.id}")

    assert f"cause={cause.headline()!r}" in shown and f"fix={cause.fix!r}" in shown
    assert cause.headline() in status.stdout and cause.fix in status.stdout, status.stdout  # the same advice
    assert f"No module named '{MISSING}'" in cause.headline()


def test_an_attached_failed_job_s_repr_names_its_cause_and_fix_without_a_further_call(failed):
    job, _ = failed

    attached = orchestrator.attach(f"local:{job.id}")

    assert f"No module named '{MISSING}'" in repr(attached) and "requirements.txt" in repr(attached)


def test_a_failed_job_whose_cause_was_not_read_says_which_call_reads_it(failed):
    job, _ = failed
    handle = orchestrator.Job(job.backend, job.id)

    handle.status()

    assert repr(handle).endswith("status='Failed', next='job.failure_cause(): where it failed and the fix')")


def test_the_final_status_of_a_failed_job_says_where_its_cause_and_fix_are(failed):
    _, final = failed

    assert repr(final).endswith(", its cause and fix: job.failure_cause())")
