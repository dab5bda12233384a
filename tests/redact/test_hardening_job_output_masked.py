"""What a job prints: the shell's own credentials (every job inherits them) and the credentials-file
form `aws_secret_access_key = v` are masked on the console, in the log, the failure file, result.json and
status.json."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
import yaml

from orchestrator.redact import machine_secrets, mask_text

pytestmark = pytest.mark.hardening

SHELL_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYSHELLKEY"
FILE_SECRET = "fIlEsEcReT/abc+123"


def test_the_credentials_file_form_is_masked_and_comparisons_are_left_alone():
    assert FILE_SECRET not in mask_text(f"aws_secret_access_key = {FILE_SECRET}")
    assert mask_text('if key == "x":') == 'if key == "x":'


def test_only_long_values_of_the_shells_secret_looking_variables_count():
    assert machine_secrets({"AWS_SECRET_ACCESS_KEY": SHELL_SECRET, "USE_KEYRING": "true", "HOME": "/root"}) == {
        SHELL_SECRET}


@pytest.mark.slow
def test_a_job_printing_the_shells_key_and_a_credentials_file_shows_neither(tmp_path):
    (tmp_path / "train.py").write_text(textwrap.dedent("""
        import os
        print("env:", os.environ["AWS_SECRET_ACCESS_KEY"], flush=True)
        print("[default]\\naws_secret_access_key = %s" % os.environ["FILE_SECRET"], flush=True)
        raise RuntimeError("aws_secret_access_key = %s" % os.environ["FILE_SECRET"])
    """))
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({"name": "masked", "entry_point": "train.py", "framework_version": "2.3.0",
                                    "instance": {"type": "ml.c5.2xlarge", "count": 1}, "max_run_seconds": 600}))
    run = tmp_path / "run"
    env = {**os.environ, "AWS_SECRET_ACCESS_KEY": SHELL_SECRET, "FILE_SECRET": FILE_SECRET}
    result = subprocess.run([sys.executable, "-m", "orchestrator", "local", str(spec), "--run-dir", str(run),
                             "--verbose"], capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    log = (run / "logs" / "algo-1.log").read_text()
    assert "env: ****" in log and "aws_secret_access_key = ****" in log  # the lines are there, masked
    shown = {"console": result.stdout + result.stderr, "log": log,
             "failure file": (run / "algo-1" / "output" / "failure").read_text(),
             "result.json": (run / "result.json").read_text(), "status.json": (run / "status.json").read_text()}
    for where, text in shown.items():
        assert SHELL_SECRET not in text and FILE_SECRET not in text, where
