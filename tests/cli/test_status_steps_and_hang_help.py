"""Issue 31, the commands read what a user's own script prints and say what they do: `smtrain status` of a local
run reads its step from each format the default metric definitions read (`name=value`, `name: value`,
transformers' bar and dicts, Lightning's bar) and says when it can see no step; `smtrain local --help` says what
counts as a hang and what as slow."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from orchestrator.cli.main import main
from orchestrator.contract import RUN_MARKER_FILE

# The step is 3 in each; tqdm's bars rewrite their line with carriage returns.
FORMATS = {
    "name=value": "step=3 loss=0.42",
    "name: value": "step: 3, loss: 0.42",
    "transformers": "\r 30%|\u2588\u2588\u2588       | 3/10 [00:01<00:02,  2.00it/s]\r"
                    "{'loss': 0.42, 'learning_rate': 5e-05, 'epoch': 0.3}",
    "lightning": "\rEpoch 0:  75%|\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u258c  | 3/4 [00:01<00:00,  2.00it/s, v_num=0, "
                 "train_loss_step=0.42]",
    "a script's own bar": "\rEpoch 1/2:  30%|\u2588\u2588\u2588       | 3/10 [00:01<00:02,  2.00it/s] loss=0.42",
}


def _finished_run(root: Path, log: str, **described: object) -> None:
    run_dir = root / "runs" / "mine"
    (run_dir / "logs").mkdir(parents=True)
    (run_dir / RUN_MARKER_FILE).write_text("")
    (run_dir / "status.json").write_text(json.dumps({
        "TrainingJobName": "mine", "TrainingJobStatus": "Completed", "SecondaryStatus": "Completed",
        "CreationTime": "2026-11-26T10:00:00+00:00", "SecondaryStatusTransitions": [],
        "ResourceConfig": {"InstanceType": "ml.c5.2xlarge", "InstanceCount": 1}, **described}))
    (run_dir / "logs" / "algo-1.log").write_text(log)


@pytest.mark.parametrize("name", FORMATS)
def test_status_of_a_finished_run_reads_the_step_of_each_format(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    _finished_run(tmp_path, f"starting\n{FORMATS[name]}\nsaving the model\n")

    result = CliRunner().invoke(main, ["status", "mine", "-o", "json"])

    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["progress"]["step"] == 3


def test_status_of_a_run_without_a_step_says_which_formats_it_reads(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _finished_run(tmp_path, "iteration one, objective 0.42\n")

    result = CliRunner().invoke(main, ["status", "mine"])

    assert result.exit_code == 0, result.output
    progress = next(line for line in result.stdout.splitlines() if line.strip().startswith("progress"))
    assert "no step in the logs' last lines; smtrain reads `step=N/TOTAL`" in progress, progress
    assert "yet" not in progress  # the run has ended: no step will come


def test_status_of_a_run_printing_only_its_epochs_shows_the_epoch_and_the_loss(tmp_path, monkeypatch):
    # A script of one's own: a tqdm bar labelled from 0 (`desc=f"epoch {epoch}"`), its own line from 1.
    bar = "\repoch {0}:   0%|          | 0/16 [00:00<?, ?it/s]\repoch {0}: 100%|##########| 16/16 [00:00<00:00]"
    log = "".join(f"{bar.format(epoch)}\nepoch={epoch + 1} loss={loss}\n" for epoch, loss in enumerate([2.7, 0.4, 0.24]))
    monkeypatch.chdir(tmp_path)
    _finished_run(tmp_path, log, HyperParameters={"epochs": "3"},
                  AlgorithmSpecification={"MetricDefinitions": [{"Name": "train:loss", "Regex": "loss=([0-9.]+)"}]})

    shown = CliRunner().invoke(main, ["status", "mine"])
    document = json.loads(CliRunner().invoke(main, ["status", "mine", "-o", "json"]).stdout)

    assert "  progress   epoch 3 of 3; no step in the logs' last lines" in shown.stdout, shown.stdout
    assert "  train:loss 0.24 (latest logged)" in shown.stdout, shown.stdout
    assert (document["epoch"], document["epochs"]) == (3, 3)


def test_local_help_says_what_counts_as_a_hang_and_what_as_slow():
    text = " ".join(CliRunner().invoke(main, ["local", "--help"], terminal_width=200).output.split())

    assert "When no rank writes a line or advances a step for this long, the run is silent." in text
    assert "Silent while some host's work still uses the CPU" in text and "slow" in text and "never stopped" in text
    assert "Silent with every rank idle (blocked in a collective, sleeping, waiting on a lock): hung" in text
    assert "(exit 4)" in text and "A smoke's deadline (--smoke) governs a slow run." in text
