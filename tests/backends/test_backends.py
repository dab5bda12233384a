"""One job, two places: the same notebook cells, with only `backend=` changed, run the example spec here and on
SageMaker (moto's server), and print the same status-sequence shape, logs, metrics and plot; `smtrain list`
shows local runs beside SageMaker jobs."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import boto3
import nbformat
import pytest
import yaml
from click.testing import CliRunner
from job_fakes import create_jobs, seed_logs
from nbclient import NotebookClient

import orchestrator
from orchestrator.cli.main import main
from orchestrator.observing.metric_series import read_points

REPO = Path(__file__).resolve().parents[2]
KERNEL = "smtrain-backends"
SPEC = REPO / "job_specs" / "mlp-gloo-none-2x-c5.2xlarge.yaml"
OVERRIDES = ["hyperparameters.epochs=1", "hyperparameters.num-samples=512", "hyperparameters.log-every=2"]
RUN = "job = orchestrator.run(orchestrator.load_spec(SPEC, OVERRIDES), backend=BACKEND)"
FOLLOW = """\
seen = []
final = job.wait(poll_seconds=0.5, on_status=lambda current: seen.append((current.status, current.secondary_status)))
print("ended", seen[-1], "after", "InProgress only" if all(status == "InProgress" for status, _ in seen[:-1])
      else seen[:-1])
print("history starts", final.transitions[0].status)
for line in job.logs(tail=3):
    print(line)
points = job.metric_points(["train:loss"])
print("metrics", sorted({point.metric for point in points}), "points", len(points) > 0)
job.plot(["train:loss"])
"""


def _stdout(cell) -> str:
    return "".join(output.get("text", "") for output in cell.outputs if output.output_type == "stream")


def _kernel(tmp_path: Path, monkeypatch) -> None:
    """A kernelspec pinned to this interpreter; the kernel inherits moto's endpoint and fake credentials."""
    spec_dir = tmp_path / "jupyter" / "kernels" / KERNEL
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": KERNEL, "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))


def _publish_as_sagemaker(job_name: str, run_dir: Path) -> None:
    """What SageMaker's platform does for a job whose script printed the local run's lines (moto runs nothing):
    each host's non-empty lines into its CloudWatch stream, the loss values into CloudWatch metrics."""
    seed_logs(job_name, {
        path.stem: [(index, line) for index, line in enumerate(filter(None, path.read_text().splitlines()))]
        for path in sorted((run_dir / "logs").glob("algo-*.log"))})
    losses = [point for point in read_points(run_dir / "metrics.jsonl") if point.metric == "train:loss"]
    boto3.client("cloudwatch").put_metric_data(Namespace="/aws/sagemaker/TrainingJobs", MetricData=[
        {"MetricName": "train:loss", "Dimensions": [{"Name": "TrainingJobName", "Value": job_name}],
         "Timestamp": time.time() - 30 + index, "Value": point.value} for index, point in enumerate(losses)])


@pytest.mark.slow
def test_the_same_cells_with_only_the_backend_changed_print_the_same_shape_logs_metrics_and_plot(
        aws, tmp_path, monkeypatch):
    _kernel(tmp_path, monkeypatch)
    boto3.client("s3").create_bucket(Bucket="my-bucket")  # the example spec's output bucket
    cells = [nbformat.v4.new_code_cell(f"import orchestrator\nSPEC, OVERRIDES = {str(SPEC)!r}, {OVERRIDES!r}")]
    for backend in ("local", "sagemaker"):
        cells += [nbformat.v4.new_code_cell(f"BACKEND = {backend!r}"), nbformat.v4.new_code_cell(RUN),
                  nbformat.v4.new_code_cell(FOLLOW)]
    notebook = nbformat.v4.new_notebook(cells=cells)
    client = NotebookClient(notebook, kernel_name=KERNEL, timeout=300,
                            resources={"metadata": {"path": str(tmp_path)}})

    with client.setup_kernel():
        for index, cell in enumerate(notebook.cells[:4]):
            client.execute_cell(cell, index)
        [run_dir] = (tmp_path / "runs").iterdir()
        for index, cell in enumerate(notebook.cells[4:6], start=4):
            client.execute_cell(cell, index)
        [job] = boto3.client("sagemaker").list_training_jobs()["TrainingJobSummaries"]
        _publish_as_sagemaker(job["TrainingJobName"], run_dir)
        client.execute_cell(notebook.cells[6], 6)

    local, cloud = _stdout(notebook.cells[3]), _stdout(notebook.cells[6])
    assert local == cloud
    lines = local.splitlines()
    assert lines[:2] == ["ended ('Completed', 'Completed') after InProgress only", "history starts Starting"]
    assert lines[2].startswith("[algo-1] epoch=1 step=4/4 train_loss=") and lines[5].startswith("[algo-2] ")
    assert lines[-1] == "metrics ['train:loss'] points True"
    for cell in (notebook.cells[3], notebook.cells[6]):
        [figure] = [output for output in cell.outputs if output.output_type == "execute_result"]
        assert figure["data"]["image/png"]  # the figure of Job.plot(), for both
    assert json.loads((run_dir / "result.json").read_text())["status"] == "Completed"
    assert job["TrainingJobName"].startswith("mlp-gloo-cpu-")


def test_smtrain_list_shows_local_runs_beside_sagemaker_jobs(tiny_plan, aws, tmp_path, monkeypatch):
    create_jobs(tiny_plan.create_training_job_request, ["cloud-a"])
    monkeypatch.chdir(tmp_path)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text("print('epoch=1 step=1/1 train_loss=0.5')\n")
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump({
        "name": "here", "entry_point": "train.py", "source_dir": "src", "framework_version": "2.10.0",
        "instance": {"type": "ml.c5.2xlarge", "count": 2}}))
    local = orchestrator.run(str(tmp_path / "spec.yaml"), backend="local")
    assert local.wait(poll_seconds=0.1).status == "Completed"

    both = CliRunner().invoke(main, ["list"])
    only_local = CliRunner().invoke(main, ["list", "--local", "-o", "json"])
    only_cloud = CliRunner().invoke(main, ["list", "--cloud"])

    assert both.exit_code == 0, both.output
    header, *rows = both.stdout.splitlines()
    assert header.split() == ["NAME", "STATUS", "CREATED", "WHERE"]
    [cloud] = [row for row in rows if row.startswith("cloud-a ")]
    [here] = [row for row in rows if row.startswith(f"{local.name}  Completed ")]
    assert len(rows) == 2 and cloud.endswith("  sagemaker") and here.endswith(f"  local {local.id}")
    assert [(row["job_name"], row["backend"]) for row in json.loads(only_local.stdout)] == [(local.name, "local")]
    assert only_cloud.stdout.splitlines()[1].split()[:2] == ["cloud-a", "Completed"]
    assert len(only_cloud.stdout.splitlines()) == 2 and "WHERE" not in only_cloud.stdout


def test_smtrain_logs_host_and_tail_on_a_sagemaker_job(tiny_plan, aws):
    create_jobs(tiny_plan.create_training_job_request, ["tiny-logs"])
    seed_logs("tiny-logs", {"algo-1": [(0, "a1"), (2, "a2"), (4, "a3")], "algo-2": [(1, "b1"), (3, "b2"), (5, "b3")]})

    tailed = CliRunner().invoke(main, ["logs", "tiny-logs", "--tail", "2"])
    one_host = CliRunner().invoke(main, ["logs", "tiny-logs", "--host", "algo-2", "--tail", "1"])
    followed = CliRunner().invoke(main, ["logs", "tiny-logs", "--host", "algo-1", "--follow", "--poll-seconds", "0"])

    assert tailed.exit_code == 0, tailed.output
    assert tailed.stdout.splitlines() == ["[algo-1] a2", "[algo-1] a3", "[algo-2] b2", "[algo-2] b3"]
    assert one_host.stdout.splitlines() == ["[algo-2] b3"]
    assert followed.stdout.splitlines() == ["[algo-1] a1", "[algo-1] a2", "[algo-1] a3"]


def test_list_max_counts_local_runs_and_sagemaker_jobs_together_newest_first(tiny_plan, aws, tmp_path, monkeypatch):
    """Issue 31: `--max N` is N rows in all, newest first across both places, in one JSON document."""
    from datetime import datetime, timedelta, timezone

    from orchestrator.contract import RUN_MARKER_FILE

    create_jobs(tiny_plan.create_training_job_request, ["cloud-a", "cloud-b"])
    monkeypatch.chdir(tmp_path)
    for name, hours in (("local-newest", 1), ("local-oldest", -48)):
        run_dir = tmp_path / "runs" / name
        (run_dir / "logs").mkdir(parents=True)
        (run_dir / RUN_MARKER_FILE).write_text("")
        created = (datetime.now(timezone.utc) + timedelta(hours=hours)).isoformat()
        (run_dir / "status.json").write_text(json.dumps({
            "TrainingJobName": name, "TrainingJobStatus": "Completed", "SecondaryStatus": "Completed",
            "CreationTime": created, "SecondaryStatusTransitions": [],
            "ResourceConfig": {"InstanceType": "ml.c5.2xlarge", "InstanceCount": 1}}))

    every = CliRunner().invoke(main, ["list", "-o", "json"])
    limited = CliRunner().invoke(main, ["list", "--max", "2", "-o", "json"])

    assert every.exit_code == 0 and limited.exit_code == 0, every.output + limited.output
    names = [row["job_name"] for row in json.loads(every.stdout)]
    assert names[0] == "local-newest" and names[-1] == "local-oldest" and set(names[1:3]) == {"cloud-a", "cloud-b"}
    assert [row["job_name"] for row in json.loads(limited.stdout)] == names[:2]


def test_a_host_the_job_does_not_have_is_an_input_error_on_both_backends(tiny_plan, aws, tmp_path, monkeypatch):
    """`logs --host algo-7` of a 2-host job: exit 2 naming the job's hosts, on SageMaker and locally alike (before,
    "no log lines for JOB yet", exit 0, as if algo-7's lines might still come); `Job.logs` raises the same."""
    from orchestrator.contract import RUN_MARKER_FILE
    from orchestrator.errors import SmtrainError

    create_jobs(tiny_plan.create_training_job_request, ["cloud-two"])
    seed_logs("cloud-two", {"algo-1": [(0, "a1")], "algo-2": [(1, "b1")]})
    monkeypatch.chdir(tmp_path)
    run_dir = tmp_path / "runs" / "local-two"
    (run_dir / "logs").mkdir(parents=True)
    (run_dir / RUN_MARKER_FILE).write_text("")
    (run_dir / "logs" / "algo-1.log").write_text("a1\n")
    (run_dir / "status.json").write_text(json.dumps({
        "TrainingJobName": "local-two", "TrainingJobStatus": "Completed", "SecondaryStatus": "Completed",
        "CreationTime": "2026-11-26T10:00:00+00:00", "SecondaryStatusTransitions": [],
        "ResourceConfig": {"InstanceType": "ml.c5.2xlarge", "InstanceCount": 2}}))

    for job in ("sagemaker:cloud-two", "local:local-two"):
        for extra in ([], ["--tail", "5"], ["--follow", "--poll-seconds", "0"], ["-o", "json"]):
            result = CliRunner().invoke(main, ["logs", job, "--host", "algo-7", *extra])

            assert result.exit_code == 2, (job, extra, result.output)
            assert "yet" not in result.output
            assert "has no host algo-7: its hosts are algo-1, algo-2" in result.output, result.output
        with pytest.raises(SmtrainError, match="has no host algo-7: its hosts are algo-1, algo-2"):
            list(orchestrator.attach(job).logs(host="algo-7"))
    assert CliRunner().invoke(main, ["logs", "local:local-two", "--host", "algo-2"]).stderr == (
        "no log lines for local:local-two on algo-2: it ended (Completed) without writing any\n")
