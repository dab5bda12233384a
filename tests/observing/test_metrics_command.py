"""`smtrain metrics JOB|RUN_DIR`, Job.metrics() and Job.plot(): CloudWatch series on moto's server (PutMetricData,
then GetMetricData), local series from a run directory, and the PNG checked to hold a plot."""

from __future__ import annotations

import importlib.metadata
import json
import shlex
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import boto3
import pytest
from click.testing import CliRunner
from job_fakes import create_jobs, described

import orchestrator
from orchestrator.cli.main import main
from orchestrator import Job
from orchestrator.cloud.metrics import JOB_DIMENSION, NAMESPACE
from orchestrator.contract import DEFAULT_METRIC_DEFINITIONS, RUN_MARKER_FILE
from orchestrator.observing.metric_series import METRICS_FILE, MetricRecorder

LOSSES = [0.9, 0.7, 0.52, 0.41, 0.33, 0.3]


def smtrain(*args: str, obj=None):
    return CliRunner().invoke(main, list(args), obj=obj)


def progress_lines() -> list[str]:
    return [f"epoch=1 step={10 * (index + 1)}/60 train_loss={loss:.6f} samples_per_sec={1000 + index}.0"
            for index, loss in enumerate(LOSSES)]


def record_local_run(run_dir, start: datetime) -> list:
    """What `smtrain local` keeps: the lines' points, each stamped when its line arrived (one per 5 s here)."""
    run_dir.mkdir()
    recorder = MetricRecorder(DEFAULT_METRIC_DEFINITIONS, run_dir / METRICS_FILE)
    return [point for index, line in enumerate(progress_lines())
            for point in recorder.feed("algo-1", line, start + timedelta(seconds=5 * index))]


def publish(job_name: str, points) -> None:
    """What SageMaker does with the values its metric definitions read from the job's log lines."""
    boto3.client("cloudwatch").put_metric_data(Namespace=NAMESPACE, MetricData=[
        {"MetricName": point.metric, "Dimensions": [{"Name": JOB_DIMENSION, "Value": job_name}],
         "Timestamp": point.time, "Value": point.value} for point in points])


def dark_pixels(png) -> int:
    from matplotlib.image import imread

    pixels = imread(str(png))[..., :3]
    return int((pixels.sum(axis=-1) < 2.4).sum())  # not white or near-white


@pytest.fixture
def job_with_metrics(aws, tiny_request, tmp_path):
    """Job tiny-m on moto, whose CloudWatch metrics are those of a local run of the same lines."""
    create_jobs(tiny_request, ["tiny-m"])
    # moto stamps TrainingStartTime and TrainingEndTime at creation: keep the points inside that minute.
    start = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(seconds=40)
    points = record_local_run(tmp_path / "run", start)
    publish("tiny-m", points)
    return tmp_path / "run", points


def test_metrics_of_a_job_and_of_its_local_run_agree(job_with_metrics):
    run_dir, _ = job_with_metrics

    cloud = smtrain("metrics", "tiny-m", "--period", "1", "-o", "json")
    local = smtrain("metrics", str(run_dir), "-o", "json")

    assert cloud.exit_code == 0, cloud.output
    assert local.exit_code == 0, local.output

    def series(output: str) -> list[tuple]:
        # Sorted: CloudWatch's order of metrics follows the job's definitions, which moto replaces (sdk-facts §9).
        return sorted((row["metric"], row["timestamp"], row["value"]) for row in json.loads(output))

    assert series(cloud.stdout) == series(local.stdout)
    assert [value for metric, _, value in series(cloud.stdout) if metric == "train:loss"] == LOSSES
    assert {row["step"] for row in json.loads(local.stdout)} == {10, 20, 30, 40, 50, 60}


def test_metrics_of_a_job_averages_per_period_by_default(job_with_metrics):
    per_minute = json.loads(smtrain("metrics", "tiny-m", "--metric", "train:loss", "-o", "json").stdout)

    assert {row["metric"] for row in per_minute} == {"train:loss"}
    assert 1 <= len(per_minute) <= 2 < len(LOSSES)  # 25 s of points fall into one or two minutes
    assert min(LOSSES) <= min(row["value"] for row in per_minute) <= max(LOSSES)


def test_metrics_text_shows_a_summary_and_the_loss_curve_and_writes_a_png(job_with_metrics, tmp_path):
    png = tmp_path / "loss.png"

    shown = smtrain("metrics", "tiny-m", "--period", "1", "--plot", str(png))

    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.splitlines()
    assert lines[0] == "tiny-m: 18 points of 3 metrics (CloudWatch /aws/sagemaker/TrainingJobs, 1 s averages)"
    assert ["train:loss", "6", "0.9", "0.3", "0.9", "0.3"] in [line.split() for line in lines[2:5]]
    chart = shown.stdout.split("\ntrain:loss\n", 1)[1]
    assert sum(0x2800 < ord(char) <= 0x28FF for char in chart) >= 10
    assert f"plot written to {png}" in shown.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert dark_pixels(png) > 2000, "the PNG holds axes, labels and three curves, not a blank canvas"


def test_metrics_csv_of_a_local_run_has_one_row_per_point(tmp_path):
    record_local_run(tmp_path / "run", datetime(2026, 1, 1, tzinfo=timezone.utc))

    table = smtrain("metrics", str(tmp_path / "run"), "-o", "csv", "--metric", "train:loss")

    assert table.exit_code == 0, table.output
    rows = table.stdout.splitlines()
    assert rows[0] == "metric,value,timestamp,step,host"
    assert rows[1] == "train:loss,0.9,2026-01-01T00:00:00+00:00,10,algo-1" and len(rows) == 1 + len(LOSSES)


def test_metrics_png_of_a_local_run_is_a_plot(tmp_path):
    record_local_run(tmp_path / "run", datetime(2026, 1, 1, tzinfo=timezone.utc))
    blank = tmp_path / "blank.png"
    from matplotlib.figure import Figure

    Figure(figsize=(8, 7.8)).savefig(blank, dpi=100)
    png = tmp_path / "run.png"

    result = smtrain("metrics", str(tmp_path / "run"), "--plot", str(png), "-o", "json")

    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)  # --plot adds the image; stdout still holds the JSON
    assert dark_pixels(blank) == 0 and dark_pixels(png) > 2000


def test_metrics_errors_are_one_message(aws, tmp_path):
    not_a_run = smtrain("metrics", str(tmp_path))
    unknown = smtrain("metrics", "nope")

    assert not_a_run.exit_code == 2 and f"{tmp_path} has no metrics.jsonl" in not_a_run.stderr
    assert unknown.exit_code == 2 and "no training job named nope in us-east-1" in unknown.stderr
    assert "Traceback" not in not_a_run.output + unknown.output


def test_metrics_of_an_ended_job_without_data_says_it_ended_not_yet(aws, tiny_request):
    """moto's job is Completed: "none published yet" promised values that an ended job may never get."""
    create_jobs(tiny_request, ["tiny-empty"])

    result = smtrain("metrics", "tiny-empty")

    assert result.exit_code == 0 and result.stdout == ""
    assert "no metric data for tiny-empty (CloudWatch" in result.stderr
    assert "none published: the job ended (Completed); SageMaker publishes values a few minutes after" in result.stderr
    assert "yet" not in result.stderr


def ended_run_without_points(run_dir, definitions: list[dict]) -> None:
    """A local run that completed with an empty metrics.jsonl: none of its lines matched its definitions."""
    run_dir.mkdir()
    (run_dir / RUN_MARKER_FILE).write_text("")
    (run_dir / METRICS_FILE).write_text("")
    (run_dir / "status.json").write_text(json.dumps({
        "TrainingJobName": "quiet", "TrainingJobStatus": "Completed", "SecondaryStatus": "Completed",
        "CreationTime": "2026-01-01T00:00:00+00:00", "SecondaryStatusTransitions": [],
        "AlgorithmSpecification": {"MetricDefinitions": definitions},
        "ResourceConfig": {"InstanceType": "ml.c5.xlarge", "InstanceCount": 1}}))


def test_metrics_of_an_ended_local_run_whose_lines_matched_nothing_say_so_not_wait_for_sagemaker(tmp_path):
    ended_run_without_points(tmp_path / "run", [{"Name": "val:acc", "Regex": "val_acc=([0-9.]+)"}])

    empty = smtrain("metrics", str(tmp_path / "run"))
    unknown = smtrain("metrics", str(tmp_path / "run"), "--metric", "train:loss")

    assert empty.exit_code == 0 and empty.stdout == ""
    assert "SageMaker" not in empty.stderr and "yet" not in empty.stderr
    assert "no line of the run matched its metric definitions (val:acc); `metrics:` in the job spec" in empty.stderr
    assert unknown.exit_code == 2 and unknown.stdout == ""
    assert f"{tmp_path / 'run'} has no metric train:loss: its metric definitions are val:acc" in unknown.stderr


def test_a_mistyped_metric_of_a_local_run_with_data_is_bad_input_naming_its_definitions(tmp_path):
    """`--metric train:los` of a run that has train:loss points exited 0 with 'no metric data'."""
    record_local_run(tmp_path / "run", datetime(2026, 1, 1, tzinfo=timezone.utc))
    (tmp_path / "run" / "status.json").write_text(json.dumps({
        "TrainingJobName": "run", "TrainingJobStatus": "Completed", "SecondaryStatus": "Completed",
        "CreationTime": "2026-01-01T00:00:00+00:00", "SecondaryStatusTransitions": [],
        "AlgorithmSpecification": {"MetricDefinitions": DEFAULT_METRIC_DEFINITIONS},
        "ResourceConfig": {"InstanceType": "ml.c5.xlarge", "InstanceCount": 1}}))

    typo = smtrain("metrics", str(tmp_path / "run"), "--metric", "train:los")
    typo_json = smtrain("metrics", str(tmp_path / "run"), "--metric", "train:los", "-o", "json")

    defined = ", ".join(item["Name"] for item in DEFAULT_METRIC_DEFINITIONS)
    assert typo.exit_code == 2 and typo.stdout == ""
    assert f"has no metric train:los: its metric definitions are {defined}" in typo.stderr
    assert "no metric data" not in typo.stderr
    assert typo_json.exit_code == 2 and "train:loss" in json.loads(typo_json.stdout)["error"]["message"]


def test_metrics_of_a_name_the_job_does_not_define_names_the_ones_it_does(stubbed_sagemaker):
    """A mistyped --metric read only "no metric data for JOB yet ... a few minutes after the lines are logged",
    as if waiting would help; then it named the definitions but exited 0, as if the data were merely missing."""
    job = described("tiny-typo", "Completed", "Completed")
    job["AlgorithmSpecification"]["MetricDefinitions"] = [
        {"Name": "train:loss", "Regex": "loss=(\\S+)"}, {"Name": "train:lr", "Regex": "lr=(\\S+)"}]
    stubbed_sagemaker.stubbers["sagemaker"].add_response("describe_training_job", job)

    result = smtrain("metrics", "tiny-typo", "--metric", "train:los", obj=stubbed_sagemaker)

    assert result.exit_code == 2, result.output
    assert "tiny-typo has no metric train:los: its metric definitions are train:loss, train:lr" in result.stderr
    assert "no metric data" not in result.stderr


def test_plot_without_matplotlib_says_how_to_install_it(tmp_path, monkeypatch):
    record_local_run(tmp_path / "run", datetime(2026, 1, 1, tzinfo=timezone.utc))
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)

    result = smtrain("metrics", str(tmp_path / "run"), "--plot", str(tmp_path / "x.png"))

    assert result.exit_code == 2 and "plotting needs matplotlib" in result.stderr
    # smtrain is on no index: only this environment's pip, where smtrain is installed, can add the extra
    assert f"To fix: {shlex.quote(sys.executable)} -m pip install 'smtrain[plot]' (or matplotlib)" in result.stderr


def test_plot_without_matplotlib_run_from_an_uninstalled_clone_installs_the_extra_from_that_clone(tmp_path,
                                                                                                 monkeypatch):
    record_local_run(tmp_path / "run", datetime(2026, 1, 1, tzinfo=timezone.utc))
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)

    def not_installed(name: str):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", not_installed)  # smtrain on PYTHONPATH only

    result = smtrain("metrics", str(tmp_path / "run"), "--plot", str(tmp_path / "x.png"))

    clone = Path(orchestrator.__file__).resolve().parents[1]
    assert f"To fix: {shlex.quote(sys.executable)} -m pip install '{clone}[plot]' (or matplotlib)" in result.stderr


def test_job_metrics_is_a_dataframe_plot_is_a_figure_and_repr_shows_the_latest_loss(job_with_metrics):
    job = Job.attach("tiny-m")

    frame = job.metrics(period_seconds=1)
    drawn = job.plot(["train:loss"], period_seconds=1)

    assert list(frame[frame.metric == "train:loss"].value) == LOSSES
    assert frame.timestamp.is_monotonic_increasing is False  # metric by metric, each in time order
    assert [axis.get_ylabel() for axis in drawn.axes] == ["train:loss"]
    assert list(drawn.axes[0].lines[0].get_ydata()) == LOSSES
    assert repr(job) == "Job('tiny-m', region='us-east-1', status='Completed', train:loss='0.3')"
    assert "train:loss = 0.3" in job._repr_html_()
