"""An mpirun job that smtrain stops (a smoke, StopTrainingJob, Ctrl-C) ends in order: its ranks get SIGTERM and
mpirun ends its own daemons, so its log never reports a host lost; a host that really dies is still reported by
Open MPI and named as the cause."""

from __future__ import annotations

import pytest

from orchestrator.emulator.local_run import Options, run_local
from orchestrator.specs.loader import load

pytestmark = pytest.mark.slow

MPI_ON_TWO_HOSTS = {"mode": "mpi", "processes_per_host": 1}
DAEMON_LOST = ("lost communication with a remote daemon", "daemon failed to report back")
"""Open MPI's words (PRTE's, and Open MPI 4's ORTE's) for a host whose daemon ended before mpirun ended it."""


def test_a_smoke_of_an_mpi_job_stops_without_a_lost_daemon_and_leaves_no_process(make_spec, tmp_path, processes_of):
    spec = make_spec("mpi_steps.py", distribution=MPI_ON_TWO_HOSTS)
    result = run_local(load(spec), Options(run_dir=tmp_path / "run", smoke_seconds=600, smoke_steps=5))
    assert (result.status, result.exit_code, result.failure_reason) == ("Stopped", 0, None)
    log = (result.run_dir / "logs" / "algo-1.log").read_text()
    assert not [words for words in DAEMON_LOST if words in log], log[-2000:]
    assert "[1,mpirank:0,algo-1]<stdout>: checkpoint saved" in log  # rank 0 had its grace, mpirun waited for it
    assert processes_of(result.run_dir) == []


def test_a_host_that_dies_under_mpirun_is_reported_and_named_as_the_cause(make_spec, tmp_path, processes_of):
    spec = make_spec("mpi_steps.py", distribution=MPI_ON_TWO_HOSTS, hyperparameters={"lose-host-at-step": 3})
    result = run_local(load(spec), Options(run_dir=tmp_path / "run"))
    assert (result.status, result.exit_code) == ("Failed", 1)
    assert "PRTE has lost communication with a remote daemon" in (result.run_dir / "logs" / "algo-1.log").read_text()
    cause = result.failure_cause
    assert (cause["host"], cause["category"]) == ("algo-2", "host_lost")
    assert result.failure_reason.startswith(
        "algo-2 (Open MPI daemon) failed: PRTE has lost communication with a remote daemon\nfix: mpirun lost")
    assert processes_of(result.run_dir) == []
