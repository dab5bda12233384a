"""A run whose smtrain was killed while it stopped the job (a CI runner's cancel: SIGTERM, then SIGKILL within the
ranks' grace) has no end on record: `smtrain status`'s history read `Stopping ... (for 50 h so far)`, as if it
were still going, and the figure grew with every look. Its last transition has no `so far`; a running one's has."""

from __future__ import annotations

import os

import psutil
from click.testing import CliRunner
from local_run_dirs import written_run_dir

from orchestrator.cli.main import main

TRANSITIONS = [
    {"Status": "Training", "StartTime": "2026-11-26T10:00:05+00:00", "EndTime": "2026-11-26T10:04:50+00:00",
     "StatusMessage": "Training in progress"},
    {"Status": "Stopping", "StartTime": "2026-11-26T10:04:50+00:00", "StatusMessage": "Stopping the training job"},
]


def _history_end(run_dir) -> str:
    shown = CliRunner().invoke(main, ["status", str(run_dir)])
    assert shown.exit_code == 0, shown.output
    return shown.stdout.rstrip().splitlines()[-1]


def test_a_run_killed_while_it_stopped_is_not_still_stopping(tmp_path):
    run_dir = written_run_dir(tmp_path / "run", {"algo-1": "step=1/9\n"}, TrainingJobStatus="InProgress",
                              SecondaryStatus="Stopping", SecondaryStatusTransitions=TRANSITIONS,
                              LocalRun={"pid": 2**22 + 1, "process_started": 0.0, "interrupted_by": "SIGTERM"})

    last = _history_end(run_dir)

    assert last.split()[3] == "Stopping", last
    assert "so far" not in last
    assert last.endswith("(its end was not recorded)")


def test_a_run_still_stopping_says_for_how_long_so_far(tmp_path):
    run_dir = written_run_dir(tmp_path / "run", {"algo-1": "step=1/9\n"}, TrainingJobStatus="InProgress",
                              SecondaryStatus="Stopping", SecondaryStatusTransitions=TRANSITIONS,
                              LocalRun={"pid": os.getpid(), "process_started": psutil.Process().create_time()})

    assert _history_end(run_dir).endswith(" so far)")
