"""One masking mechanism (orchestrator/redact.py) for every output: the cloud side's failure reasons and
log lines, nested hyperparameter values in plans, `--set` notices, and the run's files and console."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from click.testing import CliRunner
from rich.pretty import pretty_repr

from orchestrator.cli.main import main
from orchestrator.planning.plan import build_plan
from orchestrator.planning.target import Target
from orchestrator.planning.tuning import build_tuning_plan
from orchestrator.redact import MASK, mask_text, redact, secret_values
from orchestrator.specs.loader import load, load_tuning

pytestmark = pytest.mark.hardening

SPEC = """\
name: leak
entry_point: train.py
framework_version: "2.3.0"
role: arn:aws:iam::123456789012:role/R
output_path: s3://bucket/out/
region: us-east-1
instance: {type: ml.c5.2xlarge, count: 1}
metrics: []
hyperparameters:
  api_keys: [alpha-secret-1, beta-secret-2]
  creds: {private: gamma-secret-3}
  db_password: delta-secret-4
"""


def test_the_request_values_are_masked_json_decoded_and_nested():
    """The cloud side reads the request back: hyperparameters are JSON text there, nested ones included."""
    secrets = secret_values({"api-token": '"tok-12345"', "creds": '{"private": "gamma-secret-3"}',
                             "api_keys": '["alpha-secret-1", "beta-secret-2"]'})
    text = "tok-12345 gamma-secret-3 alpha-secret-1 beta-secret-2"
    assert mask_text(text, secrets) == " ".join([MASK] * 4)


def test_aws_errors_has_no_masking_of_its_own():
    import orchestrator.cloud.aws_errors as aws_errors

    assert not hasattr(aws_errors, "mask_secrets") and not hasattr(aws_errors, "secret_values")


def test_plan_masks_list_and_nested_values(tmp_path):
    (tmp_path / "train.py").write_text("print(1)\n")
    (tmp_path / "spec.yaml").write_text(SPEC)
    for output in ("json", "text"):
        result = CliRunner().invoke(main, ["plan", str(tmp_path / "spec.yaml"), "-o", output])
        assert result.exit_code == 0, result.output
        assert "secret-" not in result.output, output


def test_redact_masks_inside_the_json_text_of_a_request_hyperparameter():
    request = {"HyperParameters": {"creds": json.dumps({"private": "gamma-secret-3", "user": "bob"}),
                                   "layers": "[1, 2]"}}
    assert json.loads(redact(request)["HyperParameters"]["creds"]) == {"private": MASK, "user": "bob"}
    assert redact(request)["HyperParameters"]["layers"] == "[1, 2]"


@pytest.mark.parametrize("override", ["hyperparameters.db_password=eps secret$5",
                                      "hyperparameters.db_password=[epsilon-secret-5, x]",
                                      "hyperparameters.creds={private: eps secret$5}"])
def test_set_notice_does_not_echo_a_secret_value(tmp_path, override):
    (tmp_path / "train.py").write_text("print(1)\n")
    (tmp_path / "spec.yaml").write_text(SPEC)
    result = CliRunner().invoke(main, ["validate", str(tmp_path / "spec.yaml"), "--set", override])
    assert result.exit_code == 0, result.output
    assert "--set hyperparameters." in result.output  # the notice is there, naming the override
    assert "eps" not in result.output and "secret-" not in result.output


def _notebook_objects(tmp_path):
    """A spec, what load returns, a plan and a tuning plan, with secrets nested, in lists and quoted."""
    (tmp_path / "train.py").write_text("print(1)\n")
    (tmp_path / "spec.yaml").write_text(SPEC.replace("metrics: []", "metrics: [{name: 'train:loss', regex: 'loss=(\\S+)'}]")
                                        + "environment: {HF_TOKEN: \"it's-zeta-secret-6\"}\n")
    loaded = load(tmp_path / "spec.yaml")
    job_plan = build_plan(loaded, Target(region="us-east-1", role="arn:aws:iam::123456789012:role/R",
                                         output_path="s3://bucket/out/", code_location="s3://bucket/code"))
    tuning_file = tmp_path / "search.yaml"
    tuning_file.write_text(f"job: {tmp_path / 'spec.yaml'}\nobjective: {{metric: \"train:loss\", type: Minimize}}\n"
                           "strategy: Grid\nparameters: {api_token: {type: categorical, values: [eta-secret-7]}}\n")
    return loaded.spec, loaded, job_plan, build_tuning_plan(load_tuning(tuning_file), job_plan.target, name="search")


def test_what_a_notebook_shows_of_a_spec_or_plan_hides_its_secrets(tmp_path):
    """A notebook cell ending in a spec, a plan or a submission shows its repr; the repr and str mask the
    secrets (nested, in lists, quoted) and nothing else: `output_kms_key=None` is no secret."""
    shown = {f"{kind.__name__}({type(value).__name__})": kind(value) for value in _notebook_objects(tmp_path)
             for kind in (repr, str)}
    for name, text in shown.items():
        assert "secret-" not in text, name
        assert MASK in text or name.endswith("(Plan)"), name  # a plan's repr is one line without them
    assert "output_kms_key=None" in shown["repr(JobSpec)"] and "output_kms_key=None" in shown["str(JobSpec)"]


def test_the_html_a_notebook_shows_of_a_plan_hides_its_secrets(tmp_path):
    """Jupyter shows a plan's `_repr_html_` (the lines of `smtrain plan`): masked as its repr is, a secret value
    included wherever it appears (here in a finding's message), in its HTML-escaped form too."""
    _, _, job_plan, _ = _notebook_objects(tmp_path)
    assert "api_keys=****" in job_plan._repr_html_()  # the hyperparameters line, from the masked document
    found = job_plan.findings[0]
    leaked = replace(found, message=f"{found.message} (it's-zeta-secret-6)")  # escaped: it&#x27;s-zeta-secret-6
    object.__setattr__(job_plan, "findings", [leaked])  # a frozen dataclass
    shown = job_plan._repr_html_()
    assert "zeta" not in shown and f"({MASK})" in shown


def test_a_function_job_shows_its_keywords_with_secrets_masked():
    import orchestrator

    shown = orchestrator.remote(environment={"HF_TOKEN": "zeta-secret-6", "TOKEN_URL": "https://u:pw-secret@h"},
                                tags={"api-key": "eta-secret-7"}, spec={"hyperparameters": {"pass": "x",
                                                                                             "creds": "AKIAABCDEFGHIJKLMNOP"}},
                                requirements=["pkg @ https://user:theta-secret-8@host/pkg.tar.gz"])(print)
    for text in (repr(shown), str(shown), pretty_repr(shown)):
        assert "secret-" not in text and "AKIA" not in text and MASK in text, text


def test_rich_shows_a_spec_field_by_field_with_its_secrets_masked(tmp_path):
    """rich's notebook display (`%load_ext rich`), `rich.print` and `rich.pretty` read a pydantic model's fields
    through `__rich_repr__`, not its repr: the spec's secrets are masked there too, and its other fields shown."""
    shown = {type(value).__name__: pretty_repr(value) for value in _notebook_objects(tmp_path)}
    for name, text in shown.items():
        assert "secret-" not in text and (MASK in text or name == "Plan"), (name, text)
    assert "    hyperparameters={\n        'api_keys': ['****', '****']," in shown["JobSpec"]
    assert "environment={'HF_TOKEN': '****'}" in shown["JobSpec"] and "output_kms_key=None" in shown["JobSpec"]
