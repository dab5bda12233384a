"""GitHub Actions: a failure shown where the user looks. Under `GITHUB_ACTIONS=true`, each spec problem (and
warning) is a workflow command that annotates its file and line, and a failed `smtrain local` one for its root
cause at the user's file:line; where `GITHUB_STEP_SUMMARY` names a file, `smtrain local` appends a short
Markdown summary of the run to it. Elsewhere nothing here prints a byte.

The commands go to stderr, which the runner reads for them as it reads stdout, so `--output json` stays one
JSON document. Every text is masked (redact.py), then escaped by GitHub's rules: no spec value or log line can
end a command early or start one of its own.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import click

from orchestrator.cli.closed_console import Tolerant
from orchestrator.redact import machine_secrets, mask_text

if TYPE_CHECKING:
    from orchestrator.specs.loader import LoadedSpec
    from orchestrator.specs.model import JobSpec

_LOCAL_TITLE = "smtrain local"
_DATA_ESCAPES = {"%": "%25", "\r": "%0D", "\n": "%0A"}
_PROPERTY_ESCAPES = {**_DATA_ESCAPES, ":": "%3A", ",": "%2C"}


def _active() -> bool:
    return os.environ.get("GITHUB_ACTIONS") == "true"


def command(kind: str, message: str, title: str, place: Mapping[str, Any] | None = None,
            secrets: Iterable[str] = ()) -> str:
    """`::error file=PATH,line=N,col=C,title=TITLE::MESSAGE`, each text masked, then escaped (a property's `:`
    and `,` too). `place`: a problem's file, line and column; the path relative to `GITHUB_WORKSPACE` when
    under it, so the annotation lands on the pull request's diff."""
    secrets = frozenset(secrets) | machine_secrets(os.environ)
    properties = {}
    if place and place.get("file") and place.get("line"):
        properties = {"file": _in_workspace(place["file"]), "line": place["line"], "col": place.get("column")}
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
        message = cause.get("headline") or result.failure_reason or result.status
        if cause.get("fix"):
            message += f" (fix: {cause['fix']})"
        _emit(command("error", message, _LOCAL_TITLE, _location(cause.get("location")), secrets))
    summary_file = os.environ.get("GITHUB_STEP_SUMMARY")
    if not summary_file:
        return
    text = mask_text(_summary(result, spec.instance.host_count, smoke_line),
                     secrets | machine_secrets(os.environ))
    try:
        # appended: the summaries of the job's other steps stay
        with open(summary_file, "a", encoding="utf-8", errors="replace") as summary:
            summary.write(text)
    except OSError as error:
        click.echo(f"warning: the run's summary could not be appended to $GITHUB_STEP_SUMMARY "
                   f"({summary_file}): {error.strerror or error}", file=Tolerant(sys.stderr))


def _problem_command(kind: str, problem: Mapping[str, Any], secrets: Iterable[str] = ()) -> str:
    """A problem in error_document's shape (file, line, column, override, field, message, fix)."""
    message = problem["message"] + (f" (fix: {problem['fix']})" if problem.get("fix") else "")
    if problem.get("override"):
        message = f"--set {problem['override']}: {message}"
    title = f"smtrain: {problem['field']}" if problem.get("field") else "smtrain"
    return command(kind, message, title, problem, secrets)


def _location(location: str | None) -> dict[str, Any] | None:
    """`src/train.py:42` (a root cause's innermost frame in the user's code) as a place."""
    path, _, line = (location or "").rpartition(":")
    return {"file": path, "line": int(line)} if path and line.isdigit() else None


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
        fence = "`" * max([3, *(len(run) + 1 for run in re.findall("`+", reason))])
        lines += ["", "failure cause:", "", f"{fence}text", reason, fence]
    return "\n".join(lines) + "\n\n"


def _code(text: str) -> str:
    """`text` as one Markdown code span: no markup, HTML or line break in it takes effect."""
    text = " ".join(text.splitlines())
    ticks = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    return f"{ticks} {text} {ticks}"
