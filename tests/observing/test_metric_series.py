"""observing.metric_series and metric_charts: SageMaker's metric rule on log lines, progress and ETA, the
saved series, and the terminal chart. Pure: no process, no AWS."""

from __future__ import annotations

import sys
import threading
from datetime import datetime, timedelta, timezone

import pytest

from orchestrator.contract import DEFAULT_METRIC_DEFINITIONS
from orchestrator.observing.epochs import EpochMark
from orchestrator.observing.metric_charts import text_chart
from orchestrator.observing.metric_series import (
    MetricPoint,
    MetricRecorder,
    StepMark,
    compile_definitions,
    estimate_progress,
    extract,
    read_points,
    step_mark,
    summarize,
    to_csv,
    to_frame,
)

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
DEFAULTS = compile_definitions(DEFAULT_METRIC_DEFINITIONS)


@pytest.mark.parametrize(("line", "expected"), [
    ("epoch=2 step=40/96 train_loss=0.123456 samples_per_sec=1520.3",
     {"train:loss": 0.123456, "train:samples_per_sec": 1520.3, "train:epoch": 2.0}),
    # mpirun --tag-output prefixes every line: the regexes are searched, not anchored, as SageMaker does.
    ("[1,0]<stdout>:epoch=1 step=3/9 train_loss=1.5e-03 samples_per_sec=10.0",
     {"train:loss": 0.0015, "train:samples_per_sec": 10.0, "train:epoch": 1.0}),
    ("epoch=1 step=3/9 train_loss=nan samples_per_sec=inf", {"train:epoch": 1.0}),
    ("smtrain: resumed from ckpt-40.pt", {}),
])
def test_extract_applies_every_definition_searched_with_group_one(line, expected):
    assert extract(DEFAULTS, line) == expected


def test_extract_skips_a_definition_without_a_group_and_a_value_that_is_not_a_number():
    definitions = compile_definitions([{"Name": "no-group", "Regex": r"loss=\S+"},
                                       {"Name": "word", "Regex": r"loss=(\w+)"},
                                       {"Name": "ok", "Regex": r"acc=(\S+)"}])

    assert extract(definitions, "loss=high acc=0.5") == {"ok": 0.5}


def test_step_mark_reads_step_total_and_epoch():
    assert step_mark("epoch=3 step=40/96 train_loss=0.1") == StepMark(40, 96, EpochMark(3, form="value"))
    assert step_mark("step=7/8") == StepMark(7, 8, None)
    assert step_mark("substep=7/8") is None and step_mark("no progress") is None


def test_estimate_progress_measures_the_rate_since_the_last_restart():
    marks = [(T0 + timedelta(seconds=seconds), StepMark(step, 100, EpochMark(1))) for seconds, step in
             [(0, 10), (10, 30), (20, 50),  # 2 steps/s, then a spot restart from the step-40 checkpoint:
              (60, 40), (70, 45), (80, 50)]]  # 0.5 steps/s since

    estimate = estimate_progress(marks, epochs=3)

    assert (estimate.step, estimate.total, estimate.epoch, estimate.epochs) == (50, 100, 1, 3)
    assert estimate.steps_per_second == pytest.approx(0.5)
    assert estimate.remaining_seconds == pytest.approx(100)
    assert estimate.finish_time() == T0 + timedelta(seconds=180)
    assert estimate.eta_seconds(T0 + timedelta(seconds=100)) == pytest.approx(80)
    assert estimate.eta_seconds(T0 + timedelta(seconds=500)) == 0
    assert estimate.to_dict(T0 + timedelta(seconds=80))["percent"] == 50.0


def test_estimate_progress_without_two_distinct_steps_has_no_rate():
    single = estimate_progress([(T0, StepMark(5, 10, EpochMark(1)))])

    assert single.steps_per_second is None and single.remaining_seconds is None
    assert estimate_progress([]) is None


def test_recorder_saves_each_point_with_step_host_and_time_and_reads_back(tmp_path):
    path = tmp_path / "metrics.jsonl"
    recorder = MetricRecorder(DEFAULT_METRIC_DEFINITIONS, path)

    recorder.feed("algo-1", "epoch=1 step=1/4 train_loss=0.9 samples_per_sec=100.0", T0)
    recorder.feed("algo-2", "a line without metrics", T0)
    recorder.feed("algo-1", "epoch=1 step=2/4 train_loss=0.5 samples_per_sec=110.0", T0 + timedelta(seconds=1))
    recorder.feed("algo-1", "smtrain: final train_loss=0.45 steps=2", T0 + timedelta(seconds=2))
    with path.open("a") as handle:
        handle.write('{"metric": "train:loss", "val')  # a run killed in mid-write

    points = read_points(path)
    assert recorder.latest == {"train:loss": 0.45, "train:samples_per_sec": 110.0, "train:epoch": 1.0}
    # SageMaker's rule reads the closing line too; it sits at the step logged last.
    assert [(point.metric, point.value, point.step) for point in points if point.metric == "train:loss"] == [
        ("train:loss", 0.9, 1), ("train:loss", 0.5, 2), ("train:loss", 0.45, 2)]
    assert points[0] == MetricPoint("train:loss", 0.9, T0, 1, "algo-1", epoch=1)
    summary = {item.metric: item for item in summarize(points)}
    assert (summary["train:loss"].points, summary["train:loss"].first, summary["train:loss"].last) == (3, 0.9, 0.45)
    assert to_csv(points).splitlines()[:2] == ["metric,value,timestamp,step,host",
                                               "train:loss,0.9,2026-01-01T00:00:00+00:00,1,algo-1"]


def test_to_frame_is_a_dataframe_with_pandas_and_rows_without(monkeypatch):
    points = [MetricPoint("train:loss", 0.5, T0, 3, "algo-1")]

    frame = to_frame(points)
    assert list(frame.columns) == ["metric", "value", "timestamp", "step", "host"]
    assert frame.loc[0, "value"] == 0.5
    monkeypatch.setitem(sys.modules, "pandas", None)  # `import pandas` now raises ImportError
    assert to_frame(points) == [{"metric": "train:loss", "value": 0.5, "timestamp": T0, "step": 3, "host": "algo-1"}]


def test_text_chart_draws_a_falling_curve_from_top_left_to_bottom_right():
    points = [MetricPoint("train:loss", 1.0 / step, None, step) for step in range(1, 41)]

    lines = text_chart(points, width=40, height=6).splitlines()

    assert lines[0].lstrip().startswith("1 ┤") and lines[5].lstrip().startswith("0.025 ┤")
    plot = [line.split("┤" if "┤" in line else "│", 1)[1] for line in lines[:6]]
    assert plot[0][0] != " " and plot[5].rstrip()[-1] != " "  # starts top left, ends bottom right
    assert all(char == " " or 0x2800 < ord(char) <= 0x28FF for row in plot for char in row)
    assert lines[-1].split() == ["1", "40", "step"]


def test_hosts_feeding_at_once_record_every_point_and_one_of_them_claims_the_first_match(tmp_path):
    """A local run reads each host's log on a thread of its own, all feeding one recorder: the recognized format
    is said once (it was said twice on a 2-host run when both hosts' first lines came together)."""
    recorder = MetricRecorder(DEFAULT_METRIC_DEFINITIONS, tmp_path / "metrics.jsonl")
    claims = []

    def host(name: str) -> None:
        for step in range(1, 301):
            if recorder.feed(name, f"epoch=1 step={step}/300 train_loss=0.5"):
                claims.append(recorder.claim_first_match())

    threads = [threading.Thread(target=host, args=(f"algo-{index}",)) for index in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert claims.count(True) == 1 and len(claims) == 600
    assert len([point for point in read_points(tmp_path / "metrics.jsonl") if point.metric == "train:loss"]) == 600
