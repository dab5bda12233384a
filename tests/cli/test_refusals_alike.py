"""Sibling commands refuse the same spec alike and take the same flags for the same idea: `validate`, `plan`,
`submit` and their `tune` counterparts name the job spec's file, line and field (text and `-o json`), each command
that refuses an unverified combination takes `--allow-unverified` to let it through, the two validates report in
one shape, and the planning commands name what they plan by `--job-name`. No AWS: nothing here reaches a call."""

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


@pytest.mark.parametrize("command", [
    ("validate", "nope.yaml"), ("plan", "nope.yaml"), ("submit", "nope.yaml"), ("tune", "validate", "nope.yaml"),
    ("tune", "plan", "nope.yaml"), ("tune", "submit", "nope.yaml"),
], ids=" ".join)
def test_a_missing_spec_file_is_named_in_the_json_place_too(specs, command):
    """Before, `-o json` gave `"file": null` while its message said `nope.yaml: no such spec file`."""
    specs(TINY_JOB)

    result = CliRunner().invoke(main, [*command, "-o", "json"])

    assert result.exit_code == 2, result.output
    document = json.loads(result.stdout)
    error = document[0]["problems"][0] if isinstance(document, list) else document["error"]
    assert (error["file"], error["message"]) == ("nope.yaml", "nope.yaml: no such spec file")


@pytest.mark.parametrize("job", [TINY_JOB, LOCAL_INPUT], ids=["valid", "refused"])
def test_both_validates_answer_in_one_shape(specs, tmp_path, job):
    """Before, `tune validate -o json` printed `{"file", "valid", "summary"}` when valid and `{"error": ...}` when
    not, while `validate` prints one list of reports either way: a script read the two differently. (The tuning
    spec's `job:` is read at its absolute path, so its places are written relative here to compare.)"""
    specs(job)

    reports = [json.loads(CliRunner().invoke(main, [*command, "-o", "json"]).stdout.replace(f"{tmp_path}/", ""))
               for command in (("validate", "tiny.yaml"), ("tune", "validate", "search.yaml"))]

    assert [[list(report) for report in listed] for listed in reports] == [
        [["file", "valid", "summary", "problems", "warnings"]]] * 2
    (job_report,), (search_report,) = reports
    assert search_report["valid"] is job_report["valid"] and search_report["file"] == "search.yaml"
    assert search_report["problems"] == job_report["problems"]  # the job spec's, at tiny.yaml's lines


def test_tune_validate_shows_the_findings_it_allows_as_validate_does(specs, tmp_path):
    """Before, `tune validate --allow-unverified` printed only its ✓ line: the unverified combination it let
    through (and every notice about the job spec) went unseen, while `validate` lists each at its line."""
    specs(UNVERIFIED)
    commands = (("validate", "tiny.yaml", "--allow-unverified"), ("tune", "validate", "search.yaml",
                                                                  "--allow-unverified"))

    shown = [CliRunner().invoke(main, command).output.replace(f"{tmp_path}/", "") for command in commands]
    reported = [json.loads(CliRunner().invoke(main, [*command, "-o", "json"]).stdout.replace(f"{tmp_path}/", ""))[0]
                for command in commands]

    finding = "  unverified (allowed by allow_unverified): tiny.yaml:8:12: instance.type: "
    assert all(finding in output for output in shown), shown
    assert shown[0].split("\n", 1)[1] == shown[1].split("\n", 1)[1]  # below the ✓ line, the same findings
    assert reported[0]["warnings"] == reported[1]["warnings"] != []


@pytest.mark.parametrize(("command", "spelling"), [
    (("plan", "tiny.yaml"), "--name"), (("submit", "tiny.yaml", "--dry-run"), "--name"),
    (("tune", "plan", "search.yaml"), "--job-name"),
], ids=lambda value: " ".join(value) if isinstance(value, tuple) else value)
def test_job_name_and_name_are_one_option_on_every_planning_command(specs, command, spelling):
    """Before, `plan` and `submit` took only `--job-name` and `tune plan|submit` only `--name` for the same idea;
    each now takes both (the tune commands' `--name` and `tune submit --name` are tested with their own)."""
    specs(TINY_JOB)

    result = CliRunner().invoke(main, [*command, spelling, "chosen-1", "-o", "json"])

    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document.get("job_name", document.get("tuning_job_name")) == "chosen-1"


@pytest.mark.parametrize("command", [("plan",), ("submit",), ("tune", "plan"), ("tune", "submit")], ids=" ".join)
def test_help_names_the_job_name_option_once(command):
    """`--name` stays an accepted spelling; --help shows one name, the same on all four commands."""
    shown = CliRunner().invoke(main, [*command, "--help"]).output

    assert "--job-name NAME" in shown and "--name" not in shown.replace("--name-", "")


def test_submit_dry_run_full_prints_what_plan_full_prints(specs):
    """Before, `submit --dry-run`, said to print the plan "exactly as `smtrain plan` does", had no --full (`No such
    option`), so the exact request was only one command away."""
    specs(TINY_JOB)

    dry = CliRunner().invoke(main, ["submit", "tiny.yaml", "--dry-run", "--full", "--job-name", "tiny-1"])
    planned = CliRunner().invoke(main, ["plan", "tiny.yaml", "--full", "--job-name", "tiny-1"])

    assert dry.exit_code == planned.exit_code == 0, dry.output
    assert dry.output == planned.output and "CreateTrainingJob request" in dry.output


def test_submit_full_without_dry_run_is_refused_before_anything_is_sent(specs):
    specs(TINY_JOB)

    result = CliRunner().invoke(main, ["submit", "tiny.yaml", "--full"])

    assert result.exit_code == 2
    assert "--full prints the plan: give it with --dry-run" in result.output


def test_the_plans_sources_name_allow_unverified_as_typed(specs):
    """Before: `submit --dry-run --allow-unverified` said the value came from `--set allow_unverified=true`, an
    option the user never typed."""
    specs(UNVERIFIED)

    result = CliRunner().invoke(main, ["submit", "tiny.yaml", "--dry-run", "--allow-unverified", "--job-name",
                                       "tiny-1", "-o", "json"])

    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["sources"]["allow_unverified"] == {"from": "--allow-unverified",
                                                                        "where": "--allow-unverified"}
    text = CliRunner().invoke(main, ["submit", "tiny.yaml", "--dry-run", "--allow-unverified", "--job-name", "tiny-1"])
    assert "  from --allow-unverified: allow_unverified" in text.output.splitlines()
