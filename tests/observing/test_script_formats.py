"""The formats scripts people write print their loss and step in: `name=value`, `name: value`, transformers'
log dicts under its progress bar, Lightning's bar. The default metric definitions read `train:loss` from each, and
`--smoke-steps` reads the step from each; a script whose lines match nothing is told so, with the way to add a
definition, and a `--smoke-steps` that can see no step says so."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from orchestrator.contract import DEFAULT_METRIC_DEFINITIONS
from orchestrator.observing.metric_series import compile_definitions, extract, step_mark

# One line per format, the loss 0.42 at step 3 (Lightning: epoch 0, batch 3 of 4).
FORMATS = {
    "name=value": "step=3 loss=0.42",
    "name: value": "step: 3, loss: 0.42",
    "transformers": "\r 30%|\u2588\u2588\u2588       | 3/10 [00:01<00:02,  2.00it/s]\r"
                    "{'loss': 0.42, 'learning_rate': 5e-05, 'epoch': 0.3}",
    "lightning": "\rEpoch 0:  75%|\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u258c  | 3/4 [00:01<00:00,  2.00it/s, v_num=0, "
                 "train_loss_step=0.42]",
}


@pytest.mark.parametrize("name", FORMATS)
def test_the_default_definitions_read_the_loss_and_the_step_of_each_format(name):
    line = FORMATS[name]

    values = extract(compile_definitions(DEFAULT_METRIC_DEFINITIONS), line)

    assert values["train:loss"] == 0.42
    assert step_mark(line).step == 3


def test_transformers_dicts_give_the_learning_rate_epoch_and_eval_loss_without_taking_it_for_the_loss():
    definitions = compile_definitions(DEFAULT_METRIC_DEFINITIONS)

    train = extract(definitions, "{'loss': 0.69, 'learning_rate': 5e-05, 'epoch': 1.0}")
    evaluation = extract(definitions, "{'eval_loss': 0.5, 'eval_runtime': 1.2, 'epoch': 1.0}")

    assert train == {"train:loss": 0.69, "train:learning_rate": 5e-05, "train:epoch": 1.0}
    assert evaluation == {"eval:loss": 0.5, "train:epoch": 1.0}


def test_transformers_5_quoted_numbers_are_read_as_the_4_x_numbers_are():
    """transformers 5.24.0's ProgressCallback.on_log prints every float as a string (f"{v:.4g}"), as
    tests/emulator/test_local_frameworks.py's Trainer runs print them."""
    definitions = compile_definitions(DEFAULT_METRIC_DEFINITIONS)

    train = extract(definitions, "{'loss': '0.6931', 'grad_norm': '1.375', 'learning_rate': '5e-05', "
                                 "'epoch': '0.3333'}")
    evaluation = extract(definitions, "{'eval_loss': '0.6701', 'eval_runtime': '0.1234', "
                                      "'eval_samples_per_second': '81.03', 'epoch': '1'}")

    assert train == {"train:loss": 0.6931, "train:learning_rate": 5e-05, "train:epoch": 0.3333}
    assert evaluation == {"eval:loss": 0.6701, "train:epoch": 1.0}


# lightning 2.6.6, callbacks/model_checkpoint.py, ModelCheckpoint(monitor=..., verbose=True):
# f"Epoch {epoch:d}, global step {step:d}: {self.monitor!r} reached {current:0.5f}" f" (best {...:0.5f}), saving
# model to {filepath!r} as top {k}", and f"... {self.monitor!r} was not in top {self.save_top_k}".
LIGHTNING_CHECKPOINT = ("Epoch 1, global step 64: 'val_loss' reached 0.61234 (best 0.61234), saving model to "
                        "'/opt/ml/code/lightning_logs/version_0/checkpoints/epoch=1-step=64.ckpt' as top 1")


@pytest.mark.parametrize(("monitor", "metric"), [("val_loss", "eval:loss"), ("train_loss", "train:loss"),
                                                 ("loss", "train:loss")])
def test_lightnings_checkpoint_line_gives_the_monitored_loss_its_epoch_and_step(monitor, metric):
    line = LIGHTNING_CHECKPOINT.replace("'val_loss'", repr(monitor))

    values = extract(compile_definitions(DEFAULT_METRIC_DEFINITIONS), line)
    mark = step_mark(line)

    assert values == {metric: 0.61234, "train:epoch": 1.0}  # the value reached, not the best before it
    assert (mark.step, mark.total, mark.epoch.number, mark.epoch.first) == (64, None, 1, 0)


def test_lightnings_checkpoint_line_without_an_improvement_still_gives_its_step():
    line = "Epoch 2, global step 96: 'val_loss' was not in top 1"

    assert extract(compile_definitions(DEFAULT_METRIC_DEFINITIONS), line) == {"train:epoch": 2.0}
    assert step_mark(line).step == 96


# pytorch/examples, word_language_model/main.py @cd01f93000a6679e768700dd29e417a1e5fd10e5 (also the SageMaker
# LSTM example's train.py, tests/examples/lstm_word_language_model): `for epoch in range(1, args.epochs+1)`,
# '| epoch {:3d} | {:5d}/{:5d} batches | lr {:02.2f} | ms/batch {:5.2f} | loss {:5.2f} | ppl {:8.2f}' and
# '| end of epoch {:3d} | time: {:5.2f}s | valid loss {:5.2f} | valid ppl {:8.2f}'.
WORD_LANGUAGE_MODEL = {
    "batches": "| epoch   2 |   200/ 2983 batches | lr 20.00 | ms/batch 45.60 | loss  6.89 | ppl   986.30",
    "end of epoch": "| end of epoch   2 | time: 51.32s | valid loss  5.89 | valid ppl   361.84",
    "end of training": "| End of training | test loss  5.82 | test ppl   336.78",
}


def test_the_word_language_models_rows_give_the_loss_learning_rate_epoch_and_step():
    definitions = compile_definitions(DEFAULT_METRIC_DEFINITIONS)

    batches = extract(definitions, WORD_LANGUAGE_MODEL["batches"])
    end_of_epoch = extract(definitions, WORD_LANGUAGE_MODEL["end of epoch"])
    mark = step_mark(WORD_LANGUAGE_MODEL["batches"])

    assert batches == {"train:loss": 6.89, "train:learning_rate": 20.0, "train:epoch": 2.0}
    assert end_of_epoch == {"eval:loss": 5.89, "train:epoch": 2.0}  # `valid loss` is no training loss
    assert (mark.step, mark.total, mark.epoch.number) == (2983 + 200, None, 2)  # epoch 1's batches, then 200


def test_the_word_language_models_test_loss_is_neither_a_training_nor_an_evaluation_loss():
    assert extract(compile_definitions(DEFAULT_METRIC_DEFINITIONS), WORD_LANGUAGE_MODEL["end of training"]) == {}


def test_a_labelled_bar_is_no_training_step():
    assert step_mark("Map: 100%|\u2588\u2588\u2588| 1000/1000 [00:00<00:00, 9000 examples/s]") is None


def _script(line: str) -> str:
    """Prints steps 1 to 5 in the format of `line` (stderr, as tqdm does), then computes until stopped."""
    return f"""
import sys, time
line = {line!r}
for step in range(1, 6):
    sys.stderr.write(line.replace("3", str(step)) + "\\n")
    sys.stderr.flush()
while True:
    time.sleep(0.1)
"""


def _run(tmp_path: Path, script: str, *options: str) -> subprocess.CompletedProcess[str]:
    source = tmp_path / "src"
    source.mkdir()
    (source / "train.py").write_text(script)
    spec = {"name": "formats", "entry_point": "train.py", "source_dir": "src", "framework_version": "2.3.0",
            "instance": {"type": "ml.c5.2xlarge", "count": 1}, "distribution": {"mode": "none"},
            "max_run_seconds": 600}
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    return subprocess.run([sys.executable, "-m", "orchestrator", "local", str(path), "--run-dir",
                           str(tmp_path / "run"), *options, "-o", "json"], capture_output=True, text=True,
                          timeout=600, check=False)


@pytest.mark.slow
@pytest.mark.parametrize("name", FORMATS)
def test_a_script_printing_each_format_gets_train_loss_and_its_smoke_steps(tmp_path, name):
    # The deadline is a safety net: the smoke ends at step 3, as soon as the line shows it.
    done = _run(tmp_path, _script(FORMATS[name]), "--smoke", "300", "--smoke-steps", "3")

    assert done.returncode == 0, done.stderr
    smoke = json.loads(done.stdout)["smoke"]
    assert smoke["steps_reached"] >= 3 and smoke["step_source"] == "progress line"
    assert "the default metric definitions read train:loss" in done.stderr
    shown = subprocess.run([sys.executable, "-m", "orchestrator", "metrics", str(tmp_path / "run"), "-o", "json"],
                           capture_output=True, text=True, timeout=600, check=False)
    losses = [row["value"] for row in json.loads(shown.stdout) if row["metric"] == "train:loss"]
    assert losses[:3] == [0.42, 0.42, 0.42] and "none of the metric definitions" not in done.stderr


@pytest.mark.slow
def test_a_script_whose_lines_match_nothing_is_told_how_to_add_a_definition(tmp_path):
    script = "print('iteration 1 objective 0.42', flush=True)\n"

    done = _run(tmp_path, script)

    assert done.returncode == 0, done.stderr
    assert "none of the metric definitions (train:loss, eval:loss" in done.stderr
    assert "metrics:\n    - name: train:loss\n      regex: 'my_loss=([-+0-9.eE]+)'" in done.stderr


@pytest.mark.slow
def test_a_script_that_fails_before_any_metric_line_is_not_told_about_metric_definitions(tmp_path):
    """Its failure is the news: a note about metric definitions would only stand between the user and the reason."""
    script = "print('iteration 1 objective 0.42', flush=True)\nraise SystemExit('no data in /opt/ml/input')\n"

    done = _run(tmp_path, script)

    assert done.returncode == 1, done.stderr
    assert "no data in /opt/ml/input" in done.stderr
    assert "metric definitions" not in done.stderr


@pytest.mark.slow
def test_smoke_steps_with_no_step_in_any_line_says_which_formats_it_reads(tmp_path):
    script = "import time\nprint('objective 0.42', flush=True)\ntime.sleep(600)\n"

    done = _run(tmp_path, script, "--smoke", "5", "--smoke-steps", "2")

    assert done.returncode == 1
    assert "--smoke-steps 2: no line of the job showed a step; smtrain reads `step=N/TOTAL`" in done.stderr


@pytest.mark.parametrize("line", ["step 1 of 3: loading data", "interrupted: checkpoint saved at step 4",
                                  "max_steps=100 num_step=5 steps_per_epoch: 20"])
def test_a_step_mentioned_in_passing_is_no_step_mark(line):
    assert step_mark(line) is None
