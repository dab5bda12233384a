"""A progress bar in a SageMaker job's CloudWatch logs. Public training logs show each newline-ended line as one
event with its control characters written as text, rsyslog's way: a carriage return as `#015`, an escape as `#033`
(`#015  0%|...#015 61%|...`, docs/sagemaker-contract.md §11). The events here are real captured output of
Lightning's bars (tests/observing/progress_bars/SOURCE) escaped that way, one event per line, a second apart:
`smtrain logs` shows them as the local log does, each state on a line of its own, and `smtrain status` reads the
step, the epoch and the rate from the bar's last state, as for a local run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from job_fakes import described, seed_logs, training

import orchestrator
from orchestrator.backends.sagemaker import SageMakerBackend
from orchestrator.cli.main import main
from orchestrator.observing.plain_text import plain

BARS = Path(__file__).parents[1] / "observing" / "progress_bars"


def _captured_lines(name: str) -> list[str]:
    """The capture's newline-ended lines, as the job printed them."""
    return (BARS / name).read_bytes().decode().split("\n")


def _as_cloudwatch_holds(line: str) -> str:
    return line.replace("\r", "#015").replace("\x1b", "#033")


def _seed(job_name: str, lines: list[str]) -> None:
    """One event per non-empty line, a second apart, as SageMaker writes a host's stream."""
    seed_logs(job_name, {"algo-1": [(1000 * index, _as_cloudwatch_holds(line))
                                    for index, line in enumerate(lines) if line]})


LAST_STATES = {
    "lightning_tqdm.out": "Epoch 2: 100%|██████████| 32/32 [00:00<00:00, 631.88it/s, train_loss=0.0544, val_loss=0.123]",
    "lightning_rich_force_color.out": "Epoch 2/2  ━━━━━━━━━━━━━━━━━ 32/32 0:00:01 • 0:00:00 25.12it/s train_loss: 0.054",
}


@pytest.mark.parametrize("name", LAST_STATES)
def test_logs_show_each_state_of_a_bar_on_a_line_of_its_own_as_the_local_log_does(stubbed_sagemaker, name):
    job_name = f"tiny-bar-{name.split('.')[0].replace('_', '-')}"
    stubbed_sagemaker.stubbers["sagemaker"].add_response("describe_training_job",
                                                         described(job_name, "Completed", "Completed"))
    captured = _captured_lines(name)
    _seed(job_name, captured)

    shown = [line.message for line in orchestrator.Job(SageMakerBackend(stubbed_sagemaker), job_name).logs()]

    assert shown == [state for line in captured if line for state in plain(line).split("\n")]
    assert not any("#015" in line or "#033" in line for line in shown)
    assert [line for line in shown if line.startswith("Epoch")][-1] == LAST_STATES[name]


def test_status_reads_the_step_epoch_and_rate_from_the_bars_last_states(stubbed_sagemaker):
    """The capture up to epoch 2's validation: its three training lines end at 4 s, 12 s and 20 s, at steps 32, 64
    and 96 (32 batches an epoch), so 64 steps in 16 s. Each line starts with the bar's states of the epoch before
    (Lightning resets it, `Epoch 1:   0%| 0/32`, before it says `Epoch 2`): no restart, and the line's first states
    are not its time's."""
    document = training("tiny-bar-status", HyperParameters={"epochs": "3"})
    stubbed_sagemaker.stubbers["sagemaker"].add_response("describe_training_job", document)
    _seed("tiny-bar-status", _captured_lines("lightning_tqdm.out")[:28])

    shown = CliRunner().invoke(main, ["status", "tiny-bar-status", "-o", "json"], obj=stubbed_sagemaker)

    assert shown.exit_code == 0, shown.output
    progress = json.loads(shown.stdout)["progress"]
    assert (progress["step"], progress["epoch"], progress["epochs"]) == (96, 3, 3)
    assert progress["steps_per_second"] == pytest.approx(4.0)


def test_a_line_that_mentions_015_once_keeps_it(stubbed_sagemaker):
    stubbed_sagemaker.stubbers["sagemaker"].add_response("describe_training_job",
                                                         described("tiny-issue", "Completed", "Completed"))
    seed_logs("tiny-issue", {"algo-1": [(0, "fixed as in issue #015: see the notes")]})

    shown = [line.message for line in orchestrator.Job(SageMakerBackend(stubbed_sagemaker), "tiny-issue").logs()]

    assert shown == ["fixed as in issue #015: see the notes"]
