"""`smtrain infra`: deploy the stack that holds the execution role and bucket, show its outputs, delete it."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from orchestrator.cli.options import UserErrorGroup, echo_json, key_value_pairs, output_option, region_option
from orchestrator.cloud import infra as infra_lib
from orchestrator.wording import counted

_stack_name_option = click.option(
    "--stack-name",
    metavar="NAME",
    help=f"CloudFormation stack [default: ${infra_lib.STACK_NAME_ENV} or '{infra_lib.DEFAULT_STACK_NAME}'].",
)


def _yes_option(what: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """--yes, for each command that asks before it changes the stack."""
    return click.option("--yes", "-y", is_flag=True, help=f"{what} without asking (needed without a terminal).")


def _session(ctx: click.Context, region: str | None) -> Any:
    """The boto3 session to use: the one a caller put in ctx.obj (tests), else boto3's chain for `region`."""
    from orchestrator.cloud.sdk import boto_session

    return ctx.obj or boto_session(region)


@click.group("infra", cls=UserErrorGroup)
def infra() -> None:
    """The SageMaker execution role and S3 bucket that jobs need, as a CloudFormation stack."""


@infra.command()
@_stack_name_option
@region_option("the stack")
@click.option(
    "--parameter",
    "-p",
    "parameters",
    multiple=True,
    metavar="KEY=VALUE",
    callback=key_value_pairs,
    help="Template parameter, repeatable (e.g. EnableVpcAccess=true); unset ones keep the stack's values.",
)
@click.option(
    "--template-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=infra_lib.TEMPLATE_PATH,
    show_default="the template shipped with smtrain (infra/smtrain.yaml)",
    help="CloudFormation template to deploy.",
)
@_yes_option("Execute the change set")
@output_option
@click.pass_context
def deploy(
    ctx: click.Context, stack_name: str | None, region: str | None, parameters: dict[str, str],
    template_file: Path, yes: bool, output: str,
) -> None:
    """Create or update the stack through a change set: preview the changes, confirm, execute, wait.

    Prints the outputs at the end; `smtrain infra show` prints them again later.

    \b
    Examples:
      smtrain infra deploy --region us-east-1
      smtrain infra deploy --yes -o json
    """
    if not yes and not _can_ask():
        raise click.UsageError("no terminal to confirm the change set on: pass --yes to execute it unseen")
    deployment = infra_lib.Deployment(stack_name=stack_name, parameters=parameters, template_path=template_file,
                                      on_event=_print_event, confirm=None if yes else _ask_to_execute)
    outputs = infra_lib.deploy(deployment, session=_session(ctx, region))
    if outputs is None:  # declining is a normal answer, not a failure
        click.echo("Cancelled: the change set was deleted and nothing changed.", err=True)
        raise click.exceptions.Exit(0)
    _print_outputs(outputs, output)


@infra.command()
@_stack_name_option
@region_option("the stack")
@output_option
@click.pass_context
def show(ctx: click.Context, stack_name: str | None, region: str | None, output: str) -> None:
    """Print the stack's outputs: role ARN, bucket, output path, checkpoint and code prefixes.

    \b
    Examples:
      smtrain infra show
      smtrain infra show -o json
    """
    _print_outputs(infra_lib.stack_outputs(stack_name, _session(ctx, region)), output)


@infra.command()
@_stack_name_option
@region_option("the stack")
@click.option(
    "--delete-bucket",
    is_flag=True,
    help="Also delete the stack's bucket and everything in it, every object version (the stack keeps the bucket "
    "otherwise).",
)
@_yes_option("Delete")
@output_option
@click.pass_context
def delete(
    ctx: click.Context, stack_name: str | None, region: str | None, delete_bucket: bool, yes: bool, output: str
) -> None:
    """Delete the stack: show what goes and what stays, confirm, delete, wait for DELETE_COMPLETE.

    smtrain's template keeps the bucket (your outputs and checkpoints) when the stack is deleted; --delete-bucket
    deletes it and its contents too.

    \b
    Examples:
      smtrain infra delete
      smtrain infra delete --delete-bucket --yes
    """
    if not yes and not _can_ask():
        raise click.UsageError("no terminal to confirm the deletion on: pass --yes to delete the stack unasked")
    session = _session(ctx, region)
    teardown = infra_lib.plan_teardown(stack_name, session, delete_bucket)
    _print_teardown(teardown, delete_bucket)
    if not yes and not click.confirm(f"Delete stack {teardown.stack_name} in {teardown.region}?", default=False,
                                     err=True):
        click.echo("Cancelled: nothing was deleted.", err=True)
        raise click.exceptions.Exit(0)
    deleted = infra_lib.tear_down(teardown, infra_lib.Removal(delete_bucket, on_event=_print_event), session)
    resource = teardown.bucket
    bucket = resource.physical_id if resource else None
    bucket_kept = bool(resource and teardown.bucket_contents and resource.kept and not delete_bucket)
    if output == "json":
        echo_json({"stack_name": teardown.stack_name, "region": teardown.region, "status": "DELETE_COMPLETE",
                   "bucket": bucket, "bucket_kept": bucket_kept, "object_versions_deleted": deleted})
        return
    if bucket_kept:
        said = f"; bucket {bucket} kept"
    elif delete_bucket and teardown.bucket_contents:
        said = f"; bucket {bucket} deleted with its {counted(deleted, 'object version')}"
    else:
        said = ""
    click.echo(f"stack {teardown.stack_name} deleted in {teardown.region}{said}")


def _print_teardown(teardown: infra_lib.Teardown, delete_bucket: bool) -> None:
    """Every resource, one line each (unwrapped, so names and ARNs copy whole), and whether it goes or stays, then
    what becomes of the bucket, before the question."""
    click.echo(f"stack {teardown.stack_name} in {teardown.region} ({teardown.status}):", err=True)
    for resource in teardown.resources:
        kept = resource.kept and not (delete_bucket and resource is teardown.bucket)
        fate = f"kept ({resource.deletion_policy})" if kept else "deleted"
        click.echo(f"  {fate:<28} {resource.logical_id} ({resource.type}) {resource.physical_id}", err=True)
    if teardown.bucket is not None:
        click.echo(_bucket_fate(teardown.bucket, teardown.bucket_contents, delete_bucket), err=True)


def _bucket_fate(
    bucket: infra_lib.StackResource, contents: infra_lib.BucketContents | None, delete_bucket: bool
) -> str:
    name = bucket.physical_id
    if contents is None:
        return f"bucket {name} no longer exists"
    if bucket.kept and not delete_bucket:
        return (f"bucket {name} is kept: its DeletionPolicy is {bucket.deletion_policy}, so your outputs and "
                f"checkpoints outlive the stack ({contents}); it then belongs to no stack. --delete-bucket deletes it "
                "and everything in it too")
    if not contents.versions:
        return f"bucket {name} is empty and is deleted" + (" after the stack" if bucket.kept else " with the stack")
    when = ("after the stack is deleted" if bucket.kept
            else "before the stack is deleted, so CloudFormation can delete it")
    return f"bucket {name} holds {contents}: --delete-bucket deletes every one of them {when}"


def _print_event(event: infra_lib.DeployEvent) -> None:
    """Each report as it comes; stack events and heartbeats with the time since the change set was executed or the
    deletion began."""
    if event.elapsed_seconds is not None:
        minutes, seconds = divmod(int(event.elapsed_seconds), 60)
        click.echo(f"[{minutes:2d}m{seconds:02d}s] {event.message}", err=True)
    else:
        click.echo(event.message, err=True)
    if event.stage is infra_lib.DeployStage.PREVIEW:
        from rich.console import Console
        from rich.table import Table

        table = Table("Action", "Logical ID", "Type", "Replacement")
        for change in event.changes:
            table.add_row(change["action"], change["logical_id"], change["type"], change["replacement"])
        Console(stderr=True).print(table)


def _can_ask() -> bool:
    """Only a terminal can answer the confirmation; piped or CI input must say --yes explicitly."""
    return sys.stdin.isatty()


def _ask_to_execute(changes: list[dict[str, str]]) -> bool:
    asked = "this change" if len(changes) == 1 else f"these {len(changes)} changes"
    return click.confirm(f"Execute {asked}?", default=False, err=True)


def _print_outputs(outputs: infra_lib.StackOutputs, output: str) -> None:
    fields = dataclasses.asdict(outputs)
    if output == "json":
        echo_json(fields)
        return
    width = max(map(len, fields))
    for key, value in fields.items():
        click.echo(f"{key:<{width}}  {value}")
