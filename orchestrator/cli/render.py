"""Human-readable output: findings, plans and tables. Plain text for `validate` (no rich import on the fast
path), rich for the rest; what only a local run's console draws with (the metric series) loads with it."""

from __future__ import annotations

import json
import shlex
import sys
from collections import deque
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from orchestrator.specs.catalog import hourly_price
from orchestrator.wording import counted

if TYPE_CHECKING:
    from rich.console import Console

    from orchestrator.observing.metric_series import StepMark
    from orchestrator.planning.plan import Plan
    from orchestrator.specs.catalog import Catalog, InstanceType
    from orchestrator.specs.loader import LoadedSpec

_SEVERITY_LABEL = {"error": "error", "unverified": "unverified (needs allow_unverified: true to submit)",
                   "warning": "WARNING", "notice": "notice"}


def findings_text(loaded: LoadedSpec) -> str:
    """Each finding with its place, fix and source; warnings in yellow (click drops the colour when piped)."""
    import click

    from orchestrator.cli.options import terminal_safe

    lines = []
    for finding in loaded.findings:
        allowed = finding.severity == "unverified" and loaded.spec.allow_unverified
        label = "unverified (allowed by allow_unverified)" if allowed else _SEVERITY_LABEL[finding.severity]
        headline = f"  {label}: {terminal_safe(loaded.where(finding.field))}: {finding.field}: {finding.message}"
        lines.append(click.style(headline, fg="yellow", bold=True) if finding.severity == "warning" else headline)
        lines.append(f"      fix: {finding.fix}")
        lines.append(f"      source: {finding.source}")
    return "\n".join(lines)


def console() -> Console:
    """A rich console; when output is piped or captured, wide enough that tables and ids are not cut."""
    from rich.console import Console

    return Console(width=None if sys.stdout.isatty() else 160)


def print_plan(plan: Plan, full: bool = False) -> None:
    """The plan on one screen (`planning/plan_view.py`), warnings and errors in colour. `full` adds the resolved
    spec, the SDK v2 estimator arguments and the exact CreateTrainingJob request (also in `--output json`)."""
    import click

    from orchestrator.planning.plan_view import plan_lines

    colours = {"error": "red", "unverified": "yellow", "warning": "yellow", "notice": "cyan"}
    lines = [click.style(text, bold=True) if style == "title" else
             click.style(text, fg=colours[style], bold=style in ("error", "warning")) if style else text
             for style, text in plan_lines(plan)]
    if full:
        document = plan.to_dict()
        for title, key in (("resolved spec", "spec"), ("estimator arguments (sagemaker.pytorch.PyTorch)",
                                                         "estimator_kwargs"),
                           ("CreateTrainingJob request", "create_training_job_request")):
            lines += ["", click.style(title, bold=True), json.dumps(document[key], indent=2)]
    else:
        lines.append(click.style("the full CreateTrainingJob request: --full, or --output json", dim=True))
    click.echo("\n".join(line.rstrip() for line in lines))


def _listing(*columns: str) -> Any:
    """The one table style of `smtrain images` and `smtrain instances`: no box, bold header."""
    from rich.table import Table

    return Table(*columns, box=None, collapse_padding=True, header_style="bold")


def _print_listing(table: Any, notes: Sequence[str]) -> None:
    """The table, then its notes (the data's source and date, what a mark means) one sentence a line: a caption
    wrapped at the table's width broke its sentences mid-way and padded them with spaces."""
    output = console()
    output.print(table)
    for note in notes:
        output.print(note, highlight=False)


def print_instances(rows: list[InstanceType], prices: Catalog) -> None:
    table = _listing("type", "vCPUs", "memory GiB", "accelerators", "accel. memory GiB", "EFA", f"{prices.currency}/h")
    for entry in rows:
        accel = "-" if entry.accelerator == "cpu" else f"{entry.accelerators} x {entry.accelerator_model}"
        if entry.neuron_cores:
            accel += f" ({entry.neuron_cores} cores)"
        table.add_row(entry.name, str(entry.vcpus), f"{entry.memory_gib:g}", accel,
                      "-" if entry.accelerator_memory_gib is None else f"{entry.accelerator_memory_gib:g}",
                      "yes" if entry.efa else "no",
                      "-" if entry.price_per_hour is None else hourly_price(entry.price_per_hour))
    _print_listing(table, [f"On-demand training prices in {prices.region}, transcribed {prices.checked}.",
                           f"Source: {prices.source}."])


def image_rows() -> list[dict[str, Any]]:
    """`smtrain images`: one row per framework version of smtrain's image table, as JSON-ready values.

    `patched`: AWS still patches the image (True), no longer does (False; the versions before 2.6 carry no date
    in the release data and ended before 2026), or unknown (None: an unverified build without dates).
    """
    from datetime import date

    from orchestrator.specs import images

    rows = []
    for version, image in images.versions().items():
        python = image.python[-1]
        if image.eop is not None:
            patched: bool | None = image.eop >= date.today()
        else:
            patched = None if image.unverified else False
        rows.append({
            "framework_version": version,
            "python": list(image.python),
            "repository": image.repository,
            "tags": {processor: image.tag(version, processor, python) for processor in ("cpu", "gpu")},
            "ga": image.ga.isoformat() if image.ga else None,
            "end_of_patch": image.eop.isoformat() if image.eop else None,
            "patched": patched,
            "smddp": image.smddp,
            "toolkit": image.toolkit,
            "unverified": image.unverified,
        })
    return rows


def print_images(rows: list[dict[str, Any]]) -> None:
    """The image table; a `status` column only where an image is unverified (the one thing it says)."""
    from orchestrator.specs import images

    unverified = any(row["unverified"] for row in rows)
    table = _listing("version", "python", "repository", "cpu tag", "gpu tag", "GA", "end of patch", "SMDDP",
                     *(["status"] if unverified else []))
    for column in table.columns[3:5]:
        column.overflow = "fold"
    for row in rows:
        eop = row["end_of_patch"] or ("before 2026" if row["patched"] is False else "-")
        if row["patched"] is False:
            eop = f"[red]{eop} ✗[/]"
        table.add_row(row["framework_version"], "/".join(row["python"]), row["repository"], row["tags"]["cpu"],
                      row["tags"]["gpu"], row["ga"] or "-", eop, "yes" if row["smddp"] else "no",
                      *(["[yellow]unverified[/]" if row["unverified"] else ""] if unverified else []))
    notes = ["✗: past its end of patch, so AWS releases no more security fixes for it.",
             f"Release data: aws/deep-learning-containers, checked {images.checked()}.",
             "Registries: as in the SageMaker Python SDK v2."]
    if unverified:
        notes.append("unverified: its build configuration and release data disagree; submit needs "
                     "allow_unverified: true.")
    _print_listing(table, notes)


class LocalConsole:
    """Draws a local run on stderr (so `--output json` keeps stdout clean): one line about how the emulation
    differs from SageMaker, a live progress bar from the progress lines (step of total, steps/s, ETA, latest loss),
    the host logs prefixed [algo-N] (styled under the bar when verbose; plain into `stream`, as SageMaker's own
    `fit()` prints them, when stdout is a file or a CI log), then the result with the loss curve, and for a hung
    run every rank's stack."""

    _HOST_STYLES = ("cyan", "magenta", "green", "yellow", "blue", "red")
    _RATE_WINDOW = 20
    """Progress lines the rate is measured over: recent enough to follow a change of pace."""

    def __init__(self, verbose: bool = False, quiet: bool = False, stream: TextIO | None = None,
                 command: Sequence[str] = ("SPEC",), keeps_checkpoints: bool = True) -> None:
        """`command`: the words after `smtrain local` that ran this job (the spec, its `--set`s, the run options but
        --run-dir), so an interrupted run's resume line repeats them: a checkpoint refuses other settings.
        `keeps_checkpoints`: the spec has `checkpoint:`; without it a rerun resumes nothing, and no line says it
        would."""
        from rich.console import Console

        from orchestrator.cli.closed_console import Tolerant
        from orchestrator.cli.live_terminal import redraws_in_place

        self._verbose = verbose
        self._quiet = quiet
        self._stream = Tolerant(stream) if stream is not None else None
        self._command = tuple(command)
        self._keeps_checkpoints = keeps_checkpoints
        # A terminal closed mid-run (SIGHUP) must not fail the run's report: the run's files say everything.
        self._console = Console(file=Tolerant(sys.stderr), width=None if sys.stderr.isatty() else 160)
        # Rich takes any stream under FORCE_COLOR for a terminal: its colour stays, the bar and wrapping follow this.
        self._redraws = redraws_in_place(sys.stderr)
        self._progress: Any = None
        self._task: Any = None
        self._marks: deque[tuple[datetime, StepMark]] = deque(maxlen=self._RATE_WINDOW)
        self._deviations = 0

    def __enter__(self) -> LocalConsole:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self._progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.fields[steps]}"),
                                  TextColumn("{task.fields[rate]}"), TextColumn("{task.fields[eta]}"),
                                  TextColumn("{task.fields[loss]}"), TimeElapsedColumn(), console=self._console,
                                  transient=True, disable=not self._redraws)
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def notice(self, text: str) -> None:
        """A notice of this run; the fixed list of ways the emulator differs from SageMaker is counted, not printed
        (one line at the start points to `smtrain local --explain`)."""
        from orchestrator.emulator.preparing.deviations import DEVIATIONS

        if text in DEVIATIONS:
            self._deviations += 1
        elif not self._quiet:
            # Not wrapped where no terminal reads it: a command in a note (`pip install ... --index-url URL`) stays on
            # one line of a CI log, to be copied whole.
            self._progress.console.print(f"[dim]note: {escape(text)}", highlight=False,
                                         soft_wrap=not self._redraws)

    def started(self, job_name: str, run_dir: Path, world_size: int, hosts: int) -> None:
        if self._deviations and not self._quiet:
            self._progress.console.print(f"[dim]note: emulated without docker; {self._deviations} ways this differs "
                                         "from SageMaker's container: `smtrain local --explain`", highlight=False)
        self._progress.console.print(f"[bold]{job_name}[/]: {counted(hosts, 'host')}, world size {world_size}; run directory "
                                     f"{run_dir}", highlight=False)
        self._task = self._progress.add_task("training", total=None, steps="waiting for the first step", rate="",
                                             eta="", loss="")

    def line(self, host: str, text: str) -> None:
        if self._stream is not None:
            self._stream.write(f"[{host}] {text}\n")
            self._stream.flush()
        elif self._verbose:
            style = self._HOST_STYLES[(int(host.rsplit("-", 1)[-1]) - 1) % len(self._HOST_STYLES)]
            self._progress.console.print(f"[{style}]{escape(f'[{host}]')}[/] {escape(text)}", highlight=False,
                                         soft_wrap=True)

    def progress(self, step: int, total: int | None, metrics: dict[str, float]) -> None:
        from orchestrator.observing.metric_series import (
            StepMark,
            estimate_progress,
            format_duration,
            loss_metrics,
        )

        now = datetime.now(timezone.utc)
        self._marks.append((now, StepMark(step, total, None)))
        estimate = estimate_progress(list(self._marks))
        rate = eta = loss = ""
        if estimate and estimate.steps_per_second:
            rate = f"{estimate.steps_per_second:.3g} steps/s"
            remaining = estimate.eta_seconds(now)
            if remaining is not None:
                eta = f"ETA {format_duration(remaining)}"
        losses = loss_metrics(list(metrics))
        if losses and losses[0] in metrics:
            loss = f"{losses[0]}={metrics[losses[0]]:.4g}"
        self._progress.update(self._task, completed=step, total=total, steps=f"step {step}" + (f"/{total}" if total else ""), rate=rate,
                              eta=eta, loss=loss)

    def attempt(self, number: int, reason: str) -> None:
        self._progress.console.print(f"[yellow]{reason}; attempt {number}", highlight=False)

    def result(self, run: Any) -> None:
        from orchestrator.emulator.supervising.stall import STACKS_FILE
        from orchestrator.observing.metric_series import METRICS_FILE, read_points

        colour = {"Completed": "green", "Failed": "red", "Hung": "red"}.get(run.status, "yellow")
        console = self._progress.console
        console.print(f"[bold {colour}]{run.status}[/] in {run.seconds:.1f} s, world size {run.world_size}"
                      f"{f', {run.attempts} attempts' if run.attempts > 1 else ''}", highlight=False)
        points = read_points(run.run_dir / METRICS_FILE) if (run.run_dir / METRICS_FILE).is_file() else []
        self._print_loss_curve(points)
        loss = run.final_metrics.get("train:loss")
        if loss is not None:
            console.print(f"final train:loss = [bold]{loss:.6g}", highlight=False)
        for name, value in run.final_metrics.items():
            if name != "train:loss":
                console.print(f"  {name} = {value:.6g}", highlight=False)
        stacks = run.run_dir / STACKS_FILE
        if run.status == "Hung" and stacks.is_file():
            console.print(escape(stacks.read_text()), highlight=False, soft_wrap=True)
        elif run.status == "Interrupted":
            # the reason starts with `interrupted (SIGINT ...)`: a label before it would say the word twice
            console.print(f"[yellow]{escape(run.failure_reason or 'interrupted')}", highlight=False, soft_wrap=True)
            if self._keeps_checkpoints:
                console.print(f"resume from its checkpoints: smtrain local {shlex.join(self._command)} --run-dir "
                              f"{shlex.quote(str(run.run_dir))}", highlight=False, soft_wrap=True)
        elif run.failure_reason:
            console.print(f"[red]failure reason:[/] {escape(run.failure_reason)}", highlight=False,
                          soft_wrap=not self._redraws)
        # One path per line, never wrapped, so each can be copied; only the archives the run wrote (a run that
        # failed before its script ran, such as a failed pip install, wrote none).
        artifacts = [(label, path) for label, path in (("model", run.model_artifact), ("output", run.output_artifact))
                     if path is not None]
        for label, path in (("logs", run.run_dir / "logs"), *artifacts):
            console.print(f"{label + ':':<9}{path}", highlight=False, soft_wrap=True)
        if not artifacts:
            console.print("archives: none written (no model.tar.gz, no output.tar.gz)", highlight=False)
        if points:
            console.print(f"{'metrics:':<9}{run.run_dir / METRICS_FILE}", highlight=False, soft_wrap=True)
            console.print(f"chart:   smtrain metrics {run.run_dir}", highlight=False, soft_wrap=True)

    def _print_loss_curve(self, points: list[Any]) -> None:
        from orchestrator.observing.metric_charts import text_chart
        from orchestrator.observing.metric_series import loss_metrics, metric_names

        for name in loss_metrics(metric_names(points)):
            series = [point for point in points if point.metric == name]
            if len(series) > 1:
                self._progress.console.print(f"{name}\n{text_chart(series)}", highlight=False, markup=False)


def escape(text: str) -> str:
    from rich.markup import escape as rich_escape

    return rich_escape(text)


def emit_plan(file: str, overrides: tuple[str, ...], view: str, job_name: str | None, max_source_bytes: int,
              boto: Any | None = None) -> None:
    """`smtrain plan` and `smtrain submit --dry-run`: plans FILE and prints it; `view`: "json", "text" (one
    screen) or "full" (text with the whole request)."""
    from orchestrator.cli.options import echo_json
    from orchestrator.specs.loader import load

    job_plan = _planned(load(file, overrides), view, job_name, max_source_bytes, boto)
    if view == "json":
        echo_json(job_plan.to_dict())
    else:
        print_plan(job_plan, full=view == "full")


def emit_plans(files: Sequence[str], overrides: tuple[str, ...], view: str, job_name: str | None,
               max_source_bytes: int) -> int:
    """`smtrain plan` of several files, for a CI step that plans every spec: each file is read before any is
    planned, so a refused one costs no AWS call; then each plan in the files' order, in text under a heading
    `==> FILE <==` (as `tail` heads each file), under json one list `[{"file", "plan", "error"}]`. A refusal names
    its file. Returns the exit code: 2 if any file was refused, else 1 if an AWS call failed, else 0."""
    import click

    from orchestrator.cli.ci_annotations import user_error
    from orchestrator.cli.options import echo_json, error_document, terminal_safe
    from orchestrator.errors import SmtrainError
    from orchestrator.specs.loader import load

    def loaded(file: str) -> LoadedSpec | SmtrainError:
        try:
            return load(file, overrides)
        except SmtrainError as exc:
            return exc

    reports, codes = [], [0]
    for index, (file, spec) in enumerate([(file, loaded(file)) for file in files]):
        if view != "json":
            gap = "\n" if index else ""
            click.secho(f"{gap}==> {terminal_safe(file)} <==", bold=True)
        try:
            if isinstance(spec, SmtrainError):
                raise spec
            job_plan = _planned(spec, view, job_name, max_source_bytes)
        except SmtrainError as exc:
            user_error(exc)
            codes.append(exc.exit_code)
            reports.append({"file": file, "plan": None, "error": error_document(exc)["error"]})
            if view != "json":
                click.secho(f"Error in {terminal_safe(file)}: {terminal_safe(str(exc))}", fg="red", err=True)
            continue
        if view == "json":
            reports.append({"file": file, "plan": job_plan.to_dict(), "error": None})
        else:
            print_plan(job_plan, full=view == "full")
    if view == "json":
        echo_json(reports)
    return max(codes)


def _planned(loaded: LoadedSpec, view: str, job_name: str | None, max_source_bytes: int,
             boto: Any | None = None) -> Plan:
    """The SageMaker plan of a spec read, its warnings annotated; packing the source shows a bar but in json."""
    from orchestrator.cli.ci_annotations import spec_warnings
    from orchestrator.cli.options import terminations_interrupt
    from orchestrator.cli.source_bar import source_progress
    from orchestrator.cloud.resolve import plan_on_sagemaker

    with terminations_interrupt(), source_progress(quiet=view == "json"):
        # orchestrator.plan's own work, less the API's words: the CLI's errors keep its options' names
        job_plan = plan_on_sagemaker(loaded, boto, job_name=job_name, max_source_bytes=max_source_bytes)
    spec_warnings(job_plan.loaded)
    return job_plan
