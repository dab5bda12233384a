"""The epoch a training log line states, and that epoch counted from 1 whatever the script counts from.

Progress (`epoch 3 of 3`) and local tuning's early stopping (trials compared at the same epoch) both count
epochs this way, so that a script printing `epoch=0..2`, one printing `Epoch 1/3 .. 3/3` and the transformers
Trainer's fractional `'epoch': 2.5` meet at the same numbers. The forms read, each as its framework prints it:

* `epoch=2`, `epoch: 2`, `Epoch: 2`, `'epoch': 2`: as the script numbers it (from 0 once any line printed 0).
* `Epoch 2/3`: up to the total it states.
* `Train Epoch: 1 [0/60000 (0%)]`: the SageMaker PyTorch MNIST examples (1-based, by the numbers printed).
* `Epoch: [0]  [  0/5005]`: torchvision's reference scripts' MetricLogger header, 0-based by their loop.
* `epoch 0: {'accuracy': ...}`: Accelerate's examples, after evaluating (0-based, by the numbers printed).
* Lightning's bar `Epoch 0:  50%|...` and its ModelCheckpoint(verbose=True) line `Epoch 0, global step 4: ...`:
  0-based, whether or not its `Epoch 0` lines are still in a tail.
* Lightning's RichProgressBar `Epoch 2/2  ━━━━━━ 32/32 0:00:01 • ...`: 0-based, of `max_epochs - 1` (the third
  of 3 epochs), not `Epoch K/N` counted from 1.
* pytorch/examples' word_language_model (and the SageMaker LSTM example's copy) `| epoch   1 |   200/ 2983 batches
  | ...` and `| end of epoch   1 | ...`: its loop runs `range(1, epochs + 1)`.
* The transformers Trainer's `'epoch': 1.5` (4.x) or `'epoch': '1.5'` (5.x, every float as a `.4g` string):
  the epochs done, a fraction; the epoch in progress is its ceiling, so `'epoch': '1'` ends epoch 1.

No epoch: `epochs: 10` (a setting), `epoch_time: 3.2`, `max_epochs=3`, `start_epoch=0`, `num_epochs: 5`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

_OF_TOTAL = re.compile(r"(?i)\bepoch['\"]?\s*[=:]?\s*(\d+)\s*/\s*(\d+)")
_TORCHVISION_HEADER = re.compile(r"\bEpoch: \[(\d+)\]")
_LIGHTNING_BAR = re.compile(r"\bEpoch (\d+):\s*\d+%\|")
LIGHTNING_RICH_BAR = re.compile(r"\bEpoch (\d+)(?:/(\d+))?\s+[━╸╺]+\s+(\d+)/(\d+)\b")
"""Lightning's RichProgressBar: `Epoch {epoch}/{max_epochs - 1}`, its bar, then batches done of the epoch's."""
_LIGHTNING_CHECKPOINT = re.compile(r"\bEpoch (\d+), global step \d+:")
_TABLE_ROW = re.compile(r"\|\s*(?:end of )?epoch\s+(\d+)\s*\|")
_VALUE = re.compile(r"(?i)\bepoch['\"]?\s*[=:]\s*(['\"]?)(\d+(?:\.\d*)?)\1(?![\w.])")
_NUMBER_THEN_COLON = re.compile(r"(?i)\bepoch (\d+):")
_ROUNDING = 1e-9
"""How far above a whole number a fraction of epochs done may lie and still be that whole number (1.0000000002)."""


@dataclass(frozen=True)
class EpochMark:
    """The epoch one line states, as its format numbers it."""

    number: int
    total: int | None = None
    """The epochs in all, where the line states them (`Epoch 2/3`)."""
    first: int | None = None
    """What the format numbers its first epoch: 0 for torchvision's and Lightning's, 1 for the Trainer's epochs
    done (read as the epoch in progress); None where only the numbers printed can tell (EpochCounter)."""
    form: str = ""
    """Which of the forms without a first epoch of their own printed it: EpochCounter tells each one's numbering
    apart, for a script whose bar counts from 0 (`desc=f"epoch {epoch}"`) and whose own line from 1."""


def epoch_mark(text: str) -> EpochMark | None:
    """The epoch a piece of a line (no line breaks) states, in any of the module's forms."""
    if match := LIGHTNING_RICH_BAR.search(text):
        last = match.group(2)
        return EpochMark(int(match.group(1)), None if last is None else int(last) + 1, first=0)
    if match := _OF_TOTAL.search(text):
        return EpochMark(int(match.group(1)), int(match.group(2)), form="of total")
    if match := (_TORCHVISION_HEADER.search(text) or _LIGHTNING_BAR.search(text)
                 or _LIGHTNING_CHECKPOINT.search(text)):
        return EpochMark(int(match.group(1)), first=0)
    if match := _TABLE_ROW.search(text):
        return EpochMark(int(match.group(1)), first=1)
    if match := _VALUE.search(text):
        quoted, value = match.groups()
        if quoted or "." in value:  # the Trainer's epochs done: 1.5 is in epoch 2, 1.0 has ended epoch 1
            return EpochMark(max(1, math.ceil(float(value) - _ROUNDING)), first=1)
        return EpochMark(int(value), form="value")
    if match := _NUMBER_THEN_COLON.search(text):
        return EpochMark(int(match.group(1)), form="number then colon")
    return None


def line_epoch(line: str) -> EpochMark | None:
    """The epoch the latest piece of a line states: a progress bar's carriage returns (line breaks once
    plain_text has read them) put the Trainer's log dict after its bar in one line."""
    for piece in reversed(line.splitlines()):
        if (mark := epoch_mark(piece)) is not None:
            return mark
    return None


class EpochCounter:
    """Counts a run's epochs from 1, mark after mark, oldest first: a format's own first epoch where it has one,
    else 0 once a line of the same form printed epoch 0 (`for epoch in range(epochs)`), else 1 as printed. A
    completed run of 3 epochs thus ends at epoch 3 whether its script printed `epoch=2` or `epoch=3`, and
    whether or not its tqdm bar's label, `epoch 0:`, counts from 0 beside it."""

    def __init__(self) -> None:
        self._zero_printed: set[str] = set()

    def count(self, mark: EpochMark) -> int:
        """The mark's epoch counted from 1."""
        if mark.number == 0:
            self._zero_printed.add(mark.form)
        first = mark.first if mark.first is not None else (0 if mark.form in self._zero_printed else 1)
        return mark.number + 1 - first


def latest_counted_from_one(marks: Iterable[EpochMark | None]) -> int | None:
    """The latest epoch stated, counted from 1 (EpochCounter); None where no line stated one. A line without
    its epoch (the Trainer's closing bar, after its last log dict) is still in the latest epoch stated."""
    counter, latest = EpochCounter(), None
    for mark in marks:
        latest = latest if mark is None else counter.count(mark)
    return latest
