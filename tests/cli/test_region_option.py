"""One way to name a job's region on every command: `--region REGION`, as `status`, `list`, `tune` and `infra`
always took it, now also on every command that reads a job spec (before: `--set region=X` there, and `check
--region` meant "check another region than the job's"). `--set region=X` still works; given both, `--region`
wins. No AWS: nothing here reaches a call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from tuning_specs import TINY_JOB, TINY_SEARCH

from orchestrator import api
from orchestrator.cli.main import main
from orchestrator.specs.words import FieldWords


@pytest.fixture
def specs(tmp_path, monkeypatch):
    """tiny.yaml (a job spec naming its role, bucket and region us-east-1) and search.yaml, a search over it."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("print('loss=0.5')\n")
    (tmp_path / "tiny.yaml").write_text(TINY_JOB)
    (tmp_path / "search.yaml").write_text(TINY_SEARCH.replace('"train:loss"', "loss"))


@pytest.mark.parametrize("command", [
    ("validate", "tiny.yaml"), ("plan", "tiny.yaml"), ("local", "tiny.yaml"), ("submit", "tiny.yaml"),
    ("submit", "tiny.yaml", "--dry-run"), ("tune", "validate", "search.yaml"), ("tune", "plan", "search.yaml"),
    ("tune", "submit", "search.yaml"), ("tune", "local", "search.yaml"),
], ids=" ".join)
def test_every_command_that_reads_a_job_spec_moves_it_by_region(specs, command):
    """Before, each of these said "No such option: --region"."""
    result = CliRunner().invoke(main, [*command, "--region", "nowhere-1"])

    assert result.exit_code == 2, result.output
    assert "no SageMaker PyTorch training images are published in region 'nowhere-1'" in result.output


def _planned(*options: str) -> dict:
    result = CliRunner().invoke(main, ["plan", "tiny.yaml", "--job-name", "tiny-1", *options, "-o", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_region_plans_the_job_where_set_region_did_and_wins_over_it(specs):
    moved = _planned("--region", "eu-west-1")

    assert moved["spec"]["region"] == "eu-west-1"
    assert ".dkr.ecr.eu-west-1.amazonaws.com/" in moved["create_training_job_request"]["AlgorithmSpecification"][
        "TrainingImage"]
    assert _planned("--set", "region=eu-west-1")["create_training_job_request"] == moved[
        "create_training_job_request"]  # the old spelling still works, alike
    both = _planned("--set", "region=us-west-2", "--region", "eu-west-1")
    assert both["create_training_job_request"] == moved["create_training_job_request"]


@pytest.mark.parametrize("value", ["null", "123", ""])
def test_a_region_is_taken_as_written_never_as_yaml(specs, value):
    """`--region null` must not mean "no region" (silently the environment's), nor 123 a number."""
    result = CliRunner().invoke(main, ["validate", "tiny.yaml", "--region", value])

    assert result.exit_code == 2, result.output
    assert f"published in region '{value}'" in result.output


@pytest.mark.parametrize("value, typed", [("nowhere-1", "--region nowhere-1"), ("", "--region ''")])
def test_a_bad_region_is_named_as_the_option_typed(specs, value, typed):
    """Before: `--set region="nowhere-1": region: ...`, an option the user never typed, in the text and in -o json's
    `override`."""
    text = CliRunner().invoke(main, ["validate", "tiny.yaml", "--region", value])
    document = CliRunner().invoke(main, ["validate", "tiny.yaml", "--region", value, "-o", "json"])

    assert f"  {typed}: region: no SageMaker PyTorch training images are published in region '{value}'" in \
        text.output.splitlines()
    assert "--set" not in text.output
    problem = json.loads(document.stdout)[0]["problems"][0]
    assert (problem["override"], problem["file"], problem["field"]) == (typed, None, "region")


def test_the_plans_sources_name_region_as_typed_and_set_region_as_typed(specs):
    """Before: plan's sources said `--set region="eu-west-1"` for `--region eu-west-1`."""
    text = CliRunner().invoke(main, ["plan", "tiny.yaml", "--job-name", "tiny-1", "--region", "eu-west-1"])

    assert _planned("--region", "eu-west-1")["sources"]["region"] == {"from": "--region",
                                                                      "where": "--region eu-west-1"}
    assert "  from --region eu-west-1: region" in text.output.splitlines()
    assert _planned("--set", "region=eu-west-1")["sources"]["region"] == {"from": "--set",
                                                                          "where": "--set region=eu-west-1"}


def test_a_missing_regions_fix_names_region_as_each_user_gives_it(specs):
    """The plan's notice and submit's refusal for a spec without a region said only "set `region:` in the spec, or
    set AWS_REGION": the one command-line spelling of a region, --region, was left out. From Python the keyword
    `region=` is named instead, and a function job's decorator keyword for a user with no spec."""
    bare = Path("bare.yaml")
    bare.write_text("".join(line for line in TINY_JOB.splitlines(keepends=True) if not line.startswith("region:")))
    planned = CliRunner().invoke(main, ["plan", str(bare), "-o", "json"])
    submitted = CliRunner().invoke(main, ["submit", str(bare)])
    fixes = [finding["fix"] for finding in json.loads(planned.stdout)["warnings"]
             if finding["rule"] == "region-fallback"]

    assert fixes == ["pass --region REGION, set `region:` in the spec, or set AWS_REGION"]
    assert submitted.exit_code == 2 and "pass --region REGION, set `region:` in the spec" in submitted.output
    assert [finding.fix for finding in api.plan(str(bare)).findings if finding.rule == "region-fallback"] == [
        "pass `region=`, set `region:` in the spec, or set AWS_REGION"]
    assert FieldWords(keywords_of="@orchestrator.remote(...)").name_region() == \
        "pass `region=` to @orchestrator.remote(...)"
