"""`smtrain plan` takes several spec files, as `validate` does: a CI step plans every spec in one call, each plan
under its file's heading (one JSON list under `-o json`), a refused file named, never planned, and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from orchestrator.cli.main import main
from orchestrator.cloud import resolve

SPECS = Path(__file__).resolve().parents[2] / "job_specs"
GLOO, MPI = str(SPECS / "mlp-gloo-none-2x-c5.2xlarge.yaml"), str(SPECS / "mpi-demo-mpi-3x-c5.2xlarge.yaml")


def _refused(tmp_path: Path) -> str:
    (tmp_path / "bad.yaml").write_text("name: bad\nentry_point: t.py\ninstance: {type: ml.c5.2xlarge, count: 0}\n")
    return str(tmp_path / "bad.yaml")


def _planning_recorded(monkeypatch) -> list[str]:
    """The names of the specs that reached planning, where a role or output path may be read from AWS."""
    planned: list[str] = []
    plan_on_sagemaker = resolve.plan_on_sagemaker

    def recording(loaded, *args, **kwargs):
        planned.append(loaded.spec.name)
        return plan_on_sagemaker(loaded, *args, **kwargs)

    monkeypatch.setattr(resolve, "plan_on_sagemaker", recording)
    return planned


def test_each_plan_under_its_files_heading_and_a_refused_file_named(tmp_path, monkeypatch):
    planned = _planning_recorded(monkeypatch)
    bad = _refused(tmp_path)
    result = CliRunner().invoke(main, ["plan", GLOO, bad, MPI, "--region", "us-east-1"])

    assert result.exit_code == 2, result.output
    headings = [line for line in result.stdout.splitlines() if line.startswith("==> ")]
    assert headings == [f"==> {GLOO} <==", f"==> {bad} <==", f"==> {MPI} <=="]
    assert result.stdout.count("plan for mlp-gloo-cpu-") == 1 and result.stdout.count("plan for mpi-demo-") == 1
    assert f"Error in {bad}: 1 problem in the job spec" in result.stderr
    assert planned == ["mlp-gloo-cpu", "mpi-demo"], "a refused file was planned"


def test_json_is_one_list_of_plans_and_errors_by_file(tmp_path):
    bad = _refused(tmp_path)
    result = CliRunner().invoke(main, ["plan", GLOO, bad, "--region", "us-east-1", "-o", "json"])

    assert result.exit_code == 2, result.output
    good, refused = json.loads(result.stdout)
    assert good["file"] == GLOO and good["error"] is None
    assert good["plan"]["create_training_job_request"]["ResourceConfig"]["InstanceCount"] == 2
    assert refused["file"] == bad and refused["plan"] is None
    assert refused["error"]["field"] == "instance.count" and refused["error"]["file"] == bad


def test_every_file_planned_exits_0():
    result = CliRunner().invoke(main, ["plan", GLOO, MPI, "--region", "us-east-1", "-o", "json"])
    assert result.exit_code == 0, result.output
    assert [report["error"] for report in json.loads(result.stdout)] == [None, None]
