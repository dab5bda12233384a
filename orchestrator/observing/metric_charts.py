"""Metric series drawn: in the terminal with braille characters, and as a matplotlib figure (the `plot` extra).

Both put the step on the x axis when every point has one (a local run's progress lines say it), otherwise the
time (CloudWatch's datapoints have no step), otherwise the order of the points.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import TYPE_CHECKING

from orchestrator.errors import EnvironmentProblem, SmtrainError, install_extra
from orchestrator.observing.metric_series import MetricPoint, metric_names

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# Braille cells are 2 dots wide and 4 high; bit of the dot at [row][column].
_BRAILLE = 0x2800
_DOT_BITS = ((0x01, 0x08), (0x02, 0x10), (0x04, 0x20), (0x40, 0x80))


def x_axis(points: Sequence[MetricPoint]) -> tuple[list[float], str]:
    """The x values of the points and the axis label: step, else seconds since the first point, else index."""
    if points and all(point.step is not None for point in points):
        return [float(point.step) for point in points], "step"  # type: ignore[arg-type]
    times = [point.time for point in points]
    if points and all(time is not None for time in times):
        start = min(times)  # type: ignore[type-var]
        elapsed = [(time - start).total_seconds() for time in times]  # type: ignore[operator]
        return elapsed, "seconds from the first point"
    return [float(index) for index in range(len(points))], "point"


def one_per_step(points: Sequence[MetricPoint]) -> list[MetricPoint]:
    """A curve has one point per step: a line without a step of its own (the entrypoints' closing
    `final train_loss=...`, a whole-run figure) inherits the last step and would draw a spike there."""
    if not points or any(point.step is None for point in points):
        return list(points)
    seen: set[tuple[str, str | None, int | None]] = set()
    kept = []
    for point in points:
        key = (point.metric, point.host, point.step)
        if key not in seen:
            seen.add(key)
            kept.append(point)
    return kept


def is_counter(name: str) -> bool:
    """Metrics that count whole units (epochs): drawn as steps with whole-number ticks, not a sloped line."""
    return name.rsplit(":", 1)[-1].rsplit("/", 1)[-1] in ("epoch", "epochs")


def text_chart(points: Sequence[MetricPoint], *, width: int = 60, height: int = 8) -> str:
    """One metric's points as a line of braille dots, with the y range on the left and the x range below."""
    points = one_per_step(points)
    if not points:
        return ""
    xs, label = x_axis(points)
    ys = [point.value for point in points]
    columns, rows = width * 2, height * 4
    cells = [[0] * width for _ in range(height)]
    x_low, x_high, y_low, y_high = min(xs), max(xs), min(ys), max(ys)

    def dot(x: float, y: float) -> tuple[int, int]:
        column = round((x - x_low) / (x_high - x_low) * (columns - 1)) if x_high > x_low else 0
        row = round((y_high - y) / (y_high - y_low) * (rows - 1)) if y_high > y_low else rows // 2
        return column, row

    previous: tuple[int, int] | None = None
    for x, y in zip(xs, ys, strict=True):
        current = dot(x, y)
        for column, row in _segment(previous or current, current):
            cells[row // 4][column // 2] |= _DOT_BITS[row % 4][column % 2]
        previous = current
    top, bottom = _number(y_high), _number(y_low)
    margin = max(len(top), len(bottom))
    lines = []
    for index, row in enumerate(cells):
        label_text = top if index == 0 else bottom if index == height - 1 else ""
        tick = "┤" if label_text else "│"
        lines.append(f"{label_text:>{margin}} {tick}" + "".join(chr(_BRAILLE + bits) if bits else " " for bits in row).rstrip())
    lines.append(" " * margin + " └" + "─" * width)
    left, right = _number(x_low), _number(x_high)
    lines.append(" " * (margin + 2) + left + right.rjust(width - len(left)) + f"  {label}")
    return "\n".join(lines)


def figure(points: Sequence[MetricPoint], names: Sequence[str] | None = None, title: str | None = None) -> Figure:
    """A matplotlib Figure with one panel per metric, stacked, sharing the x axis.

    Made without pyplot: no global figure state, no display backend needed (it saves with Agg).

    Raises:
        EnvironmentProblem: matplotlib is not installed.
        SmtrainError: there is no point to draw (empty axes would look like a drawing error).
    """
    if not any(point.metric in names for point in points) if names else not points:
        raise SmtrainError(f"no metric data{f' for {title}' if title else ''} yet: nothing to plot",
                           fix="SageMaker publishes values a few minutes after the lines are logged; check that "
                               "the job's metric definitions match its log lines (`smtrain logs`)")
    names = list(names or metric_names(points))
    drawn = _figure_class()(figsize=(8, 2.6 * max(1, len(names))), layout="constrained")
    axes = drawn.subplots(max(1, len(names)), 1, sharex=True, squeeze=False)[:, 0]
    label = "step"
    for axis, name in zip(axes, names or [""], strict=True):
        series = one_per_step([point for point in points if point.metric == name])
        xs, label = x_axis(series)
        values = [point.value for point in series]
        if is_counter(name):
            from matplotlib.ticker import MaxNLocator

            axis.step(xs, values, where="post", linewidth=1.5)
            axis.yaxis.set_major_locator(MaxNLocator(integer=True))
        else:
            axis.plot(xs, values, marker="o" if len(series) < 40 else None, markersize=3, linewidth=1.5)
        axis.set_ylabel(name)
        axis.grid(True, alpha=0.3)
        if not series:
            axis.text(0.5, 0.5, "no data points yet", ha="center", va="center", transform=axis.transAxes)
    axes[-1].set_xlabel(label)
    if title:
        drawn.suptitle(title)
    return drawn


def _figure_class() -> type[Figure]:
    """matplotlib's Figure, shown as a PNG by Jupyter even without `%matplotlib inline` (pyplot is not used)."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise EnvironmentProblem(
            "plotting needs matplotlib, which is not installed", fix=f"{install_extra('plot')} (or matplotlib)"
        ) from None

    class MetricsFigure(Figure):
        def _repr_png_(self) -> bytes:
            buffer = io.BytesIO()
            self.savefig(buffer, format="png", dpi=100)
            return buffer.getvalue()

    return MetricsFigure


def _segment(start: tuple[int, int], end: tuple[int, int]) -> list[tuple[int, int]]:
    """The dots of a straight line between two dots (Bresenham)."""
    (x0, y0), (x1, y1) = start, end
    dx, dy = abs(x1 - x0), -abs(y1 - y0)
    step_x, step_y = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
    error, dots = dx + dy, []
    while True:
        dots.append((x0, y0))
        if (x0, y0) == (x1, y1):
            return dots
        double = 2 * error
        if double >= dy:
            error += dy
            x0 += step_x
        if double <= dx:
            error += dx
            y0 += step_y


def _number(value: float) -> str:
    return f"{value:.4g}"
