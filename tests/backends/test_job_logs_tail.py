"""`job.logs(tail=N)` takes what `smtrain logs --tail N` takes: a count of 1 or more. Before, tail=0 (or a negative
one) gave no line of a local run and a SageMaker job's last lines, where the command line refuses it (exit 2)."""

from __future__ import annotations

import pytest
from forked import smtrain

import orchestrator
from orchestrator.backends.local import LocalBackend
from orchestrator.emulator.run_options import Options
from orchestrator.errors import SpecError


@pytest.mark.parametrize("tail", [0, -3, 2.5, True])
def test_a_tail_that_is_no_count_of_lines_is_refused_as_the_cli_refuses_it(tmp_path, tail):
    job = orchestrator.Job(LocalBackend(Options()), str(tmp_path / "run"))

    with pytest.raises(SpecError, match=rf"tail={tail!r} is no count of lines") as refused:
        job.logs(tail=tail)

    assert "1 or more" in refused.value.fix
    assert smtrain("logs", f"local:{tmp_path / 'run'}", "--tail", "0", cwd=tmp_path).returncode == 2
