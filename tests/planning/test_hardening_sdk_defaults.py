"""The SageMaker SDK defaults files as hostile input: each is read with the spec loader's guards (size,
encoding, depth, aliases), locally and from S3, and what it applies is held to the spec's own rules and masking:
one line and exit 2 from validate and plan, never a traceback, a runaway allocation or a secret in clear."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from forked import smtrain
from job_fakes import shared_loader_session

from orchestrator.errors import EnvironmentProblem

pytestmark = pytest.mark.hardening

REPO = Path(__file__).resolve().parents[2]
SPEC = """name: defaults-probe
entry_point: train.py
framework_version: "2.3.0"
py_version: py311
role: arn:aws:iam::123456789012:role/SageMakerExecution
region: us-east-1
instance: {type: ml.c5.2xlarge}
output_path: s3://my-bucket/outputs/
"""
HEAD = "SchemaVersion: '1.0'\n"
ALIAS_BOMB = HEAD + "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{name}: &{name} [{', '.join([f'*{previous}'] * 9)}]\n" for previous, name in zip("abcdefgh", "bcdefghi", strict=True))


def _defaults(body: str) -> str:
    return HEAD + "SageMaker:\n  TrainingJob:\n" + body


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text("print(1)\n")
    path = tmp_path / "spec.yaml"
    path.write_text(SPEC)
    return path


def _smtrain(command: str, spec: Path, admin: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """validate or plan in its own process, its address space capped at 2 GB (an alias bomb must not take
    pytest down), with `admin` as the admin's defaults file."""
    environment = {**os.environ, "SAGEMAKER_ADMIN_CONFIG_OVERRIDE": str(admin)}
    return smtrain(command, str(spec), *args, cwd=REPO, env=environment, memory_limit_bytes=2 << 30)


def _assert_refused(result: subprocess.CompletedProcess[str], *expected: str) -> None:
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    assert "Traceback" not in output, output
    assert output.count("To fix:") == 1, output
    for text in expected:
        assert text in output, output


@pytest.mark.parametrize(("content", "expected"), [
    (ALIAS_BOMB.encode(), "alias bomb"),
    ((HEAD + "x: " + "[" * 5000 + "]" * 5000 + "\n").encode(), "nested more than 32 levels deep"),
    (HEAD.encode() + b"# caf\xe9\n", "not UTF-8 (byte 0xe9"),
    (HEAD.encode() + b"#" * (48 << 20) + b"\n", "larger than 1024 KiB"),
], ids=["alias-bomb", "5000-deep", "invalid-utf8", "48MB"])
def test_a_hostile_local_defaults_file_is_refused_in_one_line(spec, tmp_path, content, expected):
    admin = tmp_path / "admin.yaml"
    admin.write_bytes(content)
    for command in ("validate", "plan"):
        _assert_refused(_smtrain(command, spec, admin), str(admin), expected)


@pytest.mark.parametrize(("content", "expected"), [
    (HEAD.encode() + b"# caf\xe9\n", "not UTF-8"),
    (ALIAS_BOMB.encode(), "alias bomb"),
], ids=["invalid-utf8", "alias-bomb"])
def test_a_hostile_defaults_object_in_s3_is_refused_in_one_line(aws, monkeypatch, content, expected):
    from orchestrator.cloud.resolve import read_sdk_defaults

    boto = shared_loader_session(region_name="us-east-1")
    boto.client("s3").create_bucket(Bucket="platform")
    boto.client("s3").put_object(Bucket="platform", Key="sagemaker/config.yaml", Body=content)
    monkeypatch.setenv("SAGEMAKER_ADMIN_CONFIG_OVERRIDE", "s3://platform/sagemaker/config.yaml")
    with pytest.raises(EnvironmentProblem) as refused:
        read_sdk_defaults(boto, "us-east-1")
    assert "s3://platform/sagemaker/config.yaml" in refused.value.message
    assert expected in refused.value.message


@pytest.mark.parametrize(("body", "expected"), [
    ("    Environment:\n" + "".join(f"      VAR_{index}: x\n" for index in range(150)), "150 entries"),
    ("    Environment: {'A=B': x}\n", "'A=B' is not an environment variable name"),
    ('    Environment: {A: "x\\0y"}\n', "NUL character"),
    ("    Tags: [{Key: 'aws:team', Value: ml}]\n", "begins with 'aws:'"),
], ids=["150-variables", "name-with-equals", "nul-in-value", "aws-tag-key"])
def test_values_sagemaker_refuses_are_refused_from_the_defaults_file(spec, tmp_path, body, expected):
    admin = tmp_path / "admin.yaml"
    admin.write_text(_defaults(body))
    for command in ("validate", "plan"):
        _assert_refused(_smtrain(command, spec, admin), str(admin), expected)


def test_secret_looking_tag_values_from_the_defaults_file_are_masked(spec, tmp_path):
    admin = tmp_path / "admin.yaml"
    admin.write_text(_defaults("    Tags: [{Key: api_token, Value: admin-secret-value}, {Key: db_password, "
                               "Value: admin-password-value}]\n"))
    spec.write_text(SPEC + "tags: {api_token: spec-secret-value}\n")
    for command, args in (("validate", ()), ("validate", ("-o", "json")), ("plan", ()), ("plan", ("-o", "json")),
                          ("plan", ("--full",))):
        result = _smtrain(command, spec, admin, *args)
        output = result.stdout + result.stderr
        assert result.returncode == 0, output
        assert "api_token" in output, output  # the tag is shown (and the contradiction named), its value masked
        for secret in ("admin-secret-value", "spec-secret-value", "admin-password-value"):
            assert secret not in output, (command, args, output)
