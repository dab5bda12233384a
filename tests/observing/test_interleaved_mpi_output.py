"""Issue 31, the same failure gives the same reason on every run under mpirun too: mpirun forwards a rank's stdout
and stderr apart, so a line the rank printed before it failed sometimes lands inside its traceback (seen in CI:
`algo-2 (rank 1) failed: rank 1 building the model`). The traceback is read from the rank's stderr."""

from __future__ import annotations

import pytest

from orchestrator.observing.root_cause import MPI, Launcher, read_cause

TAG = "[1,mpirank:1,algo-2]"
TRACEBACK = [
    f"{TAG}<stderr>: Traceback (most recent call last):",
    f'{TAG}<stderr>:   File "/opt/ml/code/deep_failure.py", line 20, in <module>',
    f"{TAG}<stderr>:     encoder(24)",
    f'{TAG}<stderr>:   File "/opt/ml/code/deep_failure.py", line 15, in check_shapes',
    f'{TAG}<stderr>:     raise ValueError("shape mismatch in layer 7: (32, 64) vs (32, 48)")',
    f"{TAG}<stderr>: ValueError: shape mismatch in layer 7: (32, 64) vs (32, 48)",
    f"{TAG}<stderr>: MPI_ABORT was invoked on rank 1 in communicator MPI_COMM_WORLD",
]
STDOUT = f"{TAG}<stdout>: rank 1 building the model"
TWO_HOSTS = Launcher(MPI, ("algo-1", "algo-2"), 1)


@pytest.mark.parametrize("where", range(len(TRACEBACK) + 1))
def test_a_stdout_line_anywhere_in_the_traceback_leaves_the_reason_alone(where):
    lines = ["mpirun --host algo-1:1,algo-2:1 -np 2 python -m mpi4py deep_failure.py",
             *TRACEBACK[:where], STDOUT, *TRACEBACK[where:]]
    cause = read_cause({"algo-1": lines, "algo-2": []}, TWO_HOSTS, exit_codes={"algo-1": 1})
    assert cause.headline() == ("algo-2 (rank 1) failed: ValueError: shape mismatch in layer 7: (32, 64) vs "
                                "(32, 48) at deep_failure.py:15")
