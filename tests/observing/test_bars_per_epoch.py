"""tqdm bars as `smtrain status` reads them, generated here by the real tqdm as a job prints them into a pipe:
a bar per epoch (gluonts' trainer: an unlabelled bar whose postfix says `epoch=2/3`; or a bar whose label says
`Epoch 2/3`) counts its batches within the epoch, so without the epochs before it each epoch read as a restart
that ended at the same `50/50`, with no rate; and a bar line of more than the 200 lines status reads (one epoch's
states, each a line once plain text has its carriage returns) shares one time, from which no rate can be measured:
the rate the bar printed itself stands in, as it does for a local run, whose lines have no time of their own."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from job_fakes import seed_logs, training
from local_run_dirs import written_run_dir
from tqdm import tqdm

from orchestrator.cli.main import main
from orchestrator.observing.plain_text import plain

EPOCHS, BATCHES = 3, 50


def _bars(label: bool, epochs: int = EPOCHS, batches: int = BATCHES) -> str:
    """What a script with a bar per epoch prints: gluonts' (`set_postfix({"epoch": "2/3", "avg_epoch_loss": ...})`)
    or one labelled `Epoch 2/3`; every state drawn (mininterval 0), as a bar refreshed each batch is."""
    out = io.StringIO()
    for epoch in range(1, epochs + 1):
        with tqdm(total=batches, desc=f"Epoch {epoch}/{epochs}" if label else None, file=out,
                  mininterval=0) as bar:
            for batch in range(batches):
                bar.update()
                if not label:
                    bar.set_postfix({"epoch": f"{epoch}/{epochs}", "avg_epoch_loss": 1 / (batch + 1)})
    return out.getvalue()


def _printed_rate(text: str) -> float:
    """The rate the bar's last state printed (`314.18it/s`)."""
    last = [state for state in plain(text).split("\n") if "it/s" in state][-1]
    return float(last.split("it/s")[0].rsplit(" ", 1)[-1])


def _cloud_status(stubbed_sagemaker, job_name: str, text: str) -> dict:
    """`smtrain status -o json` of a SageMaker job whose stream holds `text`, a line an event, a second apart."""
    stubbed_sagemaker.stubbers["sagemaker"].add_response("describe_training_job", training(job_name))
    seed_logs(job_name, {"algo-1": [(1000 * index, line) for index, line in enumerate(text.split("\n")) if line]})
    shown = CliRunner().invoke(main, ["status", job_name, "-o", "json"], obj=stubbed_sagemaker)
    assert shown.exit_code == 0, shown.output
    return json.loads(shown.stdout)["progress"]


def _local_status(root: Path, monkeypatch, text: str) -> dict:
    """`smtrain status -o json` of a running local run whose log holds `text`, as the run writes it (plain text)."""
    monkeypatch.chdir(root)
    written_run_dir(root / "runs" / "mine", {"algo-1": plain(text)})
    shown = CliRunner().invoke(main, ["status", "mine", "-o", "json"])
    assert shown.exit_code == 0, shown.output
    return json.loads(shown.stdout)["progress"]


@pytest.mark.parametrize("label", [False, True], ids=["gluonts-postfix", "epoch-label"])
def test_a_bar_per_epoch_reads_as_the_steps_of_every_epoch_at_the_rate_between_its_lines(stubbed_sagemaker, label):
    progress = _cloud_status(stubbed_sagemaker, f"tiny-epoch-bars-{int(label)}", _bars(label))

    # Lines end at 0 s, 1 s and 2 s at steps 50, 100 and 150 of 150, not `50/50` three times.
    assert (progress["step"], progress["total_steps"], progress["percent"]) == (150, 150, 100.0)
    assert (progress["epoch"], progress["epochs"]) == (3, 3)
    assert progress["steps_per_second"] == pytest.approx(50.0)


def test_a_bar_per_epoch_in_a_local_runs_log_reads_as_progress_at_the_bars_own_rate(tmp_path, monkeypatch):
    text = _bars(label=False)
    progress = _local_status(tmp_path, monkeypatch, text)

    assert (progress["step"], progress["total_steps"], progress["epoch"]) == (150, 150, 3)
    assert progress["steps_per_second"] == pytest.approx(_printed_rate(text))


def test_a_bar_line_of_more_states_than_status_reads_still_gives_a_rate(stubbed_sagemaker):
    """The Trainer's bar (no label), 300 steps in one line: the last 200 lines status reads are all its states."""
    out = io.StringIO()
    with tqdm(total=300, file=out, mininterval=0) as bar:
        for _ in range(300):
            bar.update()
    text = "starting\n" + out.getvalue()

    progress = _cloud_status(stubbed_sagemaker, "tiny-long-bar", text)

    assert (progress["step"], progress["total_steps"]) == (300, 300)
    assert progress["steps_per_second"] == pytest.approx(_printed_rate(text))
