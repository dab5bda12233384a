"""Every malformed or impossible spec fails `smtrain validate` with exit 2, the file:line:col or --set that
caused it, the field path, and a fix."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from orchestrator.cli.main import main

BASE_SPEC = """\
name: demo
entry_point: train.py
source_dir: .
framework_version: "2.3.0"
role: arn:aws:iam::123456789012:role/Demo
instance: {type: ml.c5.2xlarge, count: 2}
distribution: {mode: none}
hyperparameters: {trainer: gloo, epochs: 1}
output_path: s3://demo-bucket/outputs/
"""


def _replace(old: str, new: str) -> str:
    assert old in BASE_SPEC, old
    return BASE_SPEC.replace(old, new)


GPU = "instance: {type: ml.g5.12xlarge, count: 2}"
P4D = "instance: {type: ml.p4d.24xlarge, count: 2}"

# (id, spec text, --set overrides, expected location, expected field, expected fragment of message or fix)
CASES = [
    ("unknown-top-key", _replace("instance:", "instanse:"), [], "spec.yaml:6:1", "instanse", "did you mean `instance`?"),
    ("unknown-nested-key", _replace("count: 2}", "cout: 2}"), [], "spec.yaml:6", "instance.cout",
     "did you mean `count`?"),
    ("missing-name", _replace("name: demo\n", ""), [], "spec.yaml:1:1", "name", "add `name:`"),
    ("bad-job-name", _replace("name: demo", "name: my_job"), [], "spec.yaml:1:1", "name", "not a valid job name"),
    ("job-name-too-long", _replace("name: demo", "name: " + "a" * 40), [], "spec.yaml:1:1", "name", "at most 39"),
    ("unquoted-version", _replace('"2.3.0"', "2.3"), [], "spec.yaml:4:1", "framework_version",
     'write it in quotes: framework_version: "2.3"'),
    ("not-a-version", _replace('"2.3.0"', "latest"), [], "spec.yaml:4:1", "framework_version",
     "is not a PyTorch version"),
    ("no-version-or-image", _replace('framework_version: "2.3.0"\n', ""), [], "spec.yaml:1:1", "",
     "give framework_version"),
    ("version-and-image", BASE_SPEC, ["image_uri=123.dkr.ecr.us-east-1.amazonaws.com/x:1"], "spec.yaml:1:1", "",
     "either image_uri or framework_version"),
    ("instance-type-shape", BASE_SPEC, ["instance.type=c5.2xlarge"], "--set instance.type=c5.2xlarge",
     "instance.type", "not a SageMaker instance type"),
    ("zero-instances", BASE_SPEC, ["instance.count=0"], "--set instance.count=0", "instance.count",
     "use a value at least 1"),
    ("quoted-count", _replace("count: 2", 'count: "2"'), [], "spec.yaml:6", "instance.count",
     "write a whole number without quotes"),
    ("unknown-mode", _replace("mode: none", "mode: torchrun"), [], "spec.yaml:7:16", "distribution.mode",
     "did you mean `torch_distributed`?"),
    ("mode-none-processes", BASE_SPEC, ["distribution.processes_per_host=2"], "--set distribution.processes_per_host=2",
     "distribution.processes_per_host", "mode none runs exactly one process per host"),
    ("torch-distributed-cpu", _replace("mode: none", "mode: torch_distributed"), [], "spec.yaml:7:16",
     "distribution.mode", "only for GPU and Trainium instances"),
    ("torch-distributed-version", _replace("instance: {type: ml.c5.2xlarge, count: 2}", GPU).replace(
        "mode: none", "mode: torch_distributed").replace("trainer: gloo", "trainer: ddp"),
     ["framework_version=2.4.1"], "--set framework_version=2.4.1", "framework_version",
     "no SageMaker PyTorch training image for framework_version '2.4.1'"),
    ("smddp-version", _replace("instance: {type: ml.c5.2xlarge, count: 2}", P4D).replace(
        "mode: none", "mode: smddp").replace("trainer: gloo", "trainer: ddp"), ["framework_version=2.10.0"],
     "spec.yaml:7:16", "distribution.mode", "SMDDP is in no SageMaker PyTorch image after 2.5"),
    ("smddp-p5", _replace("instance: {type: ml.c5.2xlarge, count: 2}", "instance: {type: ml.p5.48xlarge, count: 2}")
     .replace("mode: none", "mode: smddp").replace("trainer: gloo", "trainer: ddp")
     .replace('"2.3.0"', '"2.2.0"'), [], "spec.yaml:6", "instance.type", "does not support p5"),
    ("smddp-on-cpu", _replace("mode: none", "mode: smddp").replace('"2.3.0"', '"2.2.0"'), [], "spec.yaml:6",
     "instance.type", "needs NVIDIA GPUs"),
    ("mpi-on-trainium", _replace("instance: {type: ml.c5.2xlarge, count: 2}",
                                 "instance: {type: ml.trn1.32xlarge, count: 2}").replace("mode: none", "mode: mpi"),
     [], "spec.yaml:7:16", "distribution.mode", "Trainium supports only torch_distributed"),
    ("dp-on-two-hosts", _replace("trainer: gloo", "trainer: dp"), [], "spec.yaml:8:19", "hyperparameters.trainer",
     "unsynchronised copy"),
    ("nccl-on-cpu", _replace("trainer: gloo", "trainer: ddp"), [], "spec.yaml:8:19", "hyperparameters.trainer",
     "NCCL, which needs GPUs"),
    ("spot-without-max-wait", BASE_SPEC + "spot: {enabled: true}\ncheckpoint: {s3_uri: s3://b/ckpt/}\n", [],
     "spec.yaml:10", "spot.max_wait_seconds", "spot needs spot.max_wait_seconds >= max_run_seconds"),
    ("spot-without-checkpoint", BASE_SPEC + "spot: {enabled: true, max_wait_seconds: 90000}\n", [], "spec.yaml:10",
     "spot.enabled", "restart training from step 0"),
    ("custom-mpi-options-mode-none", BASE_SPEC, ["distribution.custom_mpi_options=-verbose"],
     "--set distribution.custom_mpi_options=-verbose", "distribution.custom_mpi_options", "ignored in mode none"),
    ("processes-torch-distributed", _replace("instance: {type: ml.c5.2xlarge, count: 2}", GPU).replace(
        "mode: none", "mode: torch_distributed, processes_per_host: 2").replace("trainer: gloo", "trainer: ddp"), [],
     "spec.yaml:7", "distribution.processes_per_host", "the SDK does not send it"),
    ("processes-exceed-gpus", _replace("instance: {type: ml.c5.2xlarge, count: 2}", GPU).replace(
        "mode: none", "mode: mpi, processes_per_host: 8").replace("trainer: gloo", "trainer: ddp"), [],
     "spec.yaml:7", "distribution.processes_per_host", "has 4 GPU(s)"),
    ("py-version-mismatch", BASE_SPEC, ["py_version=py38"], "--set py_version=py38", "py_version",
     "no SageMaker PyTorch training image"),
    ("subnets-without-groups", BASE_SPEC + "network: {subnets: [subnet-1]}\n", [], "spec.yaml:10",
     "network.security_group_ids", "must be given together"),
    ("env-name", BASE_SPEC + "environment: {MY-VAR: x}\n", [], "spec.yaml:10:1", "environment",
     "not a valid environment variable name"),
    ("reserved-hyperparameter", _replace("epochs: 1", "epochs: 1, sagemaker_program: x.py"), [], "spec.yaml:8:1",
     "hyperparameters", "reserved for the SDK"),
    ("metric-without-group", BASE_SPEC + "metrics: [{name: loss, regex: 'loss=[0-9.]+'}]\n", [], "spec.yaml:10",
     "metrics.0.regex", "needs a capture group"),
    ("missing-entry-point", _replace("entry_point: train.py", "entry_point: trian.py"), [], "spec.yaml:2:1",
     "entry_point", "trian.py is not in"),
    ("missing-source-dir", _replace("source_dir: .", "source_dir: ../nowhere"), [], "spec.yaml:3:1", "source_dir",
     "is not a directory"),
    ("max-run-limit", BASE_SPEC, ["max_run_seconds=3000000"], "--set max_run_seconds=3000000", "max_run_seconds",
     "28-day limit"),
    ("keep-alive-limit", BASE_SPEC, ["keep_alive_seconds=30000"], "--set keep_alive_seconds=30000",
     "keep_alive_seconds", "use a value at most 21600"),
    ("duplicate-key", BASE_SPEC + "name: again\n", [], "spec.yaml:10:1", "name", "duplicate key"),
    ("broken-yaml", BASE_SPEC + "inputs: {train: [\n", [], "spec.yaml:", "", "YAML:"),
    ("missing-local-input", BASE_SPEC + "inputs: {train: ./data}\n", [], "spec.yaml:10:10", "inputs.train",
     "does not exist"),
    ("channel-name", BASE_SPEC + "inputs: {'my data': s3://b/d/}\n", [], "spec.yaml:10:1", "inputs",
     "not a valid channel name"),
    ("checkpoint-uri", BASE_SPEC + "checkpoint: {s3_uri: /tmp/ckpt}\n", [], "spec.yaml:10:14", "checkpoint.s3_uri",
     "must match"),
    ("boolean", BASE_SPEC + "spot: {enabled: maybe}\n", [], "spec.yaml:10:8", "spot.enabled", "use true or false"),
]


def test_there_are_at_least_25_cases():
    assert len(CASES) >= 25


@pytest.mark.parametrize(("text", "overrides", "where", "field", "fragment"),
                         [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_validate_rejects_with_location_field_and_fix(write_spec, text, overrides, where, field, fragment):
    path = write_spec(text)
    args = ["validate", str(path)] + [item for override in overrides for item in ("--set", override)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    problem_lines = [line for line in result.output.splitlines() if where in line]
    assert problem_lines, f"no problem reported at {where}:\n{result.output}"
    if field:
        assert any(f": {field}:" in line for line in problem_lines), result.output
    assert fragment in result.output


def test_validate_reports_every_problem_at_once(write_spec):
    path = write_spec(BASE_SPEC.replace("count: 2", "count: 0").replace("mode: none", "mode: mpx"))
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 2
    assert "2 problems in the job spec" in result.output


def test_validate_missing_file_is_a_clear_error(tmp_path):
    result = CliRunner().invoke(main, ["validate", str(tmp_path / "nope.yaml")])
    assert result.exit_code == 2
    assert "no such spec file" in result.output


def test_bad_override_syntax(write_spec):
    result = CliRunner().invoke(main, ["validate", str(write_spec(BASE_SPEC)), "--set", "instance.count"])
    assert result.exit_code == 2
    assert "expected key.path=value" in result.output


def test_validate_json_lists_problems(write_spec):
    result = CliRunner().invoke(main, ["validate", str(write_spec(BASE_SPEC)), "--set", "instance.count=0", "-o", "json"])
    assert result.exit_code == 2
    import json

    [report] = json.loads(result.stdout)
    assert report["valid"] is False
    assert "instance.count" in report["problems"][0]
