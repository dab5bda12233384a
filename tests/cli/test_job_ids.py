"""A job id names its backend (`local:RUN`, `sagemaker:NAME`, or `--backend`), and every verb and
`orchestrator.attach` take one; a bare name keeps working where it is unambiguous, and one that is both a local run
and a SageMaker job (asked only with an explicit --region) is bad input that names both ids."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from job_fakes import create_jobs, seed_logs

import orchestrator
from orchestrator.backends.resolve import AmbiguousJob
from orchestrator.cli.main import main
from orchestrator.contract import RUN_MARKER_FILE


def finished_run(root: Path, name: str, status: str = "Completed") -> Path:
    """A finished run directory under root/runs/ as `smtrain local` leaves it: status.json, one host's log."""
    run_dir = root / "runs" / name
    (run_dir / "logs").mkdir(parents=True)
    (run_dir / RUN_MARKER_FILE).write_text("")
    (run_dir / "status.json").write_text(json.dumps({
        "TrainingJobName": name, "TrainingJobStatus": status, "SecondaryStatus": status,
        "CreationTime": "2026-11-26T10:00:00+00:00", "SecondaryStatusTransitions": [],
        "ResourceConfig": {"InstanceType": "ml.c5.2xlarge", "InstanceCount": 1}}))
    (run_dir / "logs" / "algo-1.log").write_text("epoch=1 step=2/2 train_loss=0.5\n")
    (run_dir / "metrics.jsonl").write_text(json.dumps({"metric": "train:loss", "value": 0.5, "timestamp": "2026-11-26T10:00:01+00:00",
                                                       "step": 2, "host": "algo-1"}) + "\n")
    return run_dir


def smtrain(*args: str):
    return CliRunner().invoke(main, list(args))


def test_status_of_local_run_id_needs_no_aws(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run_dir = finished_run(tmp_path, "mlp-1")

    by_name = smtrain("status", "local:mlp-1", "-o", "json")
    by_dir = smtrain("status", f"local:{run_dir}", "-o", "json")
    by_option = smtrain("status", "mlp-1", "--backend", "local", "-o", "json")

    for result in (by_name, by_dir, by_option):
        assert result.exit_code == 0, result.output
        document = json.loads(result.stdout)
        assert (document["backend"], document["run_dir"], document["status"]) == ("local", str(run_dir), "Completed")
        assert "console_url" not in document


@pytest.mark.parametrize("verb", [("logs",), ("metrics", "-o", "json"), ("stop",)])
def test_every_verb_takes_a_local_id(tmp_path, monkeypatch, verb):
    monkeypatch.chdir(tmp_path)
    finished_run(tmp_path, "mlp-1")

    result = smtrain(verb[0], "local:mlp-1", *verb[1:])

    assert result.exit_code == 0, result.output
    expected = {"logs": "[algo-1] epoch=1 step=2/2 train_loss=0.5\n", "stop": "mlp-1 is already Completed: nothing "
                                                                            "to stop\n"}
    if verb[0] == "metrics":
        assert [point["value"] for point in json.loads(result.stdout)] == [0.5]
    else:
        assert result.stdout == expected[verb[0]].replace("mlp-1 is", "local:mlp-1 is")


def test_status_of_sagemaker_id_reads_sagemaker_even_beside_a_local_run_of_that_name(
        aws, tiny_request, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    create_jobs(tiny_request, ["tiny-a"])
    seed_logs("tiny-a", {"algo-1": [(0, "hello")]})
    finished_run(tmp_path, "tiny-a", status="Failed")

    cloud = smtrain("status", "sagemaker:tiny-a", "-o", "json")
    by_option = smtrain("status", "tiny-a", "--backend", "sagemaker", "-o", "json")
    bare = smtrain("status", "tiny-a", "-o", "json")  # no region given: the local run, without asking AWS
    lines = smtrain("logs", "sagemaker:tiny-a")

    for result in (cloud, by_option):
        assert result.exit_code == 0, result.output
        document = json.loads(result.stdout)
        assert document["status"] == "Completed" and document["console_url"].endswith("#/jobs/tiny-a")
    assert bare.exit_code == 0 and json.loads(bare.stdout)["status"] == "Failed"
    assert lines.stdout == "[algo-1] hello\n"


def test_a_bare_name_that_is_both_asks_which_when_a_region_is_given(aws, tiny_request, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    create_jobs(tiny_request, ["tiny-a"])
    finished_run(tmp_path, "tiny-a")
    finished_run(tmp_path, "mlp-9")

    result = smtrain("status", "tiny-a", "--region", "us-east-1")
    only_local = smtrain("status", "mlp-9", "--region", "us-east-1")  # SageMaker has no mlp-9: local, no question

    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert "tiny-a is both a local run (runs/tiny-a) and a SageMaker job in us-east-1" in result.stderr
    assert "local:tiny-a or sagemaker:tiny-a" in result.stderr
    with pytest.raises(AmbiguousJob, match="is both a local run"):
        orchestrator.attach("tiny-a", region="us-east-1")
    assert only_local.exit_code == 0, only_local.output


def test_an_id_and_a_backend_option_that_disagree_are_bad_input(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    finished_run(tmp_path, "mlp-1")

    result = smtrain("status", "local:mlp-1", "--backend", "sagemaker")
    missing = smtrain("status", "local:mlp-2")

    assert result.exit_code == 2 and "local:mlp-1 names the local backend, but --backend says sagemaker" in (
        result.stderr)
    assert missing.exit_code == 2 and "mlp-2 is no local run" in missing.stderr
    assert "did you mean runs/mlp-1?" in missing.stderr


def test_attach_takes_the_ids_and_full_id_gives_them_back(aws, tiny_request, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    create_jobs(tiny_request, ["tiny-b"])
    run_dir = finished_run(tmp_path, "mlp-1")

    local = orchestrator.attach("local:mlp-1")
    cloud = orchestrator.attach("sagemaker:tiny-b")

    assert type(local) is type(cloud) is orchestrator.Job
    assert (local.backend.name, local.id, local.full_id) == ("local", str(run_dir), f"local:{run_dir}")
    assert (cloud.backend.name, cloud.full_id) == ("sagemaker", "sagemaker:tiny-b")
    assert orchestrator.attach(local.full_id).last_status.status == "Completed"
    assert orchestrator.attach(cloud.full_id).last_status.status == "Completed"
