"""A local run reads metrics from a progress bar's line as SageMaker does. tqdm ends each bar state with a carriage
return and the line only now and then (Lightning's bar: once an epoch), and SageMaker applies each metric
definition to each line of the log: the first state with a value gives it, and a later state's value is not read.
The run's metrics hold that, while its log and console show every state, each on a line of its own, the last one
last. `smtrain tune local` reads a trial's objective from those metrics, so a local search sees the values
SageMaker's tuner would. The output replayed is Lightning's TQDMProgressBar's, captured from a real run
(tests/observing/progress_bars/SOURCE)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from orchestrator.contract import DEFAULT_METRIC_DEFINITIONS
from orchestrator.emulator.launching.launch import Launch
from orchestrator.emulator.local_run import _metrics_recognized
from orchestrator.emulator.supervising.supervisor import Limits, Supervisor
from orchestrator.emulator.tuning.search import _ObjectiveWatch
from orchestrator.observing.metric_series import MetricRecorder, compile_definitions, extract, read_points

CAPTURED = Path(__file__).parents[1] / "observing" / "progress_bars" / "lightning_tqdm.out"


def _replayed(tmp_path: Path) -> tuple[MetricRecorder, list[str]]:
    """The captured output, printed by a process under the supervisor, its lines fed to the run's metrics as
    `smtrain local` feeds them; returns the recorder and the lines shown."""
    logs = tmp_path / "logs"
    logs.mkdir()
    recorder = MetricRecorder(DEFAULT_METRIC_DEFINITIONS, tmp_path / "metrics.jsonl")
    shown: list[str] = []

    def on_line(host: str, text: str) -> None:
        recorder.feed(host, text)
        shown.extend(text.split("\n"))

    script = f"import sys; sys.stdout.buffer.write(open({str(CAPTURED)!r}, 'rb').read())"
    command = f'{sys.executable} -c "{script}"'
    outcome = Supervisor([Launch("algo-1", command, dict(os.environ), tmp_path, command)], "run-id", logs,
                         on_line).run(Limits(timeout_seconds=60, interrupt_after=None, stop_grace_seconds=5))
    assert outcome.status == "completed"
    return recorder, shown


def test_a_bars_line_gives_the_values_sagemaker_reads_from_it(tmp_path):
    recorder, _ = _replayed(tmp_path)
    definitions = compile_definitions(DEFAULT_METRIC_DEFINITIONS)
    as_sagemaker_reads = [values["train:loss"] for line in CAPTURED.read_bytes().decode().split("\n")
                          if "train:loss" in (values := extract(definitions, line))]

    recorded = [point.value for point in read_points(recorder.path) if point.metric == "train:loss"]

    assert recorded == as_sagemaker_reads
    # Epoch 0's line: its first state with a loss (0.79), not its last (0.133), which is epoch 1's line's first.
    assert recorded == [0.79, 0.133, 0.0784, 0.0544, 0.0544]


def test_a_tuning_trial_whose_loss_is_only_in_a_bar_is_judged_by_the_values_sagemaker_reads(tmp_path):
    asked: list[tuple[int, float]] = []

    class Recording:
        def should_stop(self, key: int, epoch: int, value: float) -> bool:
            asked.append((epoch, value))
            return False

    _replayed(tmp_path)  # the trial's run: its log and its metric series, as `smtrain local` writes them
    watch = _ObjectiveWatch(Recording(), 1, "train:loss", tmp_path)
    watch.read()
    watch.finish()

    # SageMaker's series is [0.79, 0.133, 0.0784, 0.0544, 0.0544], one value per line: epoch 1 ends inside the
    # line that ends with epoch 2, when SageMaker holds 0.79 (that line's 0.133 comes with it, in epoch 2).
    # Read a state at a time, epoch 1 would have ended at 0.133 and epoch 2 at 0.0784, values SageMaker reads
    # from lines of later epochs.
    assert asked == [(1, 0.79), (2, 0.133), (3, 0.0544)]
    assert watch.per_epoch == {1: 0.79, 2: 0.133, 3: 0.0544}
    assert watch.final == 0.0544


def test_every_state_of_a_bar_is_shown_on_a_line_of_its_own_the_last_one_last(tmp_path):
    _, shown = _replayed(tmp_path)

    epoch_0 = [line for line in shown if line.startswith("Epoch 0:")]
    assert len(epoch_0) == 68 and "\r" not in "".join(shown) and "\x1b" not in "".join(shown)
    assert [line for line in shown if line][-1] == ("Epoch 2: 100%|██████████| 32/32 [00:00<00:00, 631.88it/s, "
                                                    "train_loss=0.0544, val_loss=0.123]")


def test_the_metrics_notice_quotes_the_state_with_the_loss_not_the_bars_first_state(tmp_path):
    recorder, _ = _replayed(tmp_path)

    # The line's first state with a value, `Epoch 0:   0%|          | 0/32 [00:00<?, ?it/s]`, holds an epoch only.
    assert ("from algo-1's line 'Epoch 0:   3%|▎         | 1/32 [00:00<00:00, 291.55it/s, train_loss=0.790]'"
            in _metrics_recognized(recorder))
