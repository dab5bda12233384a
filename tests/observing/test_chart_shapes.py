"""Charts that read right: the epoch panel as steps with whole-number ticks, one point per step (the closing
`final train_loss=` line is not a point of the curve), and Job.plot() on a job without data says so."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from orchestrator.backends.job import Job
from orchestrator.contract import DEFAULT_METRIC_DEFINITIONS
from orchestrator.errors import SmtrainError
from orchestrator.observing.metric_charts import figure, text_chart
from orchestrator.observing.metric_series import METRICS_FILE, MetricRecorder, read_points

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
LINES = [f"epoch={1 + (step - 1) // 4} step={step}/8 train_loss={1 / step:.6f} samples_per_sec=10.0"
         for step in range(1, 9)] + ["smtrain: final train_loss=0.900000 steps=8 epochs=2"]


@pytest.fixture
def points(tmp_path):
    recorder = MetricRecorder(DEFAULT_METRIC_DEFINITIONS, tmp_path / METRICS_FILE)
    for index, line in enumerate(LINES):
        recorder.feed("algo-1", line, T0 + timedelta(seconds=index))
    return read_points(tmp_path / METRICS_FILE)


def test_the_final_loss_line_is_not_a_point_of_the_curve(points):
    loss = [point for point in points if point.metric == "train:loss"]
    assert len(loss) == 9 and loss[-1].step == 8  # the series keeps what was logged
    drawn = figure(points, ["train:loss"])
    (line,) = drawn.axes[0].get_lines()
    assert list(line.get_xdata()) == [float(step) for step in range(1, 9)]
    assert line.get_ydata()[-1] == pytest.approx(1 / 8)
    chart = text_chart(loss)
    assert "0.9" not in chart.splitlines()[0]  # the top of the y range is the first step's 1.0, not a spike


def test_the_epoch_panel_is_drawn_as_steps_with_whole_number_ticks(points):
    drawn = figure(points, ["train:loss", "train:epoch"])
    epoch_axis = drawn.axes[1]
    drawn.canvas.draw()
    (line,) = epoch_axis.get_lines()
    assert line.get_drawstyle() == "steps-post"
    ticks = [tick for tick in epoch_axis.get_yticks() if epoch_axis.get_ylim()[0] <= tick <= epoch_axis.get_ylim()[1]]
    assert ticks and all(float(tick).is_integer() for tick in ticks)


def test_job_plot_without_data_says_so(monkeypatch):
    job_class = Job
    job = job_class.__new__(job_class)
    monkeypatch.setattr(job_class, "name", "quiet-job", raising=False)
    monkeypatch.setattr(job, "metric_points", lambda *args: [], raising=False)
    with pytest.raises(SmtrainError, match="no metric data for quiet-job yet: nothing to plot"):
        job.plot()


def test_a_figure_of_names_without_points_says_so(points):
    with pytest.raises(SmtrainError, match="no metric data yet"):
        figure(points, ["val:loss"])
