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
