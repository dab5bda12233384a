"""karpathy/nanoGPT's train.py as it really prints (nanogpt_output/SOURCE says how the file was made): the default
metric definitions read its losses, as SageMaker would from the same lines, and its `iter N:` lines are its steps,
so that its chart, `status` and `--smoke-steps` work for it unchanged."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from orchestrator.contract import DEFAULT_METRIC_DEFINITIONS
from orchestrator.observing.metric_series import (
    MetricRecorder,
    compile_definitions,
    extract,
    loss_metrics,
    read_points,
    step_mark,
)

OUTPUT = Path(__file__).parent / "nanogpt_output"
DEFINITIONS = compile_definitions(DEFAULT_METRIC_DEFINITIONS)


def _lines() -> list[str]:
    return (OUTPUT / "train.out").read_text().splitlines()


def test_every_line_of_a_real_run_gives_its_losses_and_nothing_else():
    read = [(line, extract(DEFINITIONS, line)) for line in _lines()]

    assert [values for line, values in read if values] == [
        {"eval:train_loss": 2.8475, "eval:loss": 2.8465},
        {"train:loss": 2.8299}, {"train:loss": 2.8112}, {"train:loss": 2.7758},
        {"eval:train_loss": 2.7598, "eval:loss": 2.7507},
        {"train:loss": 2.7543}, {"train:loss": 2.735}, {"train:loss": 2.7217},
        {"eval:train_loss": 2.7162, "eval:loss": 2.7143},
        {"train:loss": 2.718},
    ]


def test_its_iterations_are_its_steps_without_a_total():
    marks = [(line, step_mark(line)) for line in _lines()]

    assert [(mark.step, mark.total) for _, mark in marks if mark] == [
        (0, None), (0, None), (1, None), (2, None), (3, None), (3, None), (4, None), (5, None), (6, None), (6, None)]
    assert all(mark is None for line, mark in marks if not line.startswith(("iter ", "step ")))


def test_the_recorded_series_puts_each_eval_at_the_step_it_evaluates(tmp_path):
    """The eval line comes before its iteration's own line: read alone, its losses would land on the step before."""
    recorder = MetricRecorder(DEFAULT_METRIC_DEFINITIONS, tmp_path / "metrics.jsonl")
    start = datetime(2026, 11, 28, tzinfo=timezone.utc)
    for index, line in enumerate(_lines()):
        recorder.feed("algo-1", line, start + timedelta(seconds=index))

    points = read_points(tmp_path / "metrics.jsonl")
    assert [(point.step, point.value) for point in points if point.metric == "eval:loss"] == [
        (0, 2.8465), (3, 2.7507), (6, 2.7143)]
    assert [point.step for point in points if point.metric == "train:loss"] == [0, 1, 2, 3, 4, 5, 6]
    assert recorder.steps_seen


def test_like_lines_of_other_scripts_are_read_as_they_were():
    """A step's own train loss printed `step 3: train loss` alone is no eval; `step 1 of 3:` and `step 2:` before
    anything but a loss are no step; the forms read before keep their one reading."""
    assert extract(DEFINITIONS, "step 3: train loss 0.42") == {}
    assert step_mark("step 3: train loss 0.42").step == 3
    assert step_mark("step 1 of 3: loading data") is None
    assert step_mark("step 2: download the dataset") is None
    assert extract(DEFINITIONS, "pretrain loss 0.3, val loss 0.4") == {}
    assert extract(DEFINITIONS, "step=3 loss=0.42 val_loss=0.5") == {"train:loss": 0.42, "eval:loss": 0.5}
    assert step_mark("step=3/10 loss=0.42").total == 10
    assert extract(DEFINITIONS, "[1,mpirank:0,algo-1]<stdout>:iter 3: loss 2.7543, time 1.0ms") == {
        "train:loss": 2.7543}


def test_the_loss_a_bar_and_a_smoke_show_is_the_training_loss_though_the_eval_line_came_first(tmp_path):
    recorder = MetricRecorder(DEFAULT_METRIC_DEFINITIONS, tmp_path / "metrics.jsonl")
    for line in _lines():
        recorder.feed("algo-1", line)

    assert loss_metrics(list(recorder.latest))[0] == "train:loss"
