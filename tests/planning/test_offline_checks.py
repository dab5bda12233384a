"""Issue 35, `validate` and `tune validate` refuse what `plan` and `tune plan` refuse: the checks that need the
built request (its hyperparameter count with the sagemaker_* keys, the region's images, a job setting a tuning
job's training definition has no place for, a definition's static hyperparameters) run offline on a request
built with placeholders, and `tune validate` reads the SDK defaults files as `validate` does. Each answer is one
clear refusal, exit 2, with the same words as plan's."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from tuning_specs import TINY_JOB as JOB

from orchestrator.cli.main import main

SEARCH = """job: job.yaml
objective: {metric: loss, type: Minimize}
strategy: Random
parameters:
  lr: {type: continuous, min: 0.1, max: 1.0}
max_jobs: 2
max_parallel_jobs: 1
"""


def _hyperparameters(count: int) -> str:
    return "hyperparameters={" + ", ".join(f"h{index}: 1" for index in range(count)) + "}"


@pytest.fixture
def specs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("print('loss=0.5')\n")
    (tmp_path / "job.yaml").write_text(JOB)
    (tmp_path / "search.yaml").write_text(SEARCH)
    return tmp_path


def _refusal(result) -> str:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    return result.output


# Refused by plan and tune plan alike: 97 hyperparameters plus the 5 sagemaker_* keys make 102 (the API takes
# 100); a region without PyTorch images.
@pytest.mark.parametrize(("override", "words"), [
    (_hyperparameters(97), "97 of yours plus 5 sagemaker_* keys the mode needs make 102"),
    ("region=xx-nowhere-9", "no SageMaker PyTorch training images are published in region 'xx-nowhere-9'"),
], ids=["hyperparameters-with-sagemaker-keys", "region-without-images"])
def test_validate_refuses_what_only_the_built_request_shows(specs, override, words):
    planned = CliRunner().invoke(main, ["plan", "job.yaml", "--set", override])
    validated = CliRunner().invoke(main, ["validate", "job.yaml", "--set", override])
    tune_planned = CliRunner().invoke(main, ["tune", "plan", "search.yaml", "--set", override])
    tune_validated = CliRunner().invoke(main, ["tune", "validate", "search.yaml", "--set", override])

    for result in (planned, validated, tune_planned, tune_validated):
        assert words in _refusal(result)


# Refused by tune plan only: a job setting a training definition has no place for; 95 hyperparameters, which a
# single job takes (100 with the sagemaker_* keys) but which make 102 static ones with the two estimator keys.
@pytest.mark.parametrize(("override", "words"), [
    ("infra_check=true", "the job sets InfraCheckConfig, which a tuning job's training definition has no place for"),
    ("tensorboard={s3_uri: 's3://bucket/tb/'}", "the job sets TensorBoardOutputConfig"),
    (_hyperparameters(95), "a tuning job takes at most 100"),
], ids=["infra-check", "tensorboard", "static-hyperparameters"])
def test_tune_validate_refuses_what_tune_plan_refuses_once_the_request_is_built(specs, override, words):
    assert CliRunner().invoke(main, ["validate", "job.yaml", "--set", override]).exit_code == 0  # a fine job
    tune_planned = CliRunner().invoke(main, ["tune", "plan", "search.yaml", "--set", override])
    tune_validated = CliRunner().invoke(main, ["tune", "validate", "search.yaml", "--set", override])

    assert words in _refusal(tune_planned)
    assert words in _refusal(tune_validated)


def test_tune_validate_holds_the_sdk_defaults_file_to_the_specs_rules_as_validate_does(specs, monkeypatch):
    admin = specs / "admin.yaml"
    admin.write_text("SchemaVersion: '1.0'\nSageMaker:\n  TrainingJob:\n    Environment:\n"
                     + "".join(f"      VAR_{index}: x\n" for index in range(150)))
    monkeypatch.setenv("SAGEMAKER_ADMIN_CONFIG_OVERRIDE", str(admin))

    validated = CliRunner().invoke(main, ["validate", "job.yaml"])
    tune_validated = CliRunner().invoke(main, ["tune", "validate", "search.yaml"])

    assert "150 entries" in validated.output and validated.exit_code == 2
    assert "150 entries" in _refusal(tune_validated) and str(admin) in tune_validated.output


def test_a_job_within_every_limit_still_validates_for_tuning(specs):
    result = CliRunner().invoke(main, ["tune", "validate", "search.yaml", "--set", _hyperparameters(90)])
    assert result.exit_code == 0, result.output
    assert "Random search of Minimize loss over lr: 2 trials" in result.output
