"""What `validate` and `tune validate` answer: one report per file, valid or not, with its problems and its findings
(notices, warnings and the unverified combinations that are allowed), a `✓`/`✗` line each in text and one list
under `-o json`, so that a script or a reader takes both validates' answers alike."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import click

from orchestrator.cli.options import echo_json, error_document, terminal_safe
from orchestrator.errors import SmtrainError
from orchestrator.specs.loader import InvalidSpec, LoadedSpec


@dataclass(frozen=True)
class Passed:
    """A file that passed its checks: the job spec whose findings its report shows, and the line summing it up."""

    job: LoadedSpec
    summary: str


def as_submit_judges(job: LoadedSpec) -> LoadedSpec:
    """`job` with the findings of the admin's local SageMaker SDK defaults files (offline: no S3 file is read)
    among its own, refused as `submit` would refuse it: both validates are submit's gate.

    Raises:
        CapabilityError: each refused finding at its file:line and field, as every command names it.
    """
    from orchestrator.planning.sdk_defaults import load_sdk_defaults
    from orchestrator.planning.training_defaults import sdk_defaults_findings
    from orchestrator.specs.capabilities import submit_refusals

    job = dataclasses.replace(job, findings=[*job.findings, *sdk_defaults_findings(job.spec, load_sdk_defaults())])
    refusals = submit_refusals(job.spec, job.findings)
    if refusals:
        raise job.refusal(refusals)
    return job


def check_named_target(job: LoadedSpec) -> None:
    """Checks that the role and output path `job` would go with, where the environment ($SMTRAIN_ROLE,
    $SMTRAIN_OUTPUT_PATH) or the admin's local SDK defaults file names them instead of the spec, meet the rules
    the spec's own fields keep: `plan` and `submit` refuse them, so both validates do too (offline).

    Raises:
        EnvironmentProblem: the value breaks a rule, naming where it came from (`role from environment
            SMTRAIN_ROLE: ...`).
    """
    from orchestrator.cloud.resolve import named_role_and_output_path
    from orchestrator.planning.sdk_defaults import load_sdk_defaults

    named_role_and_output_path(job.spec, load_sdk_defaults(), {})


def judged_as_validate(file: str, overrides: tuple[str, ...] = (), allow_unverified: bool = False) -> Passed:
    """`file` checked as `validate` checks it, the role and output path the environment would give it included.

    Raises:
        SmtrainError: what `validate` reports as the file's problems.
    """
    passed = judged_spec(file, overrides, allow_unverified)
    check_named_target(passed.job)
    return passed


def judged_spec(file: str, overrides: tuple[str, ...] = (), allow_unverified: bool = False) -> Passed:
    """`file` checked as `validate` checks the spec itself, not the shell it runs in (`init` checks what it writes
    so: a role in the environment is no problem of the spec it writes).

    Raises:
        SmtrainError: what `validate` reports as the spec's problems.
    """
    from orchestrator.planning.plan_view import summary_line
    from orchestrator.planning.request import offline_request
    from orchestrator.specs.loader import load

    loaded = as_submit_judges(load(file, overrides, allow_unverified=True if allow_unverified else None))
    offline_request(loaded.spec)  # the limits only the built request shows, as plan checks them
    return Passed(loaded, summary_line(loaded.spec))


def report_on(files: Sequence[str], check: Callable[[str], Passed], output: str) -> int:
    """Checks each file with `check` and reports on it: as it goes in text, as one list
    `[{"file", "valid", "summary", "problems", "warnings"}]` under json. Returns the exit code: 2 if any file
    failed, else 0."""
    reports = [_report(file, check, output) for file in files]
    if output == "json":
        echo_json(reports)
    return 2 if any(not report["valid"] for report in reports) else 0


def _report(file: str, check: Callable[[str], Passed], output: str) -> dict[str, Any]:
    from orchestrator.cli.ci_annotations import spec_warnings, user_error
    from orchestrator.cli.render import findings_text

    try:
        passed = check(file)
    except SmtrainError as exc:
        user_error(exc)
        problems = ([problem.to_dict() for problem in exc.problems] if isinstance(exc, InvalidSpec)
                    else [error_document(exc)["error"]])
        if output == "text":
            click.secho(f"✗ {terminal_safe(file)}", fg="red", bold=True)
            click.echo(terminal_safe(str(exc) if isinstance(exc, InvalidSpec) else f"  {exc}"))
        return {"file": file, "valid": False, "summary": None, "problems": problems, "warnings": []}
    job = passed.job
    spec_warnings(job)
    if output == "text":
        click.secho(f"✓ {terminal_safe(file)}: {passed.summary}", fg="green")
        text = findings_text(job)
        if text:
            click.echo(text)
    warnings = [finding.__dict__ | {"where": job.where(finding.field)} for finding in job.findings]
    return {"file": file, "valid": True, "summary": passed.summary, "problems": [], "warnings": warnings}
