"""Sibling commands refuse the same spec alike: `validate`, `plan`, `submit` and their `tune` counterparts name the
job spec's file, line and field (text and `-o json`), and each command that refuses an unverified combination
takes `--allow-unverified` to let it through. No AWS: every refusal comes before a call."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from tuning_specs import TINY_JOB, TINY_SEARCH

from orchestrator.cli.main import main

LOCAL_INPUT = TINY_JOB + "inputs:\n  train: data\n"
"""A job spec whose channel is a folder here (line 11, column 3): only `smtrain local` reads it."""
UNVERIFIED = TINY_JOB.replace("ml.c5.xlarge", "ml.c6i.xlarge")
"""A SageMaker type smtrain's catalog lacks (line 8, column 12): unverified, so validate and submit refuse it."""


@pytest.fixture
def specs(tmp_path, monkeypatch):
    """tiny.yaml (the job spec under test) and search.yaml, a search over it, in the working directory."""
    def write(job: str) -> None:
        monkeypatch.chdir(tmp_path)
        (tmp_path / "data").mkdir(exist_ok=True)
        (tmp_path / "train.py").write_text("print('loss=0.5')\n")
        (tmp_path / "tiny.yaml").write_text(job)
        (tmp_path / "search.yaml").write_text(TINY_SEARCH.replace('"train:loss"', "loss"))

    return write


def _refused_place(*args: str) -> dict:
    result = CliRunner().invoke(main, [*args, "-o", "json"])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    document = json.loads(result.stdout)
    error = document[0]["problems"][0] if isinstance(document, list) else document["error"]  # validate: reports
    return {key: error[key] for key in ("line", "column", "field")} | {"file": error["file"].rsplit("/", 1)[-1]}


@pytest.mark.parametrize("command", [
    ("validate", "tiny.yaml"), ("plan", "tiny.yaml"), ("submit", "tiny.yaml"), ("submit", "tiny.yaml", "--dry-run"),
    ("tune", "validate", "search.yaml"), ("tune", "plan", "search.yaml"), ("tune", "submit", "search.yaml"),
], ids=" ".join)
def test_a_local_channel_is_refused_at_its_line_by_every_command(specs, command):
    """Before, `plan`, `submit` and `tune plan|submit` said only "inputs train point at local paths" (JSON: file,
    line and field null), while `validate` named tiny.yaml:11:3 and inputs.train."""
    specs(LOCAL_INPUT)

    assert _refused_place(*command) == {"file": "tiny.yaml", "line": 11, "column": 3, "field": "inputs.train"}
    text = CliRunner().invoke(main, list(command))
    assert "tiny.yaml:11:3: inputs.train: error: " in text.output
    assert "fix: upload the data and give its s3:// prefix in `inputs`" in text.output


@pytest.mark.parametrize("command", [
    ("validate", "tiny.yaml"), ("submit", "tiny.yaml"), ("tune", "validate", "search.yaml"),
], ids=" ".join)
def test_an_unverified_combination_is_refused_at_its_line_naming_the_flag(specs, command):
    """Before, `submit` said "not submitted: unverified: instance.type: ..." with no place (JSON: file and line
    null), and `tune validate` had its place only inside the message."""
    specs(UNVERIFIED)

    assert _refused_place(*command) == {"file": "tiny.yaml", "line": 8, "column": 12, "field": "instance.type"}
    assert "(or pass --allow-unverified)" in CliRunner().invoke(main, list(command)).output


@pytest.mark.parametrize("command", [("validate", "tiny.yaml"), ("tune", "validate", "search.yaml")], ids=" ".join)
def test_both_validates_take_allow_unverified_as_submit_and_tune_submit_do(specs, command):
    """Before, `tune validate --allow-unverified` was "No such option" (exit 2), so the search `tune submit
    --allow-unverified` sends could not be validated: its refusal's fix named a flag it lacked."""
    specs(UNVERIFIED)

    result = CliRunner().invoke(main, [*command, "--allow-unverified"])

    assert result.exit_code == 0, result.output
    assert result.output.startswith("✓ ")
