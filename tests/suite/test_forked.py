"""tests/support/forked.py stands in for `subprocess.run` in the CLI tests: a program forked from a warm interpreter
must give what a fresh process gives, or those tests would pass on behaviour users never see."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from forked import run_forked, smtrain

# A planned job's name ends in the time it was planned at.
STAMP = re.compile(r"\d{4}(-\d{2}){5}-\d{3}-[a-z0-9]{4}")
SPEC = "name: forked\nentry_point: train.py\nframework_version: '2.3.0'\ninstance: {type: ml.c5.2xlarge}\n"


def _fresh(*args: str, cwd) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestrator", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=600, check=False)


@pytest.mark.parametrize("spec", [SPEC, SPEC + "instance_typo: 1\n", SPEC.replace("'2.3.0'", "2.10")],
                         ids=["valid", "unknown-key", "unquoted-version"])
def test_smtrain_forked_gives_a_fresh_processs_exit_code_and_output(tmp_path, spec):
    (tmp_path / "train.py").write_text("print(1)\n")
    (tmp_path / "spec.yaml").write_text(spec)
    plan = ("plan", "spec.yaml", "-o", "json", "--set", "role=arn:aws:iam::123456789012:role/R",
            "--set", "output_path=s3://bkt/o/", "--set", "region=us-east-1")
    for args in (("validate", "spec.yaml"), plan):
        forked, fresh = smtrain(*args, cwd=tmp_path), _fresh(*args, cwd=tmp_path)
        assert forked.returncode == fresh.returncode
        assert STAMP.sub("<time>", forked.stdout + forked.stderr) == STAMP.sub("<time>", fresh.stdout + fresh.stderr)


def test_a_program_gets_the_calls_arguments_environment_and_folder_and_its_traceback_is_shown(tmp_path):
    program = tmp_path / "program.py"
    program.write_text("import os, sys\nprint(sys.argv[1:], os.environ['PROBE'], os.getcwd(), sys.path[0])\n"
                       "raise KeyError('unhandled')\n")
    result = run_forked(str(program), ["a", "b c"], (), cwd=tmp_path, env={"PROBE": "here"})
    assert result.returncode == 1
    assert result.stdout.strip() == f"['a', 'b c'] here {tmp_path} {tmp_path}"
    assert "Traceback" in result.stderr and "KeyError: 'unhandled'" in result.stderr


def test_a_program_past_its_time_limit_or_memory_cap_is_stopped(tmp_path):
    program = tmp_path / "program.py"
    program.write_text("import sys, time\nif sys.argv[1] == 'sleep':\n    time.sleep(600)\n"
                       "else:\n    ballast = bytearray(4 << 30)\n")
    with pytest.raises(subprocess.TimeoutExpired):
        run_forked(str(program), ["sleep"], (), timeout=1)
    result = run_forked(str(program), ["allocate"], (), memory_limit_bytes=1 << 30)
    assert result.returncode == 1 and "MemoryError" in result.stderr
