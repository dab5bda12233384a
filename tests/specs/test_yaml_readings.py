"""What YAML 1.1 makes of unquoted text never silently changes what the user named or wrote: a key YAML reads as
a boolean, null, number or date (`yes:`, `null:`, `010:`) is refused at its line with the quoted key as the fix,
and a hyperparameter value (a job's, or a tuned categorical one) reaches SageMaker as the text written
(`seed: 010` is "010", not 8; `lr_schedule: 1:30` is "1:30", not 90)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from orchestrator.api import plan
from orchestrator.cli.main import main
from orchestrator.specs.loader import InvalidTuningSpec, load, load_tuning

SPEC = """\
name: demo
entry_point: train.py
framework_version: "2.10.0"
instance: {type: ml.c5.2xlarge, count: 1}
output_path: s3://demo-bucket/outputs/
"""


@pytest.fixture(autouse=True)
def _region(monkeypatch):
    monkeypatch.setenv("AWS_REGION", "us-east-1")


def _refusals(write_spec, text: str, *args: str) -> list[tuple]:
    """`smtrain validate -o json`'s problems, after checking it refused the spec with exit 2 and no traceback."""
    result = CliRunner().invoke(main, ["validate", str(write_spec(text)), "-o", "json", *args])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    [report] = json.loads(result.stdout)
    return [(problem["line"], problem["field"], problem["message"], problem["fix"]) for problem in report["problems"]]


@pytest.mark.parametrize(("key", "reading"), [
    ("yes", "the boolean true"), ("no", "the boolean false"), ("on", "the boolean true"),
    ("off", "the boolean false"), ("true", "the boolean true"), ("null", "null"), ("~", "null"),
    ("010", "the integer 8 (octal)"), ("0x1F", "the integer 31 (hexadecimal)"),
    ("1_000", "the integer 1000 (YAML drops the underscores)"), ("1:30", "the integer 90 (base 60)"),
    ("2.10", "the number 2.1"), ("2024-01-01T10:00:00Z", "the date 2024-01-01T10:00:00+00:00"),
])
def test_a_hyperparameter_name_yaml_reads_as_another_value_is_refused_with_the_quoted_key(write_spec, key, reading):
    refusals = _refusals(write_spec, SPEC + f"hyperparameters:\n  epochs: 3\n  {key}: 1\n")
    assert refusals == [(8, f"hyperparameters.{key}", f"key {key} was read by YAML as {reading}",
                         f'write the key in quotes: "{key}": 1')]


@pytest.mark.parametrize("section", ["environment", "tags", "inputs"])
def test_every_map_of_user_named_keys_refuses_a_misread_key(write_spec, section):
    value = "s3://demo-bucket/train/" if section == "inputs" else "x"
    refusals = _refusals(write_spec, SPEC + f"{section}:\n  on: {value}\n")
    assert refusals == [(7, f"{section}.on", "key on was read by YAML as the boolean true",
                         f'write the key in quotes: "on": {value}')]


def test_keys_that_would_collide_are_each_refused_and_a_quoted_one_is_kept(write_spec):
    """`yes` and `on` would both become the hyperparameter True, one silently lost."""
    refusals = _refusals(write_spec, SPEC + "hyperparameters: {yes: 1, on: 2, 'off': 3, opt: {null: 4}}\n")
    assert [(field, message) for _, field, message, _ in refusals] == [
        ("hyperparameters.yes", "key yes was read by YAML as the boolean true"),
        ("hyperparameters.on", "key on was read by YAML as the boolean true"),
        ("hyperparameters.opt.null", "key null was read by YAML as null")]
    # PyYAML reads neither y nor 1e3 as anything but text, and 1 keeps its text as a key
    kept = load(write_spec(SPEC + "hyperparameters: {'yes': 1, \"on\": 2, 1: 3, y: 4, 1e3: 5}\n"))
    assert kept.spec.hyperparameters == {"yes": 1, "on": 2, "1": 3, "y": 4, "1e3": 5}


def test_a_misread_key_in_a_set_override_is_refused_with_the_quoted_override(write_spec):
    result = CliRunner().invoke(main, ["validate", str(write_spec(SPEC)), "--set", "hyperparameters={yes: 1}"])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert "--set hyperparameters={yes: 1}: key yes was read by YAML as the boolean true" in result.output
    assert """--set 'hyperparameters={"yes": 1}'""" in result.output


def test_the_refusal_of_a_misread_key_never_shows_a_secret(write_spec):
    """The fix quotes the key with its value, which may be a secret's value written again."""
    refusals = _refusals(write_spec, SPEC + "environment: {API_TOKEN: s3cr3tvalue, yes: s3cr3tvalue}\n")
    assert refusals == [(6, "environment.yes", "key yes was read by YAML as the boolean true",
                         'write the key in quotes: "yes": ****')]
    result = CliRunner().invoke(main, ["validate", str(write_spec(SPEC)), "--set",
                                       "environment={API_TOKEN: s3cr3tvalue, yes: 1}"])
    assert result.exit_code == 2, result.output
    assert "s3cr3tvalue" not in result.output
    assert """--set 'environment={API_TOKEN: ****, "yes": 1}'""" in result.output


@pytest.mark.parametrize(("written", "sent"), [
    ("1:30", '"1:30"'), ("010", '"010"'), ("1_000", '"1_000"'), ("0x1F", '"0x1F"'), ("2.10", '"2.10"'),
    ("on", '"on"'), ("off", '"off"'), ("True", '"True"'), ("2024-01-01", '"2024-01-01"'), (".inf", '".inf"'),
    ("1.0e-3", '"1.0e-3"'),
    # what YAML reads and SageMaker is sent as the very text written stays a number, a boolean or null
    ("3", "3"), ("-3", "-3"), ("0.05", "0.05"), ("true", "true"), ("null", "null"), ('"010"', '"010"'),
])
def test_a_hyperparameter_value_reaches_sagemaker_as_written(write_spec, written, sent):
    spec = load(write_spec(SPEC + f"hyperparameters:\n  value: {written}\n  nested: [{written}]\n"))
    request = plan(spec).create_training_job_request["HyperParameters"]
    assert request["value"] == sent
    assert request["nested"] == f"[{sent}]"


def test_a_hyperparameter_set_on_the_command_line_keeps_its_text_too(write_spec):
    spec = load(write_spec(SPEC), ["hyperparameters.seed=010", "hyperparameters.schedule=1:30",
                                   "hyperparameters.epochs=5", "instance.count=2"])
    assert spec.spec.hyperparameters == {"seed": "010", "schedule": "1:30", "epochs": 5}
    assert spec.spec.instance.count == 2


def test_tuned_categorical_values_are_the_text_written(spec_dir, write_spec):
    write_spec(SPEC)
    (spec_dir / "tune.yaml").write_text(
        "job: spec.yaml\nobjective: {metric: 'train:loss', type: Minimize}\nstrategy: Random\nmax_jobs: 2\n"
        "parameters:\n  amp: {type: categorical, values: [on, off, 010, 1:30, 2.10, 2.1, 32]}\n")
    assert load_tuning(spec_dir / "tune.yaml").spec.parameters["amp"].values == [
        "on", "off", "010", "1:30", "2.10", "2.1", "32"]


def test_a_tuned_parameter_name_yaml_misreads_is_refused(spec_dir, write_spec):
    write_spec(SPEC)
    (spec_dir / "tune.yaml").write_text(
        "job: spec.yaml\nobjective: {metric: 'train:loss', type: Minimize}\nstrategy: Random\nmax_jobs: 2\n"
        "parameters:\n  no: {type: categorical, values: [a, b]}\n  010: {type: integer, min: 1, max: 3}\n")
    with pytest.raises(InvalidTuningSpec) as refused:
        load_tuning(spec_dir / "tune.yaml")
    assert [(problem.where, problem.field, problem.message, problem.fix) for problem in refused.value.problems] == [
        (f"{spec_dir / 'tune.yaml'}:6:3", "parameters.no", "key no was read by YAML as the boolean false",
         'write the key in quotes: "no":'),
        (f"{spec_dir / 'tune.yaml'}:7:3", "parameters.010", "key 010 was read by YAML as the integer 8 (octal)",
         'write the key in quotes: "010":')]


@pytest.mark.parametrize(("line", "message", "fix"), [
    ('framework_version: 2.10', "YAML read 2.10 as the number 2.1, and this field takes text",
     'write it in quotes: framework_version: "2.10"'),
    ('framework_version: "2.10"\npy_version: 3.10', "YAML read 3.10 as the number 3.1, and this field takes text",
     "write the image's Python tag: py_version: py310"),
    ('framework_version: "2.10"\nenvironment: {SEED: 010}',
     "YAML read 010 as the integer 8 (octal), and this field takes text", 'write it in quotes: SEED: "010"'),
    ('framework_version: "2.10"\nenvironment: {SCHEDULE: 1:30}',
     "YAML read 1:30 as the integer 90 (base 60), and this field takes text", 'write it in quotes: SCHEDULE: "1:30"'),
])
def test_a_text_field_yaml_reads_as_a_number_names_the_reading_and_the_text_to_write(write_spec, line, message, fix):
    text = SPEC.replace('framework_version: "2.10.0"', line)
    [(_, _, said, fix_said)] = _refusals(write_spec, text)
    assert (said, fix_said) == (message, fix)


def test_text_yaml_reads_as_a_date_that_does_not_exist_is_refused_at_its_line_or_kept_as_a_hyperparameter(write_spec):
    """PyYAML raises a bare ValueError for `2024-13-45`: a traceback, before."""
    refusals = _refusals(write_spec, SPEC.replace("name: demo", "name: 2024-02-30"))
    assert refusals == [(1, None, "YAML: 2024-02-30 reads as a date, and there is none (day is out of range for month)",
                         'write it in quotes if it is text: "2024-02-30"')]
    assert load(write_spec(SPEC + "hyperparameters: {released: 2024-13-45}\n")).spec.hyperparameters == {
        "released": "2024-13-45"}


TUNING = """\
job: spec.yaml
objective: {metric: "train:loss", type: Minimize}
strategy: Random
max_jobs: 2
parameters:
  lr: {type: continuous, min: 0.001, max: 0.1}
"""


@pytest.mark.parametrize(("old", "new", "line", "field", "message", "fix"), [
    ('metric: "train:loss"', "metric: 2.10", 2, "objective.metric",
     "YAML read 2.10 as the number 2.1, and this field takes text", 'write it in quotes: metric: "2.10"'),
    ("max_jobs: 2", "max_jobs: 2\ntags: {team: yes}", 5, "tags.team",
     "YAML read yes as the boolean true, and this field takes text", 'write it in quotes: team: "yes"'),
    ("max_jobs: 2", "max_jobs: 2\nname: 2024-01-01", 5, "name",
     "YAML read 2024-01-01 as the date 2024-01-01, and this field takes text",
     'write it in quotes: name: "2024-01-01"'),
    # the documented choice, unquoted, is YAML's false: it was `use one of: 'Off' or 'Auto'`
    ("max_jobs: 2", "max_jobs: 2\nearly_stopping: Off", 5, "early_stopping",
     "YAML read Off as the boolean false, and this field takes text", 'write it in quotes: early_stopping: "Off"'),
])
def test_a_tuning_spec_text_field_yaml_reads_as_a_number_is_worded_as_a_job_specs(spec_dir, write_spec, old, new,
                                                                                   line, field, message, fix):
    write_spec(SPEC)
    (spec_dir / "tune.yaml").write_text(TUNING.replace(old, new))
    result = CliRunner().invoke(main, ["tune", "validate", str(spec_dir / "tune.yaml")])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert f"tune.yaml:{line}:" in result.output and f"{field}: {message}" in result.output
    assert f"fix: {fix}" in result.output


def test_an_unquoted_equals_sign_is_refused_at_its_line_in_either_spec(spec_dir, write_spec):
    """PyYAML's own words were "could not determine a constructor for the tag 'tag:yaml.org,2002:value'"."""
    said = (None, "YAML: an unquoted = is YAML's value indicator, not text", 'write it in quotes: "="')
    assert _refusals(write_spec, SPEC + "hyperparameters:\n  epochs: 3\n  separator: =\n") == [(8, *said)]
    write_spec(SPEC)
    (spec_dir / "tune.yaml").write_text(TUNING + "tags: {team: =}\n")
    with pytest.raises(InvalidTuningSpec) as refused:
        load_tuning(spec_dir / "tune.yaml")
    assert [(problem.where, problem.message, problem.fix) for problem in refused.value.problems] == [
        (f"{spec_dir / 'tune.yaml'}:7:14", *said[1:])]
    # as a key, YAML keeps the text `=` (a tag key may hold one)
    assert load(write_spec(SPEC + "tags: {= : x}\n")).spec.tags == {"=": "x"}


def test_an_unquoted_equals_sign_in_a_set_value_is_refused_with_the_quoted_override(write_spec):
    """`--set hyperparameters.opt=[a, =]` was silently the string "[a, =]"; a lone `=` is that text, as written."""
    result = CliRunner().invoke(main, ["validate", str(write_spec(SPEC)), "--set", "hyperparameters.opt=[a, =]"])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert "--set hyperparameters.opt=[a, =]: an unquoted = is YAML's value indicator, not text" in result.output
    assert """write it in quotes: --set 'hyperparameters.opt=[a, "="]'""" in result.output
    assert load(write_spec(SPEC), ["hyperparameters.separator=="]).spec.hyperparameters == {"separator": "="}
