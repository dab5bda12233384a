"""Lightning's TQDMProgressBar (its bar when rich is not installed) as `smtrain status` reads it: epoch, step and a
rate. A local run's log lines carry no time of their own, and an epoch of more batches than the 200 lines status
reads fills them with the states of one line, which share its time: no rate could be measured from the lines'
times, and the rate the bar printed itself stands in. The text is the real library's: the capture in
progress_bars/ (SOURCE says how it was made), and a fit run here with 256 batches an epoch."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from job_fakes import seed_logs, training
from local_run_dirs import written_run_dir

from orchestrator.cli.main import main
from orchestrator.observing.plain_text import plain

BARS = Path(__file__).parent / "progress_bars"


def _last_bar_rate(text: str) -> float:
    """The rate the bar's last training state printed (`631.88it/s`)."""
    last = [state for state in plain(text).split("\n") if state.startswith("Epoch ")][-1]
    return float(last.split("it/s")[0].rsplit(" ", 1)[-1])


def test_a_local_runs_lightning_bar_reads_as_epoch_step_and_the_bars_rate(tmp_path, monkeypatch):
    text = (BARS / "lightning_tqdm.out").read_bytes().decode()
    monkeypatch.chdir(tmp_path)
    written_run_dir(tmp_path / "runs" / "mine", {"algo-1": plain(text)})  # as the run writes it: each state a line

    shown = CliRunner().invoke(main, ["status", "mine", "-o", "json"])

    assert shown.exit_code == 0, shown.output
    progress = json.loads(shown.stdout)["progress"]
    assert (progress["step"], progress["epoch"]) == (96, 3)
    assert progress["steps_per_second"] == pytest.approx(_last_bar_rate(text)) == pytest.approx(631.88)


@pytest.mark.slow
def test_a_lightning_epoch_of_more_batches_than_status_reads_still_gives_a_rate(stubbed_sagemaker, tmp_path):
    """A real fit (imports Lightning: seconds), its output into a pipe as SageMaker's container takes it."""
    fit = subprocess.run([sys.executable, str(BARS / "bar_lightning.py"), "--bar", "tqdm", "--batch-size", "1"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600, cwd=tmp_path, check=False)
    text = fit.stdout.decode()  # not text=True, whose universal newlines would make each carriage return a newline
    assert fit.returncode == 0, text
    assert max(line.count("\r") for line in text.split("\n")) > 256  # an epoch's states in one line
    stubbed_sagemaker.stubbers["sagemaker"].add_response("describe_training_job", training("tiny-long-epochs"))
    seed_logs("tiny-long-epochs", {"algo-1": [(1000 * index, line) for index, line in enumerate(text.split("\n"))
                                              if line]})

    shown = CliRunner().invoke(main, ["status", "tiny-long-epochs", "-o", "json"], obj=stubbed_sagemaker)

    assert shown.exit_code == 0, shown.output
    progress = json.loads(shown.stdout)["progress"]
    assert (progress["step"], progress["epoch"]) == (3 * 256, 3)
    assert progress["steps_per_second"] == pytest.approx(_last_bar_rate(text))
