"""Scripts written for SageMaker by other people run unchanged in the emulator."""

from __future__ import annotations

import json
import tarfile

import pytest

from orchestrator.emulator.local_run import Options, run_local
from orchestrator.specs.loader import load

pytestmark = pytest.mark.slow


def test_sm_hosts_script_trains_over_gloo_on_two_hosts(make_spec, tmp_path):
    result = run_local(load(make_spec("sagemaker_hosts_script.py", count=2)), Options(run_dir=tmp_path / "run"))
    assert result.status == "Completed", result.failure_reason
    reports = [json.loads((result.run_dir / host / "output/data" / f"weights-{host}.json").read_text())
               for host in ("algo-1", "algo-2")]
    assert [report["rank"] for report in reports] == [0, 1]
    assert all(report["world_size"] == 2 for report in reports)
    assert reports[0]["weights"] == reports[1]["weights"]
    with tarfile.open(result.model_artifact) as tar:
        assert tar.getnames() == ["model.pth"]
    with tarfile.open(result.output_artifact) as tar:
        assert sorted(tar.getnames()) == ["weights-algo-1.json", "weights-algo-2.json"]


def test_torchrun_style_ddp_script(make_spec, tmp_path):
    spec = make_spec("torchrun_ddp_script.py", mode="torch_distributed", instance="ml.g5.12xlarge", count=2)
    result = run_local(load(spec), Options(run_dir=tmp_path / "run", processes_per_host=2))
    assert result.status == "Completed", result.failure_reason
    reports = [json.loads(path.read_text()) for path in sorted(result.run_dir.glob("algo-*/output/data/*.json"))]
    assert sorted(report["rank"] for report in reports) == [0, 1, 2, 3]
    assert {report["world_size"] for report in reports} == {4}
    assert sorted(report["local_rank"] for report in reports) == [0, 0, 1, 1]
    assert len({tuple(report["weights"]) for report in reports}) == 1
    # a run killed before it wrote its cause has it read from the logs by these (observing/root_cause.launcher_of)
    assert json.loads((result.run_dir / "status.json").read_text())["LocalRun"]["processes_per_host"] == 2


def test_mpi4py_script_across_three_hosts(make_spec, tmp_path):
    spec = make_spec("mpi4py_script.py", mode="mpi", count=3, distribution={"mode": "mpi", "processes_per_host": 2})
    result = run_local(load(spec), Options(run_dir=tmp_path / "run"))
    assert result.status == "Completed", result.failure_reason
    report = json.loads((result.run_dir / "algo-1/model/allreduce.json").read_text())
    assert report["size"] == 6 and report["sum"] == 15
    assert [item["local_rank"] for item in report["ranks"]] == [0, 1, 0, 1, 0, 1]
