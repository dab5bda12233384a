"""A failed trial's one line (`tune local` as each trial ends, `tune status` under the table): what the script
said, not only how it ended, or every failed trial of a search reads the same."""

from __future__ import annotations

import pytest

from orchestrator.observing.trials import Trial, failures


@pytest.mark.parametrize(("reason", "line"), [
    ("algo-1 (rank 0) exited with code 1\nlast line: no data in /opt/ml/input\nExecuteUserScriptError:\nExitCode 1",
     "algo-1 (rank 0) exited with code 1; last line: no data in /opt/ml/input"),
    ('AlgorithmError: ExecuteUserScriptError:\nExitCode 1\nErrorMessage "raise ValueError(lr)\n ValueError: lr too '
     'small"\nCommand "/opt/conda/bin/python3.11 train.py --lr 0.5", exit code: 1',
     "AlgorithmError: ExecuteUserScriptError: ValueError: lr too small"),
    ('AlgorithmError: ExecuteUserScriptError:\nExitCode 137\nErrorMessage ""\nCommand "python train.py", exit code: 137',
     "AlgorithmError: ExecuteUserScriptError: ExitCode 137"),
    ("algo-1 (rank 0) failed: ValueError: lr too small at train.py:1\nExecuteUserScriptError:\nExitCode 1",
     "algo-1 (rank 0) failed: ValueError: lr too small at train.py:1"),
], ids=["local-exit-with-a-message", "sagemaker-error-message", "sagemaker-exit-code", "local-exception"])
def test_a_failed_trials_line_says_what_the_script_said(reason, line):
    trial = Trial(name="search-001", status="Failed", objective=None, hyperparameters={}, number=1,
                  failure_reason=reason)

    assert trial.failure_line == line
    assert failures([trial]) == [f"search-001 failed: {line}"]
