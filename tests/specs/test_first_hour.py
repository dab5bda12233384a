"""What a new user meets in the first hour: fixes that name what the user wrote, warnings that show,
JSON errors under `--output json`, one table style, exit codes in `smtrain --help`, `schema -o`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from orchestrator.cli.main import main
from orchestrator.specs.capabilities import check
from orchestrator.specs.loader import load

REPO = Path(__file__).resolve().parents[2]
SPEC = """\
name: demo
entry_point: train.py
source_dir: .
framework_version: "2.10.0"
role: arn:aws:iam::123456789012:role/Demo
instance: {type: ml.c5.2xlarge, count: 2}
distribution: {mode: none}
hyperparameters: {trainer: gloo, epochs: 1}
output_path: s3://demo-bucket/outputs/
"""


def _invoke(*args: str):
    return CliRunner().invoke(main, list(args))


# 1. A fix quotes the text the user wrote; an image past its end of patch is a warning.

def test_unquoted_version_fix_quotes_the_text_written_not_the_float(write_spec):
    spec = write_spec(SPEC.replace('framework_version: "2.10.0"', "framework_version: 2.10"))
    result = _invoke("validate", str(spec))
    assert result.exit_code == 2
    assert 'fix: write it in quotes: framework_version: "2.10"' in result.output
    assert '"2.1"' not in result.output


def test_unquoted_version_in_a_set_is_quoted_as_written_in_a_set_the_shell_keeps(write_spec):
    """The fix of a `--set` is a `--set`: the file's form (`framework_version: "2.10"`) does not fit the flag, and
    `--set framework_version="2.10"` loses its quotes to the shell, which leaves the float again."""
    result = _invoke("validate", str(write_spec(SPEC)), "--set", "framework_version=2.10")
    assert result.exit_code == 2
    assert "--set framework_version=2.10: framework_version:" in result.output
    assert "fix: write it in quotes: --set 'framework_version=\"2.10\"'" in result.output
    assert _invoke("validate", str(write_spec(SPEC)), "--set", 'framework_version="2.10.0"').exit_code == 0


def test_an_image_past_its_end_of_patch_is_a_warning_not_a_notice(write_spec):
    result = _invoke("validate", str(write_spec(SPEC.replace('"2.10.0"', '"2.3.0"'))))
    assert result.exit_code == 0
    assert "WARNING: " in result.output and "left AWS's patch support" in result.output
    [finding] = [item for item in load(write_spec(SPEC.replace('"2.10.0"', '"2.3.0"'))).findings
                 if item.rule == "image-end-of-patch"]
    assert finding.severity == "warning"


# 6. Every command's --output json gives one JSON object on stdout for errors too.

@pytest.mark.parametrize("command", [["validate"], ["plan"], ["local"], ["submit"], ["submit", "--dry-run"]])
def test_json_error_for_an_invalid_spec_names_file_line_field_and_fix(write_spec, command):
    spec = write_spec(SPEC.replace("instance: {", "instanse: {type: ml.c5.xlarge}\ninstance: {"))
    result = _invoke(*command, str(spec), "-o", "json")
    assert result.exit_code == 2
    document = json.loads(result.stdout)
    if command == ["validate"]:
        [report] = document
        problem = report["problems"][0]
    else:
        problem = document["error"]
        assert problem["type"] == "InvalidSpec" and problem["problems"][0]["field"] == "instanse"
    assert (problem["file"], problem["line"], problem["field"]) == (str(spec), 6, "instanse")
    assert problem["fix"] == "did you mean `instance`?" and "\n" not in problem["message"]


def test_json_error_for_a_missing_file_and_for_bad_usage(tmp_path):
    missing = _invoke("plan", str(tmp_path / "nope.yaml"), "--output=json")
    assert missing.exit_code == 2
    error = json.loads(missing.stdout)["error"]
    assert error["type"] == "SpecError" and "no such spec file" in error["message"] and error["fix"]
    usage = _invoke("local", str(tmp_path / "nope.yaml"), "--no-such-flag", "-o", "json")
    assert usage.exit_code == 2
    assert json.loads(usage.stdout)["error"]["type"] == "UsageError"


def test_json_error_for_status_without_credentials(monkeypatch, tmp_path):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    result = _invoke("status", "some-job", "-o", "json")
    assert result.exit_code == 2, result.output
    error = json.loads(result.stdout)["error"]
    assert error["message"] and error["fix"]


# 9. Smaller things.

def test_a_typo_in_a_set_key_is_blamed_on_the_set(write_spec):
    result = _invoke("validate", str(write_spec(SPEC)), "--set", "instanse.type=ml.c5.xlarge")
    assert result.exit_code == 2
    assert "--set instanse.type=ml.c5.xlarge: instanse: Extra inputs" in result.output
    assert "spec.yaml:1:1" not in result.output


def test_a_missing_entry_point_suggests_the_closest_script(write_spec):
    spec = write_spec(SPEC.replace("entry_point: train.py", "entry_point: trian.py"))
    result = _invoke("validate", str(spec))
    assert result.exit_code == 2
    assert "did you mean `train.py`?" in result.output


def test_help_lists_the_exit_codes():
    result = _invoke("--help")
    assert result.exit_code == 0
    for line in ("0    ok", "2    bad input", "3    the job was stopped", "4    a local run or SageMaker job hung", "130  interrupted"):
        assert line in result.output


def test_schema_has_an_output_option_with_yaml():
    as_yaml = _invoke("schema", "-o", "yaml")
    assert as_yaml.exit_code == 0, as_yaml.output
    assert yaml.safe_load(as_yaml.stdout) == json.loads(_invoke("schema", "-o", "json").stdout)


def test_images_and_instances_tables_share_one_style():
    def shape(args: list[str]) -> tuple[bool, str]:
        lines = _invoke(*args).stdout.splitlines()
        boxed = any(char in "".join(lines) for char in "┃━┏│─")
        return boxed, lines[0].split()[0]

    assert shape(["images"]) == (False, "version")
    assert shape(["instances", "--family", "g5"]) == (False, "type")


def test_examples_past_their_end_of_patch_are_only_those_whose_mode_has_no_patched_image():
    """SMDDP (and pytorchddp, which the SDK rewrites into it) ships in images up to 2.5 only, all past their end
    of patch; every other example targets an image AWS still patches."""
    past = {path.name for path in sorted((REPO / "job_specs").glob("*.yaml"))
            for finding in load(path).findings if finding.rule == "image-end-of-patch"}
    assert past == {"mlp-ddp-pytorchddp-1x-g5.12xlarge.yaml", "mlp-ddp-smddp-2x-p4d.24xlarge.yaml"}
    assert all(check(load(REPO / "job_specs" / name).spec) for name in past)


# 2. The hint for a missing torch names the CPU build.

def test_missing_torch_hint_names_the_cpu_index(tmp_path):
    import sys

    from orchestrator.emulator.preparing.prepared_run import _require_module
    from orchestrator.errors import EnvironmentProblem

    bare = tmp_path / "python"  # an interpreter without site-packages: no torch
    bare.write_text(f'#!/bin/sh\nexec {sys.executable} -S "$@"\n')
    bare.chmod(0o755)
    with pytest.raises(EnvironmentProblem) as raised:
        _require_module(str(bare), "torch", "train.py imports torch")
    assert "--index-url https://download.pytorch.org/whl/cpu" in raised.value.fix


def test_the_end_of_patch_fix_of_an_smddp_spec_does_not_offer_an_image_without_smddp():
    [finding] = [item for item in load(REPO / "job_specs" / "mlp-ddp-smddp-2x-p4d.24xlarge.yaml").findings
                 if item.rule == "image-end-of-patch"]
    assert finding.fix.endswith("with mode torch_distributed (no image AWS still patches carries SMDDP)")
