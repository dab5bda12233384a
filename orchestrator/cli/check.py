"""`smtrain check [SPEC]`: before the first submit, is the account ready for this job? One line per check."""

from __future__ import annotations

import sys

import click

from orchestrator.cli.options import (
    check_region_option,
    echo_json,
    output_option,
    region_overrides,
    set_option,
    spec_argument,
)
from orchestrator.wording import counted


@click.command()
@spec_argument("file", required=False)
@set_option
@check_region_option
@output_option
@click.pass_context
def check(ctx: click.Context, file: str | None, overrides: tuple[str, ...], region: str | None, output: str) -> None:
    """Check what submitting FILE needs, before anything is uploaded: credentials and their account (STS), the
    region, the execution role (exists, SageMaker may assume it), the output bucket (exists in the job's region,
    writable: one empty object is written and deleted), the role's permissions (IAM's policy simulator: CloudWatch
    Logs, the output path, the channels and checkpoints), the training image for the region, and the account's
    Service Quotas for the spec's instance type and count. Without FILE, the first five, with the role and bucket
    from $SMTRAIN_ROLE / $SMTRAIN_OUTPUT_PATH or the infra stack.

    Each line is ✓ or ✗ with the fix. Exit 0 when every check passes, 1 when one fails, 2 for a bad spec.

    \b
    Examples:
      smtrain check job.yaml
      smtrain check job.yaml --region eu-west-1
    """
    from orchestrator.cloud.preflight import run_checks
    from orchestrator.cloud.sdk import boto_session
    from orchestrator.specs.loader import load

    spec = load(file, region_overrides(overrides, region)).spec if file else None
    session = ctx.obj or boto_session(spec.region if spec else region)
    checks = run_checks(spec, session)
    passed = all(item.ok for item in checks)
    if output == "json":
        echo_json({"passed": passed, "checks": [item.to_dict() for item in checks]})
    else:
        width = max(len(item.name) for item in checks)
        for item in checks:
            mark = click.style("✓", fg="green") if item.ok else click.style("✗", fg="red", bold=True)
            click.echo(f"{mark} {item.name:<{width}}  {item.detail}")
            if item.fix:
                click.echo(f"  {'':<{width}}  fix: {item.fix}")
        click.echo("ready to submit" if passed else f"{counted(sum(not item.ok for item in checks), 'check')} failed",
                   err=True)
    sys.exit(0 if passed else 1)
