"""GitHub Actions: a failure shown where the user looks. Under `GITHUB_ACTIONS=true`, each spec problem (and
warning) is a workflow command that annotates its file and line, and a failed `smtrain local` one for its root
cause at the user's file:line (a failed install: the line of requirements.txt that names what pip could not
install); where `GITHUB_STEP_SUMMARY` names a file, `smtrain local` appends a short Markdown summary of the run
to it. `smtrain tune local` reports once for the search: one summary, and
one `::error` for a failed search at its first failed trial's root cause; its trials (each a `smtrain
local`) print and append nothing. Elsewhere nothing here prints a byte.

The commands go to stderr, which the runner reads for them as it reads stdout, so `--output json` stays one
JSON document. Every text is masked (redact.py), then escaped by GitHub's rules: no spec value or log line can
end a command early or start one of its own.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from orchestrator.cli.closed_console import Tolerant
from orchestrator.redact import machine_secrets, mask_text

if TYPE_CHECKING:
    from orchestrator.specs.loader import LoadedSpec
    from orchestrator.specs.model import JobSpec

_LOCAL_TITLE = "smtrain local"
_SEARCH_TITLE = "smtrain tune local"
_DATA_ESCAPES = {"%": "%25", "\r": "%0D", "\n": "%0A"}
_PROPERTY_ESCAPES = {**_DATA_ESCAPES, ":": "%3A", ",": "%2C"}


def _active() -> bool:
    return os.environ.get("GITHUB_ACTIONS") == "true" and not _a_trial()


def _summary_file() -> str | None:
    return None if _a_trial() else os.environ.get("GITHUB_STEP_SUMMARY")


def _a_trial() -> bool:
    """A trial of `smtrain tune local`: its search reports once for all its trials."""
    from orchestrator.emulator.run_options import TRIAL_OF_SEARCH  # here: validate loads none of the emulator

    return bool(os.environ.get(TRIAL_OF_SEARCH))


def command(kind: str, message: str, title: str, place: Mapping[str, Any] | None = None,
            secrets: Iterable[str] = ()) -> str:
    """`::error file=PATH,line=N,col=C,title=TITLE::MESSAGE`, each text masked, then escaped (a property's `:`
    and `,` too). `place`: a problem's file, line and column; the path relative to `GITHUB_WORKSPACE` when
    under it, so the annotation lands on the pull request's diff; a file without a line, on the file."""
    secrets = frozenset(secrets) | machine_secrets(os.environ)
    properties = {}
    if place and place.get("file"):  # a file without a line annotates the whole file
        properties = {"file": _in_workspace(place["file"]), "line": place.get("line"),
                      "col": place.get("column") if place.get("line") else None}
    properties["title"] = title
    shown = ",".join(f"{name}={_escaped(mask_text(str(value), secrets), _PROPERTY_ESCAPES)}"
                     for name, value in properties.items() if value is not None)
    return f"::{kind} {shown}::{_escaped(mask_text(message, secrets), _DATA_ESCAPES)}"


def user_error(exc: Exception) -> None:
    """A user error as annotations: one per problem of a spec, at its file and line; else one for it."""
    if not _active():
        return
    from orchestrator.cli.options import error_document

    error = error_document(exc)["error"]
    for problem in error.get("problems") or [error]:
        _emit(_problem_command("error", problem))


def spec_warnings(loaded: LoadedSpec) -> None:
    """A spec's warnings (an image past its end of patch) as `::warning` annotations at their fields."""
    if not _active():
        return
    from orchestrator.specs.loader import Problem

    for finding in loaded.findings:
        if finding.severity == "warning":
            problem = Problem(loaded.where(finding.field), finding.field, finding.message, finding.fix)
            _emit(_problem_command("warning", problem.to_dict(), loaded.spec.secret_values()))


def local_run(result: Any, spec: JobSpec, smoke_line: str | None) -> None:
    """A failed, hung or stopped run (not one interrupted: the CI cancelled it) as one `::error` at its root
    cause's file:line where it has one; and the run's summary appended to `$GITHUB_STEP_SUMMARY`."""
    secrets = spec.secret_values()
    if _active() and result.exit_code != 0 and result.status != "Interrupted":
        cause = result.failure_cause or {}
        message = _cause_message(cause, result.failure_reason or result.status)
        _emit(command("error", message, _LOCAL_TITLE, _location(cause.get("location")), secrets))
    summary_file = _summary_file()
    if summary_file:
        _append(summary_file, _summary(result, spec.instance.host_count, smoke_line), "run", secrets)


def tune_search(result: Any, spec: JobSpec, why_no_best: str | None) -> None:
    """A failed search (Failed, or no best trial: its exit 1) as one `::error` for its cause, at its first
    failed trial's root cause's file:line where it has one; and the search's summary appended to
    `$GITHUB_STEP_SUMMARY`, one for all its trials. `spec`: the job spec, whose secrets are masked."""
    secrets = spec.secret_values()
    cause = _search_cause(result, why_no_best)
    if _active() and cause is not None:
        _emit(command("error", cause[0], _SEARCH_TITLE, _location(cause[1].get("location")), secrets))
    summary_file = _summary_file()
    if summary_file:
        _append(summary_file, _search_summary(result, cause[0] if cause else None), "search", secrets)


def _search_cause(result: Any, why_no_best: str | None) -> tuple[str, dict[str, Any]] | None:
    """Why a search failed in one message, with the first failed trial's root cause (its result.json's, as
    `smtrain local` wrote it) and that cause; None where it did not fail."""
    reason = result.failure_reason or why_no_best
    if (result.status != "Failed" and result.best is not None) or not reason:
        return None
    trial = next((trial for trial in sorted(result.trials, key=lambda trial: trial.number)
                  if trial.status == "Failed"), None)
    if trial is None:
        return reason, {}
    cause = _stored_cause(trial.run_dir)
    return f"{reason}; {trial.name}: {_cause_message(cause, trial.failure_line or trial.status)}", cause


def _stored_cause(run_dir: str | None) -> dict[str, Any]:
    """The root cause a trial's run wrote into its result.json; empty where it wrote none (it never
    started)."""
    from orchestrator.emulator.preparing.layout import read_result

    try:
        stored = read_result(Path(run_dir)) if run_dir else None
    except (OSError, ValueError):
        stored = None
    return (stored or {}).get("failure_cause") or {}


def _cause_message(cause: Mapping[str, Any], reason: str) -> str:
    """A failure in one line of an annotation: its root cause's headline (else `reason`) and the fix."""
    return _with_fix(cause.get("headline") or reason, cause.get("fix"))


def _with_fix(message: str, fix: str | None) -> str:
    return message + (f" (fix: {fix})" if fix else "")


def _append(summary_file: str, text: str, what: str, secrets: Iterable[str]) -> None:
    """`text`, masked, appended to the step summary: the summaries of the job's other steps stay."""
    text = mask_text(text, frozenset(secrets) | machine_secrets(os.environ))
    try:
        with open(summary_file, "a", encoding="utf-8", errors="replace") as summary:
            summary.write(text)
    except OSError as error:
        click.echo(f"warning: the {what}'s summary could not be appended to $GITHUB_STEP_SUMMARY "
                   f"({summary_file}): {error.strerror or error}", file=Tolerant(sys.stderr))


def _problem_command(kind: str, problem: Mapping[str, Any], secrets: Iterable[str] = ()) -> str:
    """A problem in error_document's shape (file, line, column, override, field, message, fix)."""
    message = _with_fix(problem["message"], problem.get("fix"))
    if problem.get("override"):
        message = f"--set {problem['override']}: {message}"
    title = f"smtrain: {problem['field']}" if problem.get("field") else "smtrain"
    return command(kind, message, title, problem, secrets)


def _location(location: str | None) -> dict[str, Any] | None:
    """`src/train.py:42` (a root cause's innermost frame in the user's code, or the requirements.txt line of a
    failed install) as a place; `src/requirements.txt` (an install whose failed requirement no line names) as the
    file alone."""
    path, _, line = (location or "").rpartition(":")
    if path and line.isdigit():
        return {"file": path, "line": int(line)}
    return {"file": location} if location else None


def _in_workspace(path: str) -> str:
    """`path` relative to `GITHUB_WORKSPACE` when under it (as written, else with links resolved), else as
    given."""
    workspace = os.environ.get("GITHUB_WORKSPACE")
    for absolute in (os.path.abspath, os.path.realpath) if workspace else ():
        relative = os.path.relpath(absolute(path), absolute(workspace))
        if relative != ".." and not relative.startswith("../"):
            return relative
    return path


def _escaped(text: str, escapes: Mapping[str, str]) -> str:
    return "".join(escapes.get(char, char) for char in text)


def _emit(line: str) -> None:
    click.echo(line, file=Tolerant(sys.stderr))


def _summary(result: Any, hosts: int, smoke_line: str | None) -> str:
    """The run in a few lines of Markdown: what a reviewer reads on the run's page before opening its log."""
    verdict = smoke_line.partition(":")[0] if smoke_line else result.status  # a passed smoke ends Stopped
    lines = [f"### {_LOCAL_TITLE}: {_code(result.job_name)}: {verdict}", "",
             f"- status: {result.status} (exit {result.exit_code}) in {result.seconds:.1f} s",
             f"- hosts: {hosts}, world size {result.world_size}"]
    if smoke_line:
        lines.append(f"- smoke: {_code(smoke_line.removeprefix('smoke '))}")
    if result.final_metrics:
        lines.append("- final metrics: " + _code(", ".join(f"{name}={value:.6g}"
                                                          for name, value in result.final_metrics.items())))
    lines.append(f"- run directory: {_code(str(result.run_dir))}")
    reason = result.failure_reason or (result.failure_cause or {}).get("headline")
    if reason and result.exit_code != 0:
        lines += _fenced(reason)
    return "\n".join(lines) + "\n\n"


def _search_summary(result: Any, cause: str | None) -> str:
    """The search in a few lines of Markdown: what it found (or why it failed), not each trial's run."""
    from orchestrator.observing.trials import counts_of
    from orchestrator.wording import status_words

    counts = ", ".join(f"{count} {status_words(status)}" for status, count in counts_of(result.trials).items()
                       if count)
    lines = [f"### {_SEARCH_TITLE}: {_code(result.name)}: {result.status}", "",
             f"- status: {result.status} in {result.seconds:.1f} s ({result.strategy} search, "
             f"{result.goal} {_code(result.metric)})",
             f"- trials: {len(result.trials)} run of {result.max_jobs}" + (f" ({counts})" if counts else "")]
    winner = result.best
    if winner is not None:
        values = ", ".join(f"{name}={value:.6g}" if isinstance(value, float) else f"{name}={value}"
                           for name, value in winner.hyperparameters.items())
        lines.append(f"- best: {_code(winner.name)}: {_code(f'{result.metric} = {winner.objective:.6g}')} "
                     f"with {_code(values or 'no tuned values')}")
    if result.completion_reason:
        lines.append(f"- completed early: {_code(result.completion_reason)}")
    lines.append(f"- run directory: {_code(str(result.run_dir))}")
    if cause:
        lines += _fenced(cause)
    return "\n".join(lines) + "\n\n"


def _fenced(reason: str) -> list[str]:
    """A failure's text under its heading, in a code fence longer than any run of backticks in it."""
    fence = "`" * max([3, *(len(run) + 1 for run in re.findall("`+", reason))])
    return ["", "failure cause:", "", f"{fence}text", reason, fence]


def _code(text: str) -> str:
    """`text` as one Markdown code span: no markup, HTML or line break in it takes effect."""
    text = " ".join(text.splitlines())
    ticks = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    return f"{ticks} {text} {ticks}"
