"""train.py ends without interpreter finalization (`train.leave`: os._exit once its run is written), which a
gloo worker thread still waiting for the GIL turns into an abort of a finished rank (bench/bench_exit_aborts.py).

Finalization runs the interpreter's exit handlers, so an `atexit` handler that a `sitecustomize` on PYTHONPATH
registers in the rank shows whether it happened: it must not, after a completed run and after a failed one."""

from __future__ import annotations

import sys

import pytest

SITECUSTOMIZE = """
import atexit, os
from pathlib import Path
marks = Path(os.environ["EXIT_MARKS"])
(marks / "started").touch()
atexit.register(lambda: (marks / "finalized").touch())
"""


@pytest.fixture
def exit_marks(tmp_path):
    """A sitecustomize that marks the start of a process and, from an atexit handler, its finalization."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    marks = tmp_path / "marks"
    marks.mkdir()
    return {"PYTHONPATH": str(site), "EXIT_MARKS": str(marks)}, marks


def test_the_marks_see_a_normal_exit(launcher, exit_marks):
    """Not vacuous: a process that ends normally runs the handler."""
    env, marks = exit_marks
    done = launcher.start([sys.executable, "-c", "pass"], launcher.root / "plain", {**env, "PATH": ""}).wait()
    assert done.returncode == 0, done.output
    assert (marks / "started").exists() and (marks / "finalized").exists()


@pytest.mark.slow
def test_a_completed_run_leaves_without_finalization(launcher, exit_marks):
    env, marks = exit_marks
    done = launcher.single("completed", ["--model", "linear", "--num-samples", "64", "--epochs", "1"], **env)
    done.assert_ok()
    assert done.model_json()  # the run was written before it left
    assert (marks / "started").exists()
    assert not (marks / "finalized").exists(), "train.py ended through interpreter finalization"


def test_a_failed_run_leaves_without_finalization(launcher, exit_marks):
    env, marks = exit_marks
    done = launcher.single("failed", ["--lrr", "0.1"], **env)
    assert done.returncode == 2, done.output
    assert (done.base_dir / "output" / "failure").read_text().startswith("HyperparameterError: unrecognized")
    assert (marks / "started").exists()
    assert not (marks / "finalized").exists(), "train.py ended through interpreter finalization"
