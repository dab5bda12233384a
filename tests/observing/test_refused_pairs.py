"""A script in nanoGPT's form (tests/specs/equals_scripts/, written for smtrain), given SageMaker's `--batch_size 4`:
its configurator.py, run by exec() at train.py:8, refuses it with a bare AssertionError, at `File "<string>", line
N` with no source line. validate warned with the fix before the run; the failure cause repeats it, from a local
run's logs and from CloudWatch's alike, where the source dir is here to tell that line from any other assert."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest
from job_fakes import SubmittedFrom, described, seed_lines
from recorded_sagemaker_logs import failure_reason, toolkit_failure, toolkit_start

from orchestrator.cloud.jobs import JobClient
from orchestrator.observing.root_cause import PROCESS, Launcher, SourcePaths, read_cause
from orchestrator.redact import mask_text
from orchestrator.specs.loader import from_mapping

SCRIPTS = Path(__file__).resolve().parents[1] / "specs" / "equals_scripts"
EXEC_LINE = 8
"""The line of equals_scripts/train.py that runs its configurator."""
COMMAND = "/opt/conda/bin/python3.11 train.py --batch_size 4 --n_layer 1"
SPEC = {"name": "nanogpt", "entry_point": "train.py", "framework_version": "2.10.0", "source_dir": "src",
        "instance": {"type": "ml.g5.2xlarge", "count": 1}, "distribution": {"mode": "none"},
        "hyperparameters": {"batch_size": 4, "n_layer": 1}}


@pytest.fixture
def here(tmp_path: Path, monkeypatch) -> Path:
    """The script and its configurator as the source dir `src` of the working directory."""
    shutil.copytree(SCRIPTS, tmp_path / "src", ignore=shutil.ignore_patterns("SOURCE"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def traceback(here: Path) -> list[str]:
    """The script's own traceback for SageMaker's first pair, run in a copy of the source dir, with that copy's
    path as the container's, /opt/ml/code."""
    code = here / "code"
    shutil.copytree(here / "src", code)
    ran = subprocess.run([sys.executable, "train.py", "--batch_size", "4", "--n_layer", "1"], cwd=code,
                         capture_output=True, text=True, timeout=60, check=False)
    assert ran.returncode == 1 and ran.stderr.rstrip().endswith("AssertionError"), ran.stderr
    return ran.stderr.replace(str(code), "/opt/ml/code").splitlines()


def _warned_fix(here: Path) -> str:
    """The fix validate, plan and smtrain local print before the run."""
    loaded = from_mapping(SPEC, base_dir=here)
    return next(finding.fix for finding in loaded.findings if finding.rule == "hyperparameters-as-two-arguments")


def _local_cause(lines: list[str], source: SourcePaths):
    return read_cause({"algo-1": [*toolkit_start(COMMAND), *lines, *toolkit_failure(1, COMMAND)]},
                      Launcher(PROCESS, ("algo-1",)), exit_codes={"algo-1": 1}, source=source)


def test_a_local_run_repeats_the_warnings_fix(here, traceback):
    cause = _local_cause(traceback, SourcePaths.of("src"))

    assert cause.headline() == f"algo-1 (rank 0) failed: AssertionError at src/train.py:{EXEC_LINE}"
    assert (cause.category, cause.fix) == ("argument_rejected", _warned_fix(here))
    assert "wrapper" in cause.fix and "docs/bring-your-own-script.md" in cause.fix
    assert mask_text(cause.fix) == cause.fix  # a run's text is masked, and `--key=...` is a secret-looking flag


def test_a_job_this_process_submitted_repeats_it_from_its_cloudwatch_streams(here, traceback, stubbed_sagemaker):
    stubbed_sagemaker.stubbers["sagemaker"].add_response("describe_training_job", described(
        "nanogpt-pairs", "Failed", "Failed", HyperParameters={"sagemaker_program": '"train.py"'},
        TrainingEndTime=datetime.now(timezone.utc), FailureReason=failure_reason(1, COMMAND)))
    seed_lines("nanogpt-pairs", {"algo-1": [*toolkit_start(COMMAND), *traceback, *toolkit_failure(1, COMMAND)]})

    cause = JobClient("nanogpt-pairs", stubbed_sagemaker, SubmittedFrom(here / "src")).failure_cause()

    assert cause.headline() == f"algo-1 (rank 0) failed: AssertionError at src/train.py:{EXEC_LINE}"
    assert (cause.category, cause.fix) == ("argument_rejected", _warned_fix(here))


def test_other_assertion_errors_get_no_guess(here, traceback):
    """Another line of train.py, the source dir not here (`smtrain status JOB` of a job submitted elsewhere), a
    script whose exec()'d file reads pairs: the bare error, as before."""
    elsewhere = [re.sub(rf"\bline {EXEC_LINE}\b", "line 120", line) for line in traceback]
    assert elsewhere != traceback
    (here / "other").mkdir()
    (here / "other" / "configurator.py").write_text("import argparse\nassert False\n")
    (here / "other" / "train.py").write_text("\n" * (EXEC_LINE - 1) + "exec(open('configurator.py').read())\n")

    for cause in (_local_cause(elsewhere, SourcePaths.of("src")), _local_cause(traceback, SourcePaths()),
                  _local_cause(traceback, SourcePaths.of("other"))):
        assert (cause.exception, cause.category, cause.fix) == ("AssertionError", "exception", None), cause
