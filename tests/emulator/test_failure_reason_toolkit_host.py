"""The toolkit message under a local run's failure reason agrees with its cause: where every rank's argparse
rejected a hyperparameter, algo-2's torchrun failed first and smtrain stopped algo-1's, still in torchrun's exit
barrier (ExitCode 143, ErrorMessage ""), although algo-1's rank 0 is the cause (it exited 2). The reason quotes a
toolkit message that describes the failure, not smtrain's SIGTERM."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from orchestrator.emulator import local_run
from orchestrator.emulator.reporting.failures import quoted_hosts, toolkit_failure
from orchestrator.emulator.supervising.supervisor import Exit, Outcome
from orchestrator.observing.root_cause import FailureCause

COMMAND = "/usr/bin/torchrun --nnodes 2 --nproc_per_node 1 train.py --batch_size 8"
ARGPARSE = ["usage: train.py [-h] [--epochs EPOCHS]",
            "train.py: error: unrecognized arguments: --batch_size 8"]


FAILURE_FILES: dict[str, str] = {}
"""Each host's output/failure: the toolkit's message, written before the reason is made, or the script's own."""


@pytest.fixture
def argparse_cause(monkeypatch):
    cause = FailureCause("algo-1", 0, ARGPARSE[1], 2, category="argument_rejected", detail=(ARGPARSE[0],))
    monkeypatch.setattr(local_run, "failure_cause", lambda prepared, processes, outcome: cause)
    monkeypatch.setattr(local_run.run_layout, "script_failure_reason", lambda layout, host: FAILURE_FILES.get(host))
    FAILURE_FILES.clear()
    return cause


def _reason(exits: list[Exit], first: Exit, scripts_wrote: dict[str, str] | None = None) -> str:
    outcome = Outcome(status="failed", exits=exits, first_failure=first)
    failures = {item.host: toolkit_failure(item.returncode, COMMAND, ARGPARSE) for item in exits}
    FAILURE_FILES.update(failures)
    FAILURE_FILES.update(scripts_wrote or {})
    prepared = SimpleNamespace(layout=None, user_paths=lambda text: text)
    reason, _ = local_run._failure_reason(prepared, [], outcome, failures)
    return reason


def test_failure_reason_leaves_out_the_toolkit_message_of_a_host_smtrain_stopped(argparse_cause):
    reason = _reason([Exit("algo-1", -15), Exit("algo-2", 1)], first=Exit("algo-2", 1))
    assert reason.startswith("algo-1 (rank 0) failed: train.py: error: unrecognized arguments: --batch_size 8")
    assert "ExitCode 1\n" in reason and "ExitCode 143" not in reason


def test_failure_reason_quotes_the_causes_host_when_it_failed_by_itself(argparse_cause):
    reason = _reason([Exit("algo-1", 1), Exit("algo-2", 143)], first=Exit("algo-1", 1))
    assert "ExitCode 1\n" in reason and "ExitCode 143" not in reason


def test_failure_reason_quotes_a_failure_file_the_causes_script_wrote(argparse_cause):
    reason = _reason([Exit("algo-1", -15), Exit("algo-2", 1)], first=Exit("algo-2", 1),
                     scripts_wrote={"algo-1": "bad batch size: 8"})
    assert reason.endswith("\nbad batch size: 8") and "ExitCode" not in reason


@pytest.mark.parametrize("cause_host, first, codes, quoted", [
    ("algo-1", "algo-2", {"algo-1": -15, "algo-2": 1}, ["algo-2"]),
    ("algo-1", "algo-2", {"algo-1": 143, "algo-2": 1}, ["algo-2"]),
    ("algo-1", "algo-2", {"algo-1": 1, "algo-2": 1}, ["algo-1", "algo-2"]),
    ("algo-2", "algo-2", {"algo-1": -15, "algo-2": 143}, ["algo-2"]),  # the first failure is never smtrain's stop
    (None, "algo-1", {"algo-1": 1}, ["algo-1"]),
])
def test_quoted_hosts_skips_hosts_smtrain_stopped(cause_host, first, codes, quoted):
    assert quoted_hosts(cause_host, first, codes) == quoted
