"""A job's metric series, read from its log lines by SageMaker's rules, and its progress.

SageMaker applies each metric definition's regex to every line a training job logs: searched, not anchored,
group 1 read as a number, every definition on every line, and publishes the values to CloudWatch. The local
emulator applies the same definitions here, line by line, so that `smtrain metrics RUN_DIR` and
`smtrain metrics JOB` show the same values for the same lines. The progress line of the shared entrypoints,
`epoch=1 step=40/96 train_loss=0.123456 samples_per_sec=1520.3`, also gives the step, the total and the
epoch, from which `estimate_progress` derives a rate and an ETA (for the live bar of `smtrain local` and for
`smtrain status`). Scripts people write print their step otherwise, and `step_mark` reads those too (see
STEP_FORMATS), so that `--smoke-steps`, the live bar and `status` work for them as well.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from orchestrator.errors import SmtrainError
from orchestrator.observing.epochs import (LIGHTNING_RICH_BAR, EpochCounter, EpochMark, epoch_mark,
                                           latest_counted_from_one, line_epoch)
from orchestrator.specs.metric_regex import compile_metric_regex

METRICS_FILE = "metrics.jsonl"
"""Where `smtrain local` keeps a run's series: one point per line, in the run directory."""
_STEP_OF_TOTAL = re.compile(r"(?i)\bstep['\"]?\s*[=:]?\s*(\d+)\s*/\s*(\d+)")
_STEP_ALONE = re.compile(r"(?i)(?<![\w-])(?:global_)?step['\"]?\s*[=:]\s*(\d+)\b")
_LIGHTNING_BAR = re.compile(r"\bEpoch (\d+):\s*\d+%\|[^|]*\|\s*(\d+)/(\d+) \[")
_TQDM_BAR = re.compile(r"^\s*\d+%\|[^|]*\|\s*(\d+)/(\d+) \[")
_EPOCH_OF_TOTAL_BAR = re.compile(r"(?i)^\s*epoch\s*\d+\s*/\s*\d+\s*:?\s*\d+%\|[^|]*\|\s*(\d+)/(\d+) \[")
"""A bar labelled with its epoch of all (`Epoch 2/3: 100%|...| 50/50 [`): one bar per epoch, as tqdm's `desc` makes it."""
_BAR_RATE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(it/s|s/it)\b")
"""The rate a tqdm or rich bar prints after its times: `475.41it/s`, or `5.01s/it` when slower than one a second."""
_LIGHTNING_CHECKPOINT = re.compile(r"\bEpoch \d+, global step (\d+):")
_BATCHES_ROW = re.compile(r"\|\s*epoch\s+(\d+)\s*\|\s*(\d+)/\s*(\d+) batches\b")
_NANOGPT_LINE = re.compile(r"(?<![\w-])(?:iter|step) (\d+): (?:train )?loss\b")
"""nanoGPT's `iter 3: loss 2.7543, time ...` and its eval line `step 3: train loss 2.7598, val loss 2.7507`, printed
before iteration 3 (read as step 3, its losses are that step's). No total: nanoGPT prints none."""
STEP_FORMATS = ("`step=N/TOTAL`", "`step N/TOTAL`", "`step=N`", "`step: N`", "`global_step=N`",
                "a tqdm bar without a label (transformers' Trainer: ` 50%|...| 5/10 [`)",
                "a bar per epoch (gluonts: ` 100%|...| 50/50 [..., epoch=2/3, ...]`, or `Epoch 2/3: 100%|...| 50/50 [`)",
                "Lightning's bar (`Epoch 0:  50%|...| 16/32 [`)",
                "Lightning's RichProgressBar (`Epoch 0/2  ━━━━ 16/32 0:00:01`)",
                "Lightning's checkpoint line (`Epoch 0, global step 4: ...`)",
                "a row `| epoch   1 |   200/ 2983 batches |` (PyTorch's word language model)",
                "nanoGPT's `iter N: loss X` and `step N: train loss X, val loss Y`")
"""The ways of printing a step `step_mark` reads, as the notices name them. A labelled bar (`Map: 100%|...`,
a download) is no training step and is not read, nor is `step 3` without `=` or `:` (`step 1 of 3: loading`), nor
`step 3:` before anything but nanoGPT's loss (`step 2: download`)."""
_LOSS_WORD = "loss"


@dataclass(frozen=True)
class MetricDefinition:
    """One `{Name, Regex}` of the request's MetricDefinitions, compiled."""

    name: str
    pattern: Any
    """Compiled by RE2 (metric_regex): matching is linear in the line, whatever the regex."""


def compile_definitions(definitions: Iterable[Mapping[str, str]]) -> tuple[MetricDefinition, ...]:
    return tuple(MetricDefinition(item["Name"], compile_metric_regex(item["Regex"])) for item in definitions)


def line_values(definitions: Sequence[MetricDefinition], line: str) -> dict[str, float]:
    """The values SageMaker reads from one line of a job's output, a progress bar's states given as the lines of
    one text (plain_text): each definition's first match in the whole line, its states joined by the carriage
    returns between them in the log SageMaker reads. The bar's first state with a value gives it, not its latest
    (docs/bring-your-own-script.md says so to users)."""
    return extract(definitions, line.replace("\n", "\r"))


def extract(definitions: Sequence[MetricDefinition], line: str) -> dict[str, float]:
    """The values the line carries, by SageMaker's rule: first match of each regex anywhere in the line,
    group 1 as a float. Values that are not finite numbers are dropped: CloudWatch cannot store them."""
    values: dict[str, float] = {}
    for definition in definitions:
        match = definition.pattern.search(line)
        if not match:
            continue
        try:
            value = float(match.group(1))
        except (IndexError, TypeError, ValueError):
            continue
        if math.isfinite(value):
            values[definition.name] = value
    return values


@dataclass(frozen=True)
class StepMark:
    """Where a progress line says the job is: step of total (global optimizer steps; None where the line does
    not say), and the epoch the step's piece of the line states (epochs.py)."""

    step: int
    total: int | None
    epoch: EpochMark | None
    rate: float | None = None
    """The steps a second a bar printed itself (tqdm's `it/s`, or `s/it` inverted): the rate where the lines' times
    measure none (one line's states share its time; a local log's lines have no time of their own)."""


def step_mark(line: str) -> StepMark | None:
    """The step a line shows, in any of STEP_FORMATS. A progress bar rewrites itself with carriage returns
    inside one log line (line breaks, once plain_text has read it): its last state counts."""
    for segment in reversed(line.splitlines()):
        mark = _segment_mark(segment)
        if mark is not None:
            return mark
    return None


def _segment_mark(text: str) -> StepMark | None:
    epoch = epoch_mark(text)
    if match := _STEP_OF_TOTAL.search(text):
        return StepMark(int(match.group(1)), int(match.group(2)), epoch)
    if match := _LIGHTNING_BAR.search(text):  # the bar counts the epoch's batches: the global step adds epochs
        done_epochs, batch, batches = (int(group) for group in match.groups())
        return StepMark(done_epochs * batches + batch, None, epoch, _bar_rate(text))
    if match := LIGHTNING_RICH_BAR.search(text):  # `Epoch 1/2 ... 16/32`: 0-based of max_epochs - 1
        done_epochs, last_epoch, batch, batches = match.groups()
        total = None if last_epoch is None else (int(last_epoch) + 1) * int(batches)
        return StepMark(int(done_epochs) * int(batches) + int(batch), total, epoch, _bar_rate(text))
    if match := (_TQDM_BAR.search(text) or _EPOCH_OF_TOTAL_BAR.search(text)):
        return _bar_mark(int(match.group(1)), int(match.group(2)), epoch, _bar_rate(text))
    if match := _LIGHTNING_CHECKPOINT.search(text):
        return StepMark(int(match.group(1)), None, epoch)
    if match := _BATCHES_ROW.search(text):  # the batch within its epoch, counted from 1 by `range(1, epochs + 1)`
        epoch_number, batch, batches = (int(group) for group in match.groups())
        return StepMark((epoch_number - 1) * batches + batch, None, epoch)
    if match := _NANOGPT_LINE.search(text):
        return StepMark(int(match.group(1)), None, epoch)
    if match := _STEP_ALONE.search(text):
        return StepMark(int(match.group(1)), None, epoch)
    return None


def _bar_mark(batch: int, batches: int, epoch: EpochMark | None, rate: float | None) -> StepMark:
    """A tqdm bar's step; a bar that states its epoch of all (`epoch=2/3`, counted from 1) is one bar per epoch, its
    batches counted within the epoch: the global step adds the epochs before, or every epoch would read as a
    restart at step 0 and end at the same `50/50`."""
    if epoch is not None and epoch.total and epoch.number >= 1:
        return StepMark((epoch.number - 1) * batches + batch, epoch.total * batches, epoch, rate)
    return StepMark(batch, batches, epoch, rate)


def _bar_rate(text: str) -> float | None:
    match = _BAR_RATE.search(text)
    if match is None or float(match.group(1)) == 0:
        return None
    value = float(match.group(1))
    return value if match.group(2) == "it/s" else 1 / value


@dataclass(frozen=True)
class MetricPoint:
    """One value of one metric: when it was logged (CloudWatch: the datapoint's time), and, from a local run's
    log line, the step and the host that wrote it."""

    metric: str
    value: float
    time: datetime | None
    step: int | None = None
    host: str | None = None
    epoch: int | None = None
    """From a local run: the epoch its host was in when it ended the point's line (the time SageMaker stamps the
    point with), counted from 1 as progress counts (epochs.py), where `tune local`'s early stopping compares trials.
    The run's metrics file keeps it (`to_record`); the series shown has the columns a SageMaker job's has."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "value": self.value,
            "timestamp": self.time.isoformat() if self.time else None,
            "step": self.step,
            "host": self.host,
        }

    def to_record(self) -> dict[str, Any]:
        """The point as a local run's metrics file keeps it: its row and its epoch."""
        return {**self.to_dict(), "epoch": self.epoch}

    @classmethod
    def from_dict(cls, document: Mapping[str, Any]) -> MetricPoint:
        stamp = document.get("timestamp")
        return cls(
            metric=document["metric"],
            value=float(document["value"]),
            time=datetime.fromisoformat(stamp) if stamp else None,
            step=document.get("step"),
            host=document.get("host"),
            epoch=document.get("epoch"),
        )


class MetricRecorder:
    """Applies the definitions to a local run's lines as they arrive and appends each point to the run's
    metrics file at once, so that `smtrain metrics RUN_DIR` also works while the run goes on.

    A point from a line without `step=` (the entrypoints' closing `final train_loss=...`, which SageMaker reads
    too) is placed at the latest step logged before it.

    A line is one line of the job's output, as SageMaker splits its log: a progress bar's states, which it
    rewrites with carriage returns until it ends its line, come as the lines of one text (plain_text), and are
    read as SageMaker reads that line (`line_values`). Each point carries the epoch its host was in at the end
    of its line (MetricPoint.epoch), each host's epochs counted on their own.
    """

    def __init__(self, definitions: Iterable[Mapping[str, str]], path: Path) -> None:
        self._definitions = compile_definitions(definitions)
        self.definitions = [definition.name for definition in self._definitions]
        self.path = path
        self.latest: dict[str, float] = {}
        self.first_match: tuple[str, str] | None = None
        """The host and line the definitions first matched: what a notice shows as the format recognized. Of a
        bar's states, the first that shows the most of the line's values: the loss beside the epoch, not a state
        before the first step that only names its epoch (`Epoch 0:   0%| 0/32`)."""
        self.steps_seen = False
        self._first_match_claimed = False
        self._feeding = threading.Lock()
        """A local run's hosts are read by a thread each, all feeding this one recorder."""
        self._step: int | None = None
        self._epoch_counters: dict[str, EpochCounter] = {}
        self._epochs: dict[str, int] = {}
        """Per host: the epoch its lines stated last, counted from 1."""
        path.write_text("")

    def feed(self, host: str, line: str, time: datetime | None = None) -> list[MetricPoint]:
        with self._feeding:
            return self._feed(host, line, time)

    def claim_first_match(self) -> bool:
        """True for the one caller that first asks once the definitions matched: the recognized format is said
        once, whichever host's thread saw it."""
        with self._feeding:
            claimed = self.first_match is not None and not self._first_match_claimed
            self._first_match_claimed = self._first_match_claimed or claimed
            return claimed

    def _feed(self, host: str, line: str, time: datetime | None) -> list[MetricPoint]:
        mark = step_mark(line)
        self._step = mark.step if mark else self._step
        self.steps_seen = self.steps_seen or mark is not None
        if (stated := line_epoch(line)) is not None:
            self._epochs[host] = self._epoch_counters.setdefault(host, EpochCounter()).count(stated)
        values = line_values(self._definitions, line)
        at, epoch = time or datetime.now(timezone.utc), self._epochs.get(host)
        points = [MetricPoint(name, value, at, self._step, host, epoch) for name, value in values.items()]
        if points and self.first_match is None:
            self.first_match = (host, max(line.split("\n"), key=lambda state: len(extract(self._definitions, state))))
        if points:
            with self.path.open("a", encoding="utf-8") as handle:
                handle.writelines(json.dumps(point.to_record()) + "\n" for point in points)
            self.latest.update((point.metric, point.value) for point in points)
        return points


def read_points(path: Path) -> list[MetricPoint]:
    """The points a MetricRecorder wrote; a line that is not one (see `read_points_counted`) is skipped."""
    return read_points_counted(path)[0]


def read_points_counted(path: Path) -> tuple[list[MetricPoint], int]:
    """The points a MetricRecorder wrote, and how many lines were skipped: a last line cut short by a run still
    writing, or anything else that is not a point (bytes that are not UTF-8, `null`, an array, a bad value)."""
    points, skipped = [], 0
    with path.open("rb") as handle:
        for raw in handle:
            if not raw.strip():
                continue
            point = recorded_point(raw)
            if point is None:
                skipped += 1
            else:
                points.append(point)
    return points, skipped


def recorded_point(raw: bytes) -> MetricPoint | None:
    """One line of a MetricRecorder's file as its point; None for anything else (bytes that are not UTF-8,
    `null`, an array, a bad value, a line cut short)."""
    try:
        document = json.loads(raw.decode("utf-8"))
        if not isinstance(document, dict):
            raise ValueError("not a JSON object")
        return MetricPoint.from_dict(document)
    except (ValueError, KeyError, TypeError):  # UnicodeDecodeError is a ValueError
        return None


def metric_names(points: Iterable[MetricPoint]) -> list[str]:
    """Names in order of first appearance."""
    return list(dict.fromkeys(point.metric for point in points))


def refuse_unknown_metrics(asked: Sequence[str] | None, defined: Sequence[str], points: Iterable[MetricPoint],
                           job: str) -> None:
    """A `--metric` that the job neither defines nor has points of is a typo, not data still to come: refused
    (exit 2) naming the job's metric definitions, the same for a local run and a SageMaker job.

    Raises:
        SmtrainError: a name asked for is unknown to the job.
    """
    found = set(metric_names(points))
    unknown = [name for name in asked or () if name not in defined and name not in found]
    if unknown:
        raise SmtrainError(f"{job} has no metric {', '.join(unknown)}: its metric definitions are "
                           f"{', '.join(defined) or 'none'}",
                           fix="give --metric one of those, or leave it out for every metric")


def loss_metrics(names: Sequence[str]) -> list[str]:
    """The metrics worth a chart by default: those named like a loss, the training ones first (the first is what a
    bar and a smoke show as the loss, and an eval line may come first: nanoGPT's at step 0), else the first one."""
    losses = [name for name in names if _LOSS_WORD in name.lower()]
    return sorted(losses, key=lambda name: not name.lower().startswith("train")) or list(names[:1])


@dataclass(frozen=True)
class MetricSummary:
    metric: str
    points: int
    first: float
    minimum: float
    maximum: float
    last: float


def summarize(points: Sequence[MetricPoint]) -> list[MetricSummary]:
    summaries = []
    for name in metric_names(points):
        values = [point.value for point in points if point.metric == name]
        summaries.append(MetricSummary(name, len(values), values[0], min(values), max(values), values[-1]))
    return summaries


def to_csv(points: Iterable[MetricPoint]) -> str:
    """Long format, one point per row: metric, value, timestamp, step, host."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, ["metric", "value", "timestamp", "step", "host"], lineterminator="\n")
    writer.writeheader()
    writer.writerows(point.to_dict() for point in points)
    return buffer.getvalue()


def to_frame(points: Iterable[MetricPoint]) -> Any:
    """A pandas DataFrame (columns metric, value, timestamp, step, host) when pandas is installed, else the
    same rows as a list of dicts: pandas is no dependency of smtrain."""
    rows = [
        {"metric": point.metric, "value": point.value, "timestamp": point.time, "step": point.step,
         "host": point.host}
        for point in points
    ]
    try:
        import pandas
    except ImportError:
        return rows
    return pandas.DataFrame(rows, columns=["metric", "value", "timestamp", "step", "host"])


@dataclass(frozen=True)
class ProgressEstimate:
    """How far a job is, from its progress lines: the latest step of the total, the rate over the lines seen
    since the latest restart, and what that rate leaves to go."""

    step: int
    total: int
    epoch: int | None
    """The epoch the latest progress line is in, counted from 1 whatever the script counts from
    (epochs.EpochCounter)."""
    epochs: int | None
    steps_per_second: float | None
    at: datetime
    """When the latest progress line was written."""

    @property
    def fraction(self) -> float | None:
        """None where the lines give no total."""
        return min(1.0, self.step / self.total) if self.total else (None if self.total is None else 0.0)

    @property
    def remaining_seconds(self) -> float | None:
        """Seconds from the latest progress line to the last step, at the measured rate."""
        if not self.steps_per_second or self.total is None:
            return None
        return max(0, self.total - self.step) / self.steps_per_second

    def position(self) -> str:
        """`step 40/96 (42%)`, or `step 40` where the lines give no total."""
        fraction = self.fraction
        return f"step {self.step}" if fraction is None else f"step {self.step}/{self.total} ({100 * fraction:.0f}%)"

    def describe(self, as_of: str | None = None) -> str:
        """`step 40/96 (42%), epoch 1/3, 2.5 steps/s, about 22 s to go` (`as_of`: after which time that is)."""
        text = self.position()
        if self.epoch is not None:
            text += f", epoch {self.epoch}" + (f"/{self.epochs}" if self.epochs else "")
        if self.steps_per_second:
            text += f", {self.steps_per_second:.3g} steps/s"
        remaining = self.remaining_seconds
        if remaining is not None and self.total is not None and self.step < self.total:
            text += f", about {format_duration(remaining)} to go" + (f" after {as_of}" if as_of else "")
        return text

    def finish_time(self) -> datetime | None:
        remaining = self.remaining_seconds
        return None if remaining is None else self.at + timedelta(seconds=remaining)

    def eta_seconds(self, now: datetime) -> float | None:
        """Seconds from `now` to the estimated finish (0 when it is overdue)."""
        finish = self.finish_time()
        return None if finish is None else max(0.0, (finish - now).total_seconds())

    def to_dict(self, now: datetime) -> dict[str, Any]:
        finish = self.finish_time()
        return {
            "step": self.step,
            "total_steps": self.total,
            "epoch": self.epoch,
            "epochs": self.epochs,
            "percent": None if self.fraction is None else round(100 * self.fraction, 1),
            "steps_per_second": self.steps_per_second,
            "eta_seconds": self.eta_seconds(now),
            "estimated_finish": finish.isoformat() if finish else None,
            "last_progress_line": self.at.isoformat(),
        }


def estimate_progress(
    marks: Sequence[tuple[datetime, StepMark]], epochs: int | None = None,
    stated: Sequence[EpochMark | None] | None = None,
) -> ProgressEstimate | None:
    """Rate and position from timed progress lines, oldest first.

    A step lower than the one before starts the count again: the job restarted from a checkpoint (spot),
    and time before the restart says nothing about the rate after it. Where the lines' times measure no rate (one
    line's states, a local log's lines), the rate the latest bar printed itself stands in. The epoch is the latest one `stated`
    (by every line read, oldest first: the Trainer's log dict is a line apart from its bar's step once its
    carriage returns are line breaks), by default the marks' own.
    """
    if not marks:
        return None
    timed = _line_ends(marks)
    start = 0
    for index in range(1, len(timed)):
        if timed[index][1].step < timed[index - 1][1].step:
            start = index
    window = timed[start:]
    (first_time, first), (last_time, last) = window[0], window[-1]
    elapsed = (last_time - first_time).total_seconds()
    rate = (last.step - first.step) / elapsed if elapsed > 0 and last.step > first.step else last.rate
    stated = [mark.epoch for _, mark in marks] if stated is None else stated
    epoch, of_epochs = epoch_position(stated, epochs)
    return ProgressEstimate(last.step, last.total, epoch, of_epochs, rate, last_time)


def epoch_position(stated: Sequence[EpochMark | None], epochs: int | None) -> tuple[int | None, int | None]:
    """The epoch in progress, counted from 1, and of how many: the total the latest line states (`Epoch 2/3`),
    else the `epochs` hyperparameter. A script that prints its epoch but no step (`epoch=2 loss=0.31`) gets it
    too (JobProgress)."""
    latest = next((mark for mark in reversed(stated) if mark is not None), None)
    return latest_counted_from_one(stated), (latest and latest.total) or epochs


def _line_ends(marks: Sequence[tuple[datetime, StepMark]]) -> list[tuple[datetime, StepMark]]:
    """The last of the marks that share a time. A progress bar's states are one log line, and CloudWatch stamps
    them all with the time the line ended, when only the last was true: counting the first from then would
    credit the whole line's steps to the time between lines, and Lightning's bar, reset at each epoch's start
    (`Epoch 0:   0%| 0/32` again before it says `Epoch 1`), would read as a restart in every epoch's line."""
    return [mark for index, mark in enumerate(marks) if index + 1 == len(marks) or marks[index + 1][0] != mark[0]]


def format_duration(seconds: float) -> str:
    """`42 s`, `6 min 5 s`, `2 h 03 min`."""
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"
