"""The example notebook, executed by a real Jupyter kernel (the venv's python) against moto's server: plan,
submit, status, wait, logs, attach and plot with smtrain's own API, then the optional SDK v2 estimator."""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

import boto3
import nbformat
import pytest
from job_fakes import seed_logs
from nbclient import NotebookClient

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
KERNEL = "smtrain-venv"


def _stdout(cell) -> str:
    return "".join(output.get("text", "") for output in cell.outputs if output.output_type == "stream")


@pytest.mark.slow  # a Jupyter kernel of its own
def test_submit_from_notebook_runs_end_to_end(aws, tmp_path, monkeypatch):
    # The kernel inherits this process's environment (moto's endpoint, fake credentials); a kernelspec of our
    # own pins it to this interpreter, whatever python3 kernel the machine has.
    spec_dir = tmp_path / "jupyter" / "kernels" / KERNEL
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": KERNEL,
                "language": "python",
            }
        )
    )
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    boto3.client("s3").create_bucket(Bucket="my-bucket")  # the example spec's output bucket
    for override in ("SAGEMAKER_USER_CONFIG_OVERRIDE", "SAGEMAKER_ADMIN_CONFIG_OVERRIDE"):
        # SDK v2 reads them at import (its JumpStart default session) and complains on stdout when missing.
        Path(os.environ[override]).write_text("SchemaVersion: '1.0'\n")
    notebook = nbformat.read(EXAMPLES / "submit_from_notebook.ipynb", as_version=4)
    notebook.cells.insert(0, nbformat.v4.new_code_cell("import sys; print(sys.executable)"))
    client = NotebookClient(
        notebook, kernel_name=KERNEL, timeout=600, resources={"metadata": {"path": str(EXAMPLES)}}
    )

    with client.setup_kernel():
        for index, cell in enumerate(notebook.cells):
            if cell.source.startswith("for line in job.logs()"):
                [job] = boto3.client("sagemaker").list_training_jobs()["TrainingJobSummaries"]
                name = job["TrainingJobName"]
                seed_logs(name, {"algo-1": [(0, "hello from 1")], "algo-2": [(1, "hello from 2")]})
            if cell.source.startswith("again.plot()"):  # what SageMaker publishes from the loss lines
                boto3.client("cloudwatch").put_metric_data(Namespace="/aws/sagemaker/TrainingJobs", MetricData=[
                    {"MetricName": "train:loss", "Dimensions": [{"Name": "TrainingJobName", "Value": name}],
                     "Timestamp": time.time() - 30 + 5 * index, "Value": 1.0 / (index + 1)} for index in range(6)])
            client.execute_cell(cell, index)

    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert _stdout(code[0]).strip() == sys.executable
    assert name.startswith("mlp-gloo-cpu-")
    assert '"TrainingJobName": "' + name in _stdout(code[2])
    # The summary displayed by `job` before any status was read, updated in place by the cells after it.
    [summary] = code[3].outputs
    assert summary["output_type"] == "display_data"
    html = summary["data"]["text/html"]
    assert f"<b>Training job {name}</b>" in html and ">Completed</b> · Completed" in html
    assert f'href="https://us-east-1.console.aws.amazon.com/sagemaker/home?region=us-east-1#/jobs/{name}"' in html
    assert f"logStreamNameFilter$3D{name}" in html and "worst-case cost" in html
    assert summary["data"]["text/plain"].startswith(f"Training job {name}: Completed / Completed")
    assert _stdout(code[5]).startswith("Completed Completed\nCompleted s3://my-bucket/outputs/")
    assert _stdout(code[6]) == "[algo-1] hello from 1\n[algo-2] hello from 2\n"
    assert code[7].outputs[0]["data"]["text/plain"] == "'Completed'"
    assert code[8].outputs[0]["data"]["image/png"]  # the figure of Job.plot(), inline
    [attached] = code[9].outputs  # the attached job's summary, with the loss the plot read
    # (a one-minute average of the points above: which ones share a minute depends on the clock)
    assert re.search(r"<i>latest</i></td><td[^>]*>train:loss = 0\.[0-9]+</td>", attached["data"]["text/html"])
    image = "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training:2.10.0-cpu-py313-ubuntu22.04-sagemaker"
    assert _stdout(code[10]) == f"PyTorch {image}\n"  # the SDK v2 estimator, built only when asked for
    assert len(boto3.client("sagemaker").list_training_jobs()["TrainingJobSummaries"]) == 1
