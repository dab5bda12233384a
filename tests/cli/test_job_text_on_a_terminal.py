"""A job's output is untrusted: no terminal control it prints reaches the user's terminal through `smtrain logs` or
`smtrain status` (its failure, the cause and the failing host's last lines), for a local run and a SageMaker job
alike, whether stdout is a terminal (click keeps escape sequences there: `color=True`) or a pipe; and a sequence
printed inside a secret does not keep it from being masked (plain_text runs before the masking). An invisible or
bidirectional character is shown where it was (`<U+202E>`), never acted on by the terminal, and one written
inside a secret does not keep it from being masked either: each class Unicode draws as nothing (format characters,
line and paragraph separators, default-ignorables), in each place a job's text enters."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import forked
import pytest
import yaml
from click.testing import CliRunner
from job_fakes import SECRET, create_jobs, described, seed_logs
from terminal_controls import CONTROLS, INVISIBLES, SPLITTERS, unseen

from orchestrator.cli.main import main
from orchestrator.contract import RUN_MARKER_FILE
from orchestrator.redact import MASK, SHOWN_CHARACTER

pytestmark = pytest.mark.hardening

PRINTED = [printed for printed, _ in CONTROLS.values()]
SHOWN = [line for _, shown in CONTROLS.values() for line in shown.split("\n")]
SPLIT_SECRET = f"token {SECRET[:7]}\x1b[1m{SECRET[7:]}\x1b[0m end"
"""The secret with colour inside it, as a logger that colours part of a value prints it."""
FAILURE = ["Traceback (most recent call last):", '  File "/opt/ml/code/train.py", line 3, in <module>',
           "\x1b[1;35mValueError\x1b[0m: bad \x1b]0;pwned\x07shape\x1b[2K\r\x1b[32mCompleted\x1b[0m"]
REASON = "AlgorithmError: ValueError: bad \x1b]52;c;cm0gLXJm\x07shape\x1b[1A\x1b[2K\rCompleted ExitCode 1"


UNSEEN_SPLIT_SECRET = f"token {SECRET[:7]}\u200b{SECRET[7:]} end"
"""The secret with a zero-width space inside it: it reads as the secret, and str.replace would not find it."""
SPLIT_BY_EACH = [f"token {SECRET[:7]}{splitter}{SECRET[7:]} end" for splitter in SPLITTERS.values()]
"""The secret split by one character of each class plain_text shows, a line each."""


def _controls(text: str) -> list[str]:
    return [character for character in text if (ord(character) < 32 and character not in "\t\n")
            or 0x7F <= ord(character) <= 0x9F]


def _unmarked(text: str) -> str:
    """`text` without the marks of shown characters: the secret must not be there either."""
    return SHOWN_CHARACTER.sub("", text)


def _smtrain(*args: str, colour: bool, obj=None):
    shown = CliRunner().invoke(main, list(args), obj=obj, color=colour)
    assert shown.exit_code == 0, shown.output
    assert _controls(shown.output) == [], shown.output
    return shown


def _local_run(run_dir: Path) -> Path:
    """A local run as `smtrain local` of an earlier version leaves it: its log holds the job's bytes as printed."""
    (run_dir / "logs").mkdir(parents=True)
    (run_dir / RUN_MARKER_FILE).touch()
    (run_dir / "logs" / "algo-1.log").write_text("\n".join([*PRINTED, *FAILURE]) + "\n")
    status = described(run_dir.name, "Failed", "Failed", FailureReason=REASON,
                       TrainingEndTime=datetime.now(timezone.utc),
                       ResourceConfig={"InstanceType": "ml.c5.2xlarge", "InstanceCount": 1, "VolumeSizeInGB": 30})
    status = {key: value.isoformat() if isinstance(value, datetime) else value for key, value in status.items()}
    (run_dir / "status.json").write_text(json.dumps(status))
    return run_dir


@pytest.mark.parametrize("colour", [True, False], ids=["terminal", "pipe"])
def test_logs_of_a_local_run_show_no_control_of_the_job(tmp_path, colour):
    run_dir = _local_run(tmp_path / "run")

    shown = _smtrain("logs", str(run_dir), colour=colour)

    assert shown.stdout.splitlines()[:len(SHOWN)] == [f"[algo-1] {line}" for line in SHOWN]
    assert "[algo-1] ValueError: bad shape\n[algo-1] Completed\n" in shown.stdout


@pytest.mark.parametrize("colour", [True, False], ids=["terminal", "pipe"])
def test_status_of_a_local_run_shows_its_failure_and_cause_without_controls(tmp_path, colour):
    run_dir = _local_run(tmp_path / "run")

    shown = _smtrain("status", str(run_dir), colour=colour)
    document = json.loads(_smtrain("status", str(run_dir), "-o", "json", colour=colour).stdout)

    assert "AlgorithmError: ValueError: bad shape\n" in shown.stdout  # the overwrite is a line of its own
    assert "algo-1 (rank 0) failed: ValueError: bad shape at train.py:3" in shown.stdout, shown.stdout
    assert document["failure_cause"]["exception"] == "ValueError: bad shape"


@pytest.mark.parametrize("colour", [True, False], ids=["terminal", "pipe"])
def test_logs_of_a_sagemaker_job_show_no_control_and_mask_a_secret_split_by_colour(tiny_plan, aws, colour):
    create_jobs(tiny_plan.create_training_job_request, ["tiny-a"])
    seed_logs("tiny-a", {"algo-1": list(enumerate([*PRINTED, SPLIT_SECRET]))})

    shown = _smtrain("logs", "tiny-a", colour=colour)
    lines = [json.loads(line)["message"] for line in _smtrain("logs", "tiny-a", "-o", "json", colour=colour).stdout
             .splitlines()]

    assert shown.stdout.splitlines() == [f"[algo-1] {line}" for line in [*SHOWN, f"token {MASK} end"]]
    assert lines == [*SHOWN, f"token {MASK} end"]  # an event's lines are lines of their own, as a local run's
    assert SECRET not in shown.stdout


@pytest.mark.parametrize("colour", [True, False], ids=["terminal", "pipe"])
def test_status_of_a_sagemaker_job_shows_its_failure_reason_and_cause_without_controls(stubbed_sagemaker, colour):
    stubbed_sagemaker.stubbers["sagemaker"].add_response("describe_training_job", described(
        "tiny-failed", "Failed", "Failed", TrainingEndTime=datetime.now(timezone.utc),
        HyperParameters={"sagemaker_program": '"train.py"', "api-token": SECRET},
        FailureReason=REASON + f" {SECRET[:7]}\x1b[0m{SECRET[7:]}",
        SecondaryStatusTransitions=[{"Status": "Failed", "StartTime": datetime.now(timezone.utc),
                                     "StatusMessage": "Training job failed: \x1b]0;pwned\x07bad"}]))
    seed_logs("tiny-failed", {"algo-1": list(enumerate(FAILURE)), "algo-2": [(0, SPLIT_SECRET)]})

    shown = _smtrain("status", "tiny-failed", colour=colour, obj=stubbed_sagemaker)

    assert f"AlgorithmError: ValueError: bad shape\n{' ' * 13}Completed ExitCode 1 {MASK}\n" in shown.stdout
    assert "algo-1 (rank 0) failed: ValueError: bad shape at train.py:3" in shown.stdout, shown.stdout
    assert "Training job failed: bad" in shown.stdout
    assert SECRET not in shown.stdout


@pytest.mark.parametrize("colour", [True, False], ids=["terminal", "pipe"])
def test_logs_of_a_sagemaker_job_show_where_each_invisible_character_was_and_mask_a_secret_split_by_one(
        tiny_plan, aws, colour):
    create_jobs(tiny_plan.create_training_job_request, ["tiny-a"])
    seed_logs("tiny-a", {"algo-1": list(enumerate([printed for printed, _ in INVISIBLES.values()]
                                                   + [UNSEEN_SPLIT_SECRET, *SPLIT_BY_EACH]))})

    shown = _smtrain("logs", "tiny-a", colour=colour)

    assert unseen(shown.stdout) == [] and SECRET not in _unmarked(shown.stdout)
    assert shown.stdout.splitlines() == [f"[algo-1] {line}" for _, line in INVISIBLES.values()] + [
        f"[algo-1] token {MASK} end"] * (1 + len(SPLIT_BY_EACH))


@pytest.mark.parametrize("colour", [True, False], ids=["terminal", "pipe"])
def test_status_of_a_sagemaker_job_shows_where_each_invisible_character_of_its_failure_was(stubbed_sagemaker, colour):
    """A right-to-left override would show `Failed` reversed, and hide which file failed; the failure reason, the
    status history and the cause show each such character where it was, and mask a secret split by one."""
    stubbed_sagemaker.stubbers["sagemaker"].add_response("describe_training_job", described(
        "tiny-failed", "Failed", "Failed", TrainingEndTime=datetime.now(timezone.utc),
        HyperParameters={"sagemaker_program": '"train.py"', "api-token": SECRET},
        FailureReason=f"AlgorithmError: \u202edeliaF\u202c ExitCode 1 {UNSEEN_SPLIT_SECRET} {' '.join(SPLIT_BY_EACH)}",
        SecondaryStatusTransitions=[{"Status": "Failed", "StartTime": datetime.now(timezone.utc),
                                     "StatusMessage": f"Training job failed: \u2067bad\u2069 {SPLIT_BY_EACH[-1]}"}]))
    seed_logs("tiny-failed", {"algo-1": list(enumerate(
        ["Traceback (most recent call last):", '  File "/opt/ml/code/\u202etxt.niart\u202c.py", line 3, in <module>',
         f"ValueError: bad shape {SPLIT_BY_EACH[0]}"]))})

    shown = _smtrain("status", "tiny-failed", colour=colour, obj=stubbed_sagemaker)

    assert unseen(shown.stdout) == [] and SECRET not in _unmarked(shown.stdout), shown.stdout
    assert (f"AlgorithmError: <U+202E>deliaF<U+202C> ExitCode 1 token {MASK} end"
            + f" token {MASK} end" * len(SPLIT_BY_EACH) + "\n") in shown.stdout, shown.stdout
    assert "Training job failed: <U+2067>bad<U+2069>" in shown.stdout
    assert f"ValueError: bad shape token {MASK} end at <U+202E>txt.niart<U+202C>.py:3" in shown.stdout, shown.stdout


@pytest.mark.slow
def test_a_local_run_streams_and_logs_its_output_without_controls_and_masked(tmp_path):
    """The supervisor's read of a rank's pipe: `smtrain local`'s streamed lines, the run's log file and what
    `logs` and `status` read from it."""
    source = tmp_path / "src"
    source.mkdir()
    (source / "train.py").write_text(f"import sys\nfor line in {[*PRINTED, SPLIT_SECRET, *SPLIT_BY_EACH]!r}:\n"
                                     "    print(line)\n"
                                     "sys.stdout.flush()\nraise ValueError('bad \\x1b]0;pwned\\x07shape\\x1b[2K\\rCompleted')\n")
    spec = {"name": "hostile", "entry_point": "train.py", "source_dir": "src", "framework_version": "2.10.0",
            "instance": {"type": "ml.c5.2xlarge", "count": 1}, "distribution": {"mode": "none"}, "metrics": [],
            "environment": {"WANDB_API_KEY": SECRET}, "max_run_seconds": 600}
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    run_dir = tmp_path / "run"

    ran = forked.smtrain("local", str(tmp_path / "spec.yaml"), "--run-dir", str(run_dir), cwd=tmp_path, timeout=300)
    logs = _smtrain("logs", str(run_dir), colour=True)
    status = _smtrain("status", str(run_dir), colour=True)

    assert ran.returncode == 1, ran.stdout + ran.stderr
    for shown in (ran.stdout, ran.stderr, (run_dir / "logs" / "algo-1.log").read_text(), logs.stdout, status.stdout):
        assert _controls(shown) == [] and unseen(shown) == [] and SECRET not in _unmarked(shown), shown
    streamed = [line for line in ran.stdout.splitlines() if line.startswith("[algo-1] ")]
    masked = [f"token {MASK} end"] * (1 + len(SPLIT_BY_EACH))
    assert streamed[:len(SHOWN) + len(masked)] == [f"[algo-1] {line}" for line in [*SHOWN, *masked]]
    assert "  failure    algo-1 (rank 0) failed: ValueError: bad shape at src/train.py:5\n" in status.stdout, status.stdout
