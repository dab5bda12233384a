"""Secret values printed: a fix hint, an override's echo and the shell-split notice show `****` where
a secret-looking name's value would be, through redact's one mechanism."""

from __future__ import annotations

import json

import pytest

from click.testing import CliRunner

from orchestrator.cli.main import main

pytestmark = pytest.mark.hardening

SPEC = """name: secrets
entry_point: train.py
framework_version: "2.3.0"
instance: {type: ml.c5.2xlarge}
environment: {DB_PASSWORD: 31415926535, PIN_TOKEN: 123}
"""


def _validate(path, *args):
    return CliRunner().invoke(main, ["validate", str(path), *args])


def test_fix_hint_does_not_echo_a_numeric_secret(write_spec):
    result = _validate(write_spec(SPEC))
    assert result.exit_code == 2, result.output
    assert 'fix: write it in quotes: DB_PASSWORD: "****"' in result.output
    assert 'fix: write it in quotes: PIN_TOKEN: "****"' in result.output
    assert "31415926535" not in result.output and '"123"' not in result.output


def test_override_echo_does_not_show_the_secret(write_spec):
    path = write_spec(SPEC.replace("environment: {DB_PASSWORD: 31415926535, PIN_TOKEN: 123}", ""))
    result = _validate(path, "--set", "environment.DB_PASSWORD=27182818", "-o", "json")
    assert result.exit_code == 2, result.output
    assert "27182818" not in result.output
    problems = json.loads(result.output)[0]["problems"]
    assert [(problem["override"], problem["field"], problem["message"], problem["fix"]) for problem in problems] == [
        ("environment.DB_PASSWORD=****", "environment.DB_PASSWORD",
         "YAML read the value as a number, boolean or date, and this field takes text",
         "write it in quotes: --set 'environment.DB_PASSWORD=\"****\"'")]


def test_shell_split_notice_masks_a_secret_value(write_spec):
    path = write_spec(SPEC.replace("environment: {DB_PASSWORD: 31415926535, PIN_TOKEN: 123}",
                                   'hyperparameters: {api_key: "sk live$1", note: "a b"}'))
    result = _validate(path)
    assert result.exit_code == 0, result.output
    assert "hyperparameter 'api_key'='****' will be split" in result.output
    assert "hyperparameter 'note'='a b' will be split" in result.output
    assert "sk live" not in result.output
