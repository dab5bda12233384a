"""A job's compact summary in Jupyter, kept up to date in place.

A job shown in a notebook (the last expression of a cell) is displayed with a display id; whenever the job
reads its status again (`status()`, `progress()`, each poll of `wait()`), every summary of it on the page is
replaced where it stands (IPython's `update_display`: Jupyter, JupyterLab, VS Code and nbclient all honour it, and
it needs neither ipywidgets nor a thread). The summary: status, a progress bar with step, rate and time left, cost
so far, a long phase's judgement and fix, the latest metrics, and links to the console and to CloudWatch Logs. Outside IPython nothing here runs.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from orchestrator.observing.metric_series import loss_metrics
from orchestrator.observing.progress import JobProgress

_STATUS_COLOURS = {"Completed": "#1a7f37", "Failed": "#cf222e", "Stopped": "#9a6700", "Stopping": "#9a6700"}


def cloudwatch_logs_url(region: str, job_name: str) -> str:
    """The CloudWatch console on the job's log streams (/aws/sagemaker/TrainingJobs, streams named job/algo-N)."""
    group = quote(quote("/aws/sagemaker/TrainingJobs", safe=""), safe="").replace("%", "$")
    stream_filter = quote(f"?logStreamNameFilter={job_name}", safe="").replace("%", "$")
    return (f"https://{region}.console.aws.amazon.com/cloudwatch/home?region={region}"
            f"#logsV2:log-groups/log-group/{group}/log-events{stream_filter}")


@dataclass(frozen=True)
class Summary:
    """What a summary shows; every value is already known (making it calls nothing)."""

    title: str
    status: str | None
    secondary_status: str | None = None
    progress: JobProgress | None = None
    latest: dict[str, float] = field(default_factory=dict)
    rows: list[tuple[str, str]] = field(default_factory=list)
    links: list[tuple[str, str]] = field(default_factory=list)

    def progress_text(self) -> str | None:
        estimate = self.progress.estimate if self.progress else None
        return None if estimate is None else estimate.describe()

    def metric_text(self) -> str | None:
        """The latest value of each metric, losses first."""
        if not self.latest:
            return None
        losses = loss_metrics(list(self.latest))
        names = losses + sorted(name for name in self.latest if name not in losses)
        return ", ".join(f"{name} = {self.latest[name]:.6g}" for name in names)

    def to_html(self) -> str:
        status = self.status or "not read yet: job.status()"
        colour = _STATUS_COLOURS.get(self.status or "", "#0969da")
        secondary = f" · {html.escape(self.secondary_status)}" if self.secondary_status else ""
        cells = [f'<b style="color:{colour}">{html.escape(status)}</b>{secondary}']
        estimate = self.progress.estimate if self.progress else None
        if estimate is not None:
            bar = (f'<progress value="{estimate.step}" max="{estimate.total}" style="width:12em"></progress> '
                   if estimate.total else "")
            cells.append(f"{bar}{html.escape(self.progress_text() or '')}")
        rows = [*self.rows]
        metrics = self.metric_text()
        if metrics:
            rows.append(("latest", metrics))
        body = "".join(f'<tr><td style="text-align:left;padding-right:1em"><i>{html.escape(name)}</i></td>'
                       f'<td style="text-align:left">{html.escape(value)}</td></tr>' for name, value in rows)
        links = " · ".join(f'<a href="{html.escape(url)}" target="_blank">{html.escape(label)}</a>'
                           for label, url in self.links)
        return (f'<div class="smtrain-job"><b>{html.escape(self.title)}</b> · {" ".join(cells)}'
                f'<table style="margin:2px 0">{body}</table>{links}</div>')

    def to_text(self) -> str:
        lines = [f"{self.title}: {self.status or 'not read yet'}"
                 + (f" / {self.secondary_status}" if self.secondary_status else "")]
        for text in (self.progress_text(), self.metric_text()):
            if text:
                lines.append(f"  {text}")
        lines += [f"  {name}: {value}" for name, value in self.rows]
        lines += [f"  {label}: {url}" for label, url in self.links]
        return "\n".join(lines)

    def bundle(self) -> dict[str, str]:
        return {"text/html": self.to_html(), "text/plain": self.to_text()}


class LiveSummary:
    """The displays of one job's summary on the notebook page, updated in place."""

    def __init__(self) -> None:
        self._handles: list[Any] = []

    @property
    def shown(self) -> bool:
        return bool(self._handles)

    def show(self, summary: Summary) -> None:
        from IPython.display import display

        handle = display(summary.bundle(), raw=True, display_id=True)
        if handle is not None:
            self._handles.append(handle)

    def update(self, summary: Summary) -> None:
        for handle in self._handles:
            handle.update(summary.bundle(), raw=True)
