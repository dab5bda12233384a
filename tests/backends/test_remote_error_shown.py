"""A failed function job's `job.result()` shows the user their function's traceback, not smtrain's: in IPython (a
notebook's shell) the rank's own traceback and where it was raised, and nothing of the frames that handed the
exception back; in plain Python, the remote traceback as the cause and one smtrain frame under the caller's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a local run of a function job

REPO = Path(__file__).resolve().parents[2]
JOBS = '''\
import orchestrator


def helper(rows):
    return rows / 0


@orchestrator.remote(instance_type="ml.c5.xlarge")
def fails(rows):
    rows += 1
    return helper(rows)
'''
CALL = "import jobs\njob = jobs.fails.run(3, backend='local')\njob.result()\n"


def _printed(tmp_path: Path, *command: str) -> str:
    (tmp_path / "jobs.py").write_text(JOBS)
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
                   "HOME": str(tmp_path), "NO_COLOR": "1"}
    done = subprocess.run([sys.executable, *command], cwd=tmp_path, env=environment, capture_output=True,
                          text=True, timeout=300)
    return done.stdout + done.stderr


def test_ipython_shows_the_function_s_traceback_and_none_of_smtrain_s_frames(tmp_path):
    printed = _printed(tmp_path, "-m", "IPython", "--colors=NoColor", "--no-banner", "-c", CALL)

    assert 'in fails\n    return helper(rows)' in printed and "in helper\n    return rows / 0" in printed
    assert printed.rstrip().endswith("ZeroDivisionError: division by zero\n"
                                     f"raised on rank 0 (algo-1) of job {printed.rsplit('of job ', 1)[1].strip()}")
    assert "orchestrator/backends" not in printed and "The above exception" not in printed


def test_python_shows_the_remote_traceback_as_the_cause_under_one_smtrain_frame(tmp_path):
    printed = _printed(tmp_path, "-c", CALL)

    cause, raised = printed.split("The above exception was the direct cause of the following exception:")
    assert "in helper\n    return rows / 0" in cause
    smtrain_frames = [line for line in raised.splitlines() if line.startswith("  File") and "orchestrator" in line]
    assert len(smtrain_frames) <= 2, raised  # Job.result and Job.results, which raises it
    assert "function_results.py" not in raised
