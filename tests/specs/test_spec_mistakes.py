"""A new user's mistakes in a spec: each is answered at the line where it was written, with a fix that is the
change to make (not the parser's or the validator's own words), exit 2 and nothing sent."""

from __future__ import annotations

import codecs
import json

import pytest
from click.testing import CliRunner

from orchestrator.cli.main import main
from orchestrator.specs.loader import InvalidTuningSpec, load_tuning

SPEC = """\
name: demo
entry_point: train.py
framework_version: "2.10.0"
instance:
  type: ml.c5.2xlarge
  count: 2
environment:
  NCCL_DEBUG: WARN
inputs:
  train: s3://demo-bucket/train/
output_path: s3://demo-bucket/outputs/
"""


def _edited(old: str, new: str) -> str:
    assert old in SPEC, old
    return SPEC.replace(old, new)


def _problems(write_spec, text: str, *args: str) -> list[dict]:
    path = write_spec("")
    path.write_bytes(text.encode("utf-8"))
    result = CliRunner().invoke(main, ["validate", str(path), "-o", "json", *args])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    [report] = json.loads(result.stdout)
    return [(problem["line"], problem["field"], problem["message"], problem["fix"]) for problem in report["problems"]]


TAB_INDENTED = _edited("  type: ml.c5.2xlarge\n  count: 2", "\ttype: ml.c5.2xlarge\n\tcount: 2")


@pytest.mark.parametrize("text", [TAB_INDENTED, TAB_INDENTED.replace("\n", "\r\n"),
                                  codecs.BOM_UTF8.decode() + TAB_INDENTED.replace("\n", "\r\n")],
                         ids=["lf", "crlf", "bom-crlf"])
def test_a_tab_in_the_indentation_is_named_with_its_line(write_spec, text):
    assert _problems(write_spec, text) == [
        (5, None, "YAML: a tab character; YAML indents with spaces only",
         "replace the tab on line 5 with spaces (your editor can insert spaces for the Tab key)")]


def test_a_second_document_is_named_and_its_fix_is_to_remove_it(write_spec):
    assert _problems(write_spec, SPEC + "---\nname: other\n") == [
        (12, None, "YAML: a second document starts here (`---`); a spec file holds one",
         "remove this `---` and what follows it, or put the other document in a file of its own")]


def test_a_tuning_spec_indented_with_a_tab_gets_the_same_answer(spec_dir):
    (spec_dir / "tune.yaml").write_text("job: spec.yaml\nobjective:\n\tmetric: loss\n")
    with pytest.raises(InvalidTuningSpec) as refused:
        load_tuning(spec_dir / "tune.yaml")
    [problem] = refused.value.problems
    assert (problem.where, problem.message) == (f"{spec_dir / 'tune.yaml'}:3:1",
                                                "YAML: a tab character; YAML indents with spaces only")


def test_a_typo_inside_a_merged_anchor_is_reported_where_the_anchor_writes_it(write_spec):
    """`<<: *defaults` brings the anchor's keys in: the misspelled one is on the anchor's line, not on the line of
    the mapping that merges it."""
    text = _edited("instance:\n  type: ml.c5.2xlarge\n  count: 2\n",
                   "environment: &cluster\n  type: ml.c5.2xlarge\n  cuont: 2\n"
                   "instance:\n  <<: *cluster\n  count: 2\n").replace("environment:\n  NCCL_DEBUG: WARN\n", "")
    problems = _problems(write_spec, text)
    assert (6, "instance.cuont", "Extra inputs are not permitted", "did you mean `count`?") in problems


@pytest.mark.parametrize(("value", "message", "fix"), [
    ("true", "YAML read true as the boolean true, and this field takes text",
     'write it in quotes: WANDB_DISABLED: "true"'),
    ("yes", "YAML read yes as the boolean true, and this field takes text",
     'write it in quotes: WANDB_DISABLED: "yes"'),
    ("", "Input should be a valid string",
     'give it a value after the colon ("" for an empty one): WANDB_DISABLED: "..."'),
    ("[1, 2]", "Input should be a valid string", 'give one string, not a list: WANDB_DISABLED: "..."'),
])
def test_an_environment_value_yaml_reads_as_no_string_gets_the_text_to_write(write_spec, value, message, fix):
    text = _edited("  NCCL_DEBUG: WARN", f"  WANDB_DISABLED: {value}")
    assert _problems(write_spec, text) == [(8, "environment.WANDB_DISABLED", message, fix)]


def test_a_list_item_of_the_wrong_type_is_named_as_an_item_not_a_key(write_spec):
    text = SPEC + "network: {subnets: [subnet-0abc123, 12345], security_group_ids: [sg-0abc123]}\n"
    [(_, field, _, fix)] = _problems(write_spec, text)
    assert (field, fix) == ("network.subnets.1", 'write it in quotes: "12345" (item 2 of subnets)')
    [(_, field, _, fix)] = _problems(write_spec, SPEC + "metrics: [{name: loss, regex: 'loss=(.*)'}, 5]\n")
    assert (field, fix) == ("metrics.1", "each item of metrics is a mapping: write `key: value` pairs in it")


def test_a_misspelled_region_is_located_and_the_meant_one_suggested(write_spec):
    assert _problems(write_spec, SPEC + "region: us-east1\n") == [
        (12, "region", "no SageMaker PyTorch training images are published in region 'us-east1'",
         "did you mean `us-east-1`? If not: pick another region, or give image_uri (an image in your own ECR)")]


def test_plan_suggests_the_region_meant_for_a_misspelled_aws_region(write_spec, monkeypatch):
    monkeypatch.setenv("AWS_REGION", "eu-west1")
    result = CliRunner().invoke(main, ["plan", str(write_spec(SPEC))])
    assert result.exit_code == 2, result.output
    assert "To fix: did you mean `eu-west-1`?" in result.output


@pytest.mark.parametrize(("old", "new", "line", "field", "meant"), [
    ("train: s3://demo-bucket/train/", "train: s3:/demo-bucket/train/", 10, "inputs.train", "s3://demo-bucket/train/"),
    ("train: s3://demo-bucket/train/", "train: S3://demo-bucket/train/", 10, "inputs.train", "s3://demo-bucket/train/"),
    ("output_path: s3://demo-bucket/outputs/", "output_path: s3//demo-bucket/outputs/", 11, "output_path",
     "s3://demo-bucket/outputs/"),
])
def test_a_mistyped_s3_scheme_gets_the_uri_meant(write_spec, old, new, line, field, meant):
    """`s3:/bucket/...` in `inputs` was taken for a local folder beside the spec ("local path .../s3:/bucket/...
    does not exist")."""
    [(at, named, _, fix)] = _problems(write_spec, _edited(old, new))
    assert (at, named, fix) == (line, field, f"did you mean {meant}?")


@pytest.mark.parametrize(("count", "fix"), [("2.0", "write it without the decimal point: count: 2"),
                                            ("2.5", "write a whole number: count: 2 or count: 3")])
def test_a_whole_number_field_given_a_decimal_gets_the_whole_number_to_write(write_spec, count, fix):
    """There was no fix at all: only pydantic's `Input should be a valid integer`."""
    assert _problems(write_spec, _edited("count: 2", f"count: {count}")) == [
        (6, "instance.count", "Input should be a valid integer", fix)]


def test_a_tuning_spec_refused_for_its_shape_says_it_is_the_tuning_spec(spec_dir):
    """The shape checks are the job spec's: their refusal said `1 problem in the job spec` of a tuning spec."""
    (spec_dir / "tune.yaml").write_text("job: spec.yaml\ntags: " + "[" * 40 + "]" * 40 + "\n")
    with pytest.raises(InvalidTuningSpec) as refused:
        load_tuning(spec_dir / "tune.yaml")
    assert str(refused.value).startswith("1 problem in the tuning spec:")
    assert refused.value.problems[0].where.startswith(f"{spec_dir / 'tune.yaml'}:2:")
