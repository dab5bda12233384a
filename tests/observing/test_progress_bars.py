"""Lightning's progress bars as a job really prints them (progress_bars/SOURCE says how each file was made):
`smtrain status` and the live bar read the step and the epoch of their last state, counted as Lightning counts,
from the plain text smtrain keeps of them (no terminal control left)."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.observing.epochs import latest_counted_from_one, line_epoch
from orchestrator.observing.metric_series import step_mark
from orchestrator.observing.plain_text import plain

BARS = Path(__file__).parent / "progress_bars"


def _plain_lines(name: str) -> list[str]:
    """The file's lines as smtrain holds them: plain text, each bar state a line of its own."""
    return plain((BARS / name).read_bytes().decode()).split("\n")


@pytest.mark.parametrize("name", ["lightning_rich.out", "lightning_rich_force_color.out"])
def test_richs_last_epoch_of_three_is_epoch_3_of_3_at_step_96_of_96(name):
    lines = _plain_lines(name)
    marks = [mark for mark in map(step_mark, lines) if mark is not None]

    assert "\x1b" not in "".join(lines)
    assert (marks[-1].step, marks[-1].total) == (96, 96)  # 3 epochs x 32 batches, `Epoch 2/2 ... 32/32`
    assert latest_counted_from_one(map(line_epoch, lines)) == 3
    assert marks[-1].epoch is not None and marks[-1].epoch.total == 3


def test_richs_first_epoch_is_epoch_1_of_3():
    first = next(line for line in _plain_lines("lightning_rich_force_color.out") if line.startswith("Epoch 0/2"))

    assert latest_counted_from_one([line_epoch(first)]) == 1
    assert step_mark(first).total == 96


def test_the_tqdm_bars_last_state_gives_the_step_and_the_epoch():
    lines = _plain_lines("lightning_tqdm.out")
    marks = [mark for mark in map(step_mark, lines) if mark is not None]

    assert marks[-1].step == 96  # `Epoch 2: 100%|...| 32/32`: 2 epochs done x 32 + 32
    assert latest_counted_from_one(map(line_epoch, lines)) == 3


def test_a_scripts_own_bar_labelled_epoch_k_of_n_gives_the_step_of_every_epochs_batches():
    # tqdm 4.70.1 as `tqdm(loader, desc=f"Epoch {epoch + 1}/{epochs}")` prints it, 16 batches an epoch.
    state = "\rEpoch 2/3:  50%|\u2588\u2588\u2588\u2588\u2588     | 8/16 [00:00<00:00, 75.67it/s]"

    mark = step_mark(state)

    assert mark is not None and (mark.step, mark.total) == (24, 48)  # epoch 1 done (16) + 8 of epoch 2, of 3 x 16
    assert latest_counted_from_one([mark.epoch]) == 2
