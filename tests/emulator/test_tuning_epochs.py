"""Local tuning's early stopping compares trials at the same epoch, counted from 1 as progress shows it, whatever
each trial's script counts from: the trials' output is recorded as `smtrain local` records it and read as the search
reads it (its _ObjectiveWatch)."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.contract import DEFAULT_METRIC_DEFINITIONS
from orchestrator.emulator.tuning.choosers import chooser_for
from orchestrator.emulator.tuning.search import _ObjectiveWatch
from orchestrator.observing.metric_series import METRICS_FILE, MetricRecorder
from orchestrator.observing.plain_text import plain
from orchestrator.specs.tuning import TuningSpec

SPEC = TuningSpec.model_validate({
    "job": "job.yaml", "objective": {"metric": "train:loss", "type": "Minimize"},
    "parameters": {"lr": {"type": "continuous", "min": 0.001, "max": 0.1}}, "strategy": "Random", "max_jobs": 3,
    "random_seed": 3, "early_stopping": "Auto"})


def _record(run_dir: Path, lines_by_host: dict[str, list[str]]) -> None:
    """The run's metric series of hosts that printed these lines, as `smtrain local` records it (a line's carriage
    returns are line breaks in its plain text)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    recorder = MetricRecorder(DEFAULT_METRIC_DEFINITIONS, run_dir / METRICS_FILE)
    for host, lines in lines_by_host.items():
        for line in lines:
            recorder.feed(host, plain(line))


def _follow(chooser, lines: list[str], run_dir: Path) -> _ObjectiveWatch:
    """A trial that printed `lines`, read to its end as the search reads it."""
    key, _ = chooser.ask()
    _record(run_dir, {"algo-1": lines})
    watch = _ObjectiveWatch(chooser, key, "train:loss", run_dir)
    watch.read()
    watch.finish()
    return watch


def test_early_stopping_compares_a_0_based_and_a_1_based_trial_at_the_same_epoch(tmp_path):
    chooser = chooser_for(SPEC, None)
    # smtrain's entrypoints, 1-based: `epoch=1 step=...` to `epoch=3`.
    one_based = _follow(chooser, [f"epoch={epoch} step={10 * epoch}/30 train_loss={loss:.6f} samples_per_sec=512.0"
                                  for epoch, loss in ((1, 1.0), (2, 0.5), (3, 0.3))], tmp_path / "a")
    chooser.tell(1, one_based.final, "Completed")
    # A script of one's own, `for epoch in range(args.epochs)`: 0-based.
    zero_based = _follow(chooser, [f"epoch={epoch} step={10 * epoch + 10}/30 loss={loss}"
                                   for epoch, loss in ((0, 0.8), (1, 0.4), (2, 0.2))], tmp_path / "b")
    chooser.tell(2, zero_based.final, "Completed")

    # A third trial (1-based) better than the median after its first epoch (0.85 against 1.0 and 0.8), worse
    # after its second (0.9 against the running averages 0.75 and 0.6).
    third = _follow(chooser, [f"epoch={epoch} step={10 * epoch}/30 train_loss={loss:.6f} samples_per_sec=512.0"
                              for epoch, loss in ((1, 0.85), (2, 0.9), (3, 0.95))], tmp_path / "c")

    assert third.why == "stopped early after epoch 2"
    assert zero_based.per_epoch == {1: 0.8, 2: 0.4, 3: 0.2}


BAR = "\u2588"
FRAMEWORK_TRIALS = {
    # transformers 4.x: `logs["epoch"] = round(self.state.epoch, 2)`, the epochs done; its bar in the same line.
    "transformers 4.x": [f"\r {round(100 * done / 3)}%|{BAR * round(done * 3)}| {round(done * 2)}/6 "
                         f"[00:01<00:01,  2.00it/s]\r{{'loss': {loss}, 'learning_rate': 5e-05, 'epoch': {done}}}"
                         for done, loss in ((0.5, 0.9), (1.0, 0.7), (1.5, 0.6), (2.0, 0.5), (2.5, 0.45), (3.0, 0.4))],
    # torchvision's references/classification (utils.MetricLogger, header f"Epoch: [{epoch}]"), 0-based.
    "torchvision references": [f"Epoch: [{epoch}]  [  9/10]  eta: 0:00:01  lr: 0.1  img/s: 120.0  "
                               f"loss: {loss} ({loss})  acc1: 50.0 (50.0)  time: 0.1  data: 0.01"
                               for epoch, loss in ((0, 0.7), (1, 0.5), (2, 0.4))],
    # amazon-sagemaker-examples' PyTorch MNIST (tests/examples/mnist_sagemaker_containers, @1732bc2), 1-based.
    "SageMaker PyTorch MNIST": [f"Train Epoch: {epoch} [{seen}/60000 ({seen // 600}%)] Loss: {loss}"
                                for epoch, seen, loss in ((1, 0, 2.3), (1, 59520, 0.7), (2, 59520, 0.5),
                                                          (3, 0, 0.45), (3, 59520, 0.4))],
}


@pytest.mark.parametrize("framework", FRAMEWORK_TRIALS)
def test_a_trials_curve_is_kept_at_its_epochs_counted_from_one_whatever_its_framework_prints(framework, tmp_path):
    watch = _follow(chooser_for(SPEC, None), FRAMEWORK_TRIALS[framework], tmp_path / "trial")

    assert watch.per_epoch == {1: 0.7, 2: 0.5, 3: 0.4}


def test_hosts_printing_their_own_epochs_end_each_epoch_once_with_their_own_objective(tmp_path):
    """The Trainer's main process on every host prints its log dicts; here algo-1's lines come first, then
    algo-2's, so one epoch count over both would step back from algo-1's epoch 3 to algo-2's epoch 1."""
    asked = []

    class Recording:
        def should_stop(self, key: int, epoch: int, value: float) -> bool:
            asked.append((epoch, value))
            return False

    _record(tmp_path, {host: [f"epoch={epoch} step={10 * epoch}/30 loss={loss}"
                              for epoch, loss in enumerate(losses, start=1)]
                       for host, losses in (("algo-1", (0.9, 0.6, 0.4)), ("algo-2", (0.8, 0.5, 0.3)))})
    watch = _ObjectiveWatch(Recording(), 1, "train:loss", tmp_path)

    watch.read()
    watch.finish()

    assert asked == [(1, 0.9), (2, 0.6), (3, 0.4)]
    assert watch.per_epoch == {1: 0.9, 2: 0.6, 3: 0.4}


def test_a_bars_line_gives_the_trial_the_objective_sagemaker_reads_from_it_not_its_last_state(tmp_path):
    # A tqdm bar ends its line once an epoch; SageMaker reads each line once, the first state with the value.
    lines = [f"\rEpoch {epoch}:  50%|{BAR * 5}     | 1/2 [00:00<00:00, loss={first}]"
             f"\rEpoch {epoch}: 100%|{BAR * 10}| 2/2 [00:00<00:00, loss={last}]"
             for epoch, first, last in ((0, 0.9, 0.8), (1, 0.7, 0.6))]

    watch = _follow(chooser_for(SPEC, None), lines, tmp_path / "trial")

    assert watch.final == 0.7  # the last line's first value, not its last state's 0.6
    assert watch.per_epoch == {1: 0.9, 2: 0.7}
