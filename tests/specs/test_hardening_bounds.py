"""Every input bounded: instance counts, --set depth, NUL characters, job names and metrics.jsonl lines
are refused or skipped with a message (exit 2 for bad input), never a traceback, MemoryError or AWS call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from forked import smtrain

from orchestrator.cli.main import main

pytestmark = pytest.mark.hardening

SPEC = """\
name: bounded
entry_point: train.py
framework_version: "2.3.0"
role: arn:aws:iam::123456789012:role/R
output_path: s3://bucket/out/
region: us-east-1
instance: {type: ml.c5.2xlarge, count: 1}
metrics: []
"""


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text("print(1)\n")
    path = tmp_path / "spec.yaml"
    path.write_text(SPEC)
    return path


def _invoke(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.mark.parametrize("command", ["validate", "plan"])
def test_a_huge_instance_count_is_refused_before_anything_is_sized(spec, command):
    """10**9 hosts: refused by the bound, in a process whose address space could not hold a list of that size."""
    result = smtrain(command, str(spec), "--set", "instance.count=1000000000", memory_limit_bytes=2 << 30,
                     timeout=120)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "instance.count" in result.stdout + result.stderr and "10000" in result.stdout + result.stderr
    assert "Traceback" not in result.stderr and "MemoryError" not in result.stderr


@pytest.mark.parametrize(("overrides", "expected"), [
    (("distribution.mode=mpi", "distribution.processes_per_host=1000000000"), "distribution.processes_per_host"),
    (("distribution.mode=mpi", "distribution.processes_per_host=1024", "instance.count=10000"),
     "more than 100000 processes"),
], ids=["processes-per-host", "world-size"])
@pytest.mark.parametrize("command", ["validate", "plan"])
def test_a_huge_process_count_is_refused_before_the_ranks_are_sized(spec, command, overrides, expected):
    """10**9 processes per host, or 10,000 hosts x 1,024, in a process that could not hold their rank table."""
    result = smtrain(command, str(spec), *(item for override in overrides for item in ("--set", override)),
                     memory_limit_bytes=2 << 30)
    assert result.returncode == 2, result.stdout + result.stderr
    assert expected in result.stdout + result.stderr
    assert "Traceback" not in result.stderr and "MemoryError" not in result.stderr


def test_a_deep_set_path_is_refused_with_a_message(spec):
    result = _invoke("validate", str(spec), "--set", "hyperparameters." + ".".join(["b"] * 3000) + "=1")
    assert result.exit_code == 2
    assert "3001 levels deep" in result.output and not isinstance(result.exception, RecursionError)


@pytest.mark.parametrize("override", ['hyperparameters.x="a\\0b"', 'environment.X="a\\0b"',
                                      'hyperparameters.x=["ok", "a\\0b"]'])
def test_a_nul_character_in_a_value_is_refused_in_validate(spec, override):
    result = _invoke("validate", str(spec), "--set", override)
    assert result.exit_code == 2, result.output
    assert "NUL character" in result.output


def test_a_nul_character_written_in_the_spec_file_is_refused(spec):
    spec.write_text(SPEC + 'hyperparameters: {db_password: "hunter22\\0x"}\n')
    result = _invoke("validate", str(spec))
    assert result.exit_code == 2 and "NUL character" in result.output and "hunter22" not in result.output


@pytest.mark.parametrize("name", ["../../x", "a_b", "-lead", "x" * 64])
def test_a_job_name_sagemaker_refuses_is_refused_by_plan_and_submit_without_a_call(spec, name):
    for command in ("plan", "submit"):
        result = _invoke(command, str(spec), "--job-name", name)
        assert result.exit_code == 2, (command, result.output)
        assert "is not a training job name SageMaker accepts" in result.output


@pytest.mark.parametrize("command", ["status", "logs", "stop"])
def test_an_empty_or_bad_job_name_is_bad_input_not_a_network_problem(command, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name, said in (("", "is not a training job name SageMaker accepts"), ("../../x", "is no local run")):
        result = _invoke(command, name)
        assert result.exit_code == 2, (command, name, result.output)
        assert said in result.output  # a path is only ever a local run
        assert "network" not in result.output


def test_metrics_skips_and_counts_lines_that_are_not_points(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    good = {"metric": "train:loss", "value": 0.5, "timestamp": "2026-01-01T00:00:00+00:00", "step": 1,
            "host": "algo-1"}
    (run / "metrics.jsonl").write_bytes(b"\n".join([
        json.dumps(good).encode(), b"\xff\xfe not utf-8", b"[1, 2]", b"null", b'{"metric": "x", "value": "nan?"}',
        json.dumps({**good, "value": 0.25, "step": 2}).encode(), b'{"metric": "train:loss", "val']))
    result = CliRunner().invoke(main, ["metrics", str(run)])
    assert result.exit_code == 0, result.output
    assert "2 points" in result.output
    assert "skipped 5 lines" in result.output
