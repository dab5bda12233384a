"""A value that is a credential by its form (an AWS access key ID, a GitHub or Hugging Face token, a PEM private
key, a URL's password) is masked whatever it is called: in plans, in the notebook's repr, and in what a job
prints, on the console and in the run's files."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import yaml
from click.testing import CliRunner

from orchestrator.cli.main import main
from orchestrator.redact import MASK, mask_text, redact
from orchestrator.specs.loader import load

pytestmark = pytest.mark.hardening

AWS_KEY_ID = "AKIAZZTESTKEY7EXAMPL"
GITHUB_TOKEN = "ghp_" + "Gh0tOkEn" * 5
HF_TOKEN = "hf_" + "HfT0kEnX" * 4
URL_PASSWORD = "Url-Passw0rd"
PEM = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----"
SECRETS = (AWS_KEY_ID, GITHUB_TOKEN, HF_TOKEN, URL_PASSWORD, "b3BlbnNzaC1rZXktdjEAAAAA")


def test_credentials_are_masked_by_their_form_and_a_urls_host_stays():
    text = (f"key {AWS_KEY_ID}, token {GITHUB_TOKEN}; hub {HF_TOKEN}. "
            f"clone https://alice:{URL_PASSWORD}@git.example.com/repo.git\n{PEM}\ndone")
    assert mask_text(text) == (f"key {MASK}, token {MASK}; hub {MASK}. "
                               f"clone https://alice:{MASK}@git.example.com/repo.git\n{MASK}\ndone")


@pytest.mark.parametrize("text", ["s3://bucket/AKIA/data", "https://download.pytorch.org/whl/cpu",
                                  "git@github.com:org/repo.git", "hf_hub_download(repo_id)",
                                  "sha 0123456789abcdef0123456789abcdef01234567", "http://host:8080/path"])
def test_look_alikes_are_left_alone(text):
    assert mask_text(text) == text


def test_redact_masks_them_under_harmless_names_json_encoded_and_in_tags():
    request = {"HyperParameters": {"init": f'"{AWS_KEY_ID}"', "epochs": "3"},
               "Environment": {"HUB_URL": f"https://bob:{URL_PASSWORD}@hub.example.com"},
               "Tags": [{"Key": "owner", "Value": GITHUB_TOKEN}]}
    assert redact(request) == {"HyperParameters": {"init": f'"{MASK}"', "epochs": "3"},
                               "Environment": {"HUB_URL": f"https://bob:{MASK}@hub.example.com"},
                               "Tags": [{"Key": "owner", "Value": MASK}]}


def _spec(tmp_path, script="print(1)\n"):
    (tmp_path / "train.py").write_text(script)
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({
        "name": "by-form", "entry_point": "train.py", "framework_version": "2.3.0", "region": "us-east-1",
        "role": "arn:aws:iam::123456789012:role/R", "output_path": "s3://bucket/out/", "max_run_seconds": 600,
        "instance": {"type": "ml.c5.2xlarge", "count": 1}, "metrics": [],
        "hyperparameters": {"init": AWS_KEY_ID, "repo": f"https://alice:{URL_PASSWORD}@git.example.com/r.git"},
        "environment": {"MODEL_HUB": HF_TOKEN, "DEPLOY": GITHUB_TOKEN, "SIGNING": PEM}}))
    return spec


def test_plan_and_the_spec_repr_show_none_of_them(tmp_path):
    spec = _spec(tmp_path)
    for output in (["-o", "json"], ["-o", "text", "--full"]):
        result = CliRunner().invoke(main, ["plan", str(spec), *output])
        assert result.exit_code == 0, result.output
        assert "@git.example.com" in result.output, output  # the entry is shown, its password masked
        for secret in SECRETS:
            assert secret not in result.output, (output, secret)
    shown = repr(load(spec).spec)
    assert not any(secret in shown for secret in SECRETS) and MASK in shown


@pytest.mark.slow
def test_a_job_printing_them_shows_none_on_the_console_or_in_the_runs_files(tmp_path):
    spec = _spec(tmp_path, textwrap.dedent("""
        import os, sys
        print("argv", sys.argv, "env", os.environ["MODEL_HUB"], os.environ["DEPLOY"], flush=True)
        raise RuntimeError("cannot clone " + sys.argv[-1])
    """))
    run = tmp_path / "run"
    result = subprocess.run([sys.executable, "-m", "orchestrator", "local", str(spec), "--run-dir", str(run),
                             "--verbose"], check=False, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    log = (run / "logs" / "algo-1.log").read_text()
    assert "@git.example.com" in log  # the line is there, masked
    shown = {"console": result.stdout + result.stderr, "log": log,
             **{name: (run / name).read_text() for name in ("request.json", "result.json", "status.json")}}
    for where, text in shown.items():
        for secret in SECRETS:
            assert secret not in text, (where, secret)
