"""The `smtrain` command line. Thin: each command calls library functions and prints their results.

Only click is imported at start-up; every command imports what it needs when it runs, so `smtrain --help` and
`smtrain validate` never load sagemaker, boto3 or torch. Exit codes: 0 ok, 1 the job (or an AWS call) failed,
2 bad input (nothing was sent), 3 the job was stopped, 4 a run or job hung (silent for --stall-timeout with
every rank or host idle), 130 interrupted.
"""

from __future__ import annotations

import sys

import click

from orchestrator import __version__
from orchestrator.cli.options import (
    LazyGroup,
    allow_unverified_option,
    echo_json,
    full_plan_option,
    job_name_option,
    job_region_option,
    max_source_option,
    output_option,
    plan_view,
    report_output_option,
    set_option,
    spec_argument,
)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(__version__, prog_name="smtrain")
def main() -> None:
    """Describe a PyTorch training job in YAML; validate it, see the exact SageMaker request, run it locally
    without docker, or submit it to SageMaker.

    \b
    Typical flow:
      smtrain init src/                  write a starting job.yaml for your own script in src/
      smtrain validate job.yaml          check the spec (fast, offline)
      smtrain plan job.yaml              what submit would send: image, ranks, cost (--full: the exact request)
      smtrain local job.yaml             run it here, every host emulated, no AWS account needed
      smtrain check job.yaml             is the account ready: credentials, role and its permissions, bucket, image, quota
      smtrain submit job.yaml --wait     send it to SageMaker and follow it

    Examples of specs: job_specs/. Field reference: `smtrain schema` and docs/specs.md.

    \b
    Exit codes:
      0    ok
      1    the job failed, or an AWS call failed
      2    bad input: nothing was sent (the message names the file, line and field, with a fix)
      3    the job was stopped
      4    a local run or SageMaker job hung: silent for --stall-timeout, every rank or host idle
      130  interrupted (Ctrl-C, SIGTERM, or SIGHUP: the terminal closed)
    With --output json, errors are one JSON object on stdout too: {"error": {"type", "message", "fix", ...}}
    (validate, tune validate: their report per file, with the file's problems).
    """


@main.command()
@spec_argument("files", nargs=-1, required=True)
@set_option
@job_region_option
@allow_unverified_option
@report_output_option
def validate(files: tuple[str, ...], overrides: tuple[str, ...], allow_unverified: bool, output: str) -> None:
    """Check spec FILES against the schema, SageMaker's API limits and the capability matrix. Offline and fast.

    It is submit's gate: exits 2 whenever `submit` would refuse a file, which includes an unverified combination
    without `allow_unverified: true` (or --allow-unverified), a channel given as a local path (fine for
    `smtrain local`), and a role or output path from $SMTRAIN_ROLE, $SMTRAIN_OUTPUT_PATH or the SDK defaults
    file that the spec's own fields would refuse (named by where it came from). Notices, and unverified
    combinations that are allowed, are shown and pass, among them each value the spec writes that contradicts the
    admin's SageMaker SDK defaults file.

    \b
    Examples:
      smtrain validate job_specs/*.yaml
      smtrain validate job.yaml --set instance.count=4 -o json
    """
    from orchestrator.cli.validation import judged_as_validate, report_on

    sys.exit(report_on(files, lambda file: judged_as_validate(file, overrides, allow_unverified), output))


@main.command()
@spec_argument("files", nargs=-1, required=True)
@set_option
@job_region_option
@output_option
@job_name_option("job")
@max_source_option
@full_plan_option
def plan(files: tuple[str, ...], overrides: tuple[str, ...], output: str, job_name: str | None,
         max_source_bytes: int, full: bool) -> None:
    """Show what submitting each of FILES would send, before anything is sent.

    On one screen: where it runs (image, region, role, output, source), the findings, the ranks per host with
    the launcher and master, the hyperparameters and the worst-case cost. --full adds the resolved spec, the
    exact CreateTrainingJob request (built by smtrain, key for key what SageMaker SDK v2 would send; no SDK
    needed) and the SDK v2 estimator arguments that produce it; --output json holds all of it. Nothing is sent;
    only a missing role or output path is read from the infra stack. Secret-looking values are masked.

    Several files: each plan under a `==> FILE <==` heading, or with --output json one list
    [{"file", "plan", "error"}]; every file is read first, a refused one is never planned, and any refused exits 2.

    \b
    Examples:
      smtrain plan job.yaml
      smtrain plan job.yaml --region eu-west-1 --full
      smtrain plan job_specs/*.yaml -o json
    """
    from orchestrator.cli.render import emit_plan, emit_plans

    if len(files) == 1:
        emit_plan(files[0], overrides, plan_view(output, full), job_name, max_source_bytes)
    else:
        sys.exit(emit_plans(files, overrides, plan_view(output, full), job_name, max_source_bytes))


@main.command()
@click.option("--output", "-o", type=click.Choice(["json", "yaml"]), default="json", show_default=True,
              help="The schema as JSON, or as YAML (the same document).")
def schema(output: str) -> None:
    """Print the JSON Schema of job specs (for editors: yaml-language-server, VS Code, PyCharm).

    \b
    Examples:
      smtrain schema > smtrain.schema.json
      smtrain schema -o yaml
    """
    from orchestrator.specs.field_docs import json_schema
    from orchestrator.specs.model import JobSpec

    document = {"$schema": "https://json-schema.org/draft/2020-12/schema", **json_schema(JobSpec)}
    if output == "yaml":
        import yaml

        click.echo(yaml.safe_dump(document, sort_keys=False, allow_unicode=True), nl=False)
    else:
        echo_json(document)


def _catalog_family(context: click.Context, parameter: click.Parameter, family: str | None) -> str | None:
    """The family as the catalog spells it (`ML.P4D` and `ml.p4d.24xlarge` are p4d); one it lacks is an error
    naming the known ones, since an empty table would read as "no such instances"."""
    if family is None:
        return None
    import difflib

    from orchestrator.specs.catalog import catalog

    wanted = family.lower().removeprefix("ml.").split(".")[0]
    families = sorted({entry.family for entry in catalog().instances.values()})
    if wanted in families:
        return wanted
    close = difflib.get_close_matches(wanted, families, n=1)
    hint = f"did you mean {close[0]}? " if close else ""
    raise click.BadParameter(f"'{family}' is not a family of smtrain's instance catalog; {hint}"
                             f"the families: {', '.join(families)}", ctx=context, param=parameter)


@main.command()
@click.option("--family", callback=_catalog_family, help="Only this family, e.g. g5 or p4d.")
@click.option("--accelerator", type=click.Choice(["cpu", "gpu", "trainium"]), help="Only this kind.")
@output_option
def instances(family: str | None, accelerator: str | None, output: str) -> None:
    """The instance catalog: vCPUs, memory, accelerators, EFA and on-demand price per hour.

    \b
    Examples:
      smtrain instances --accelerator gpu
      smtrain instances --family g5 -o json
    """
    from orchestrator.specs.catalog import catalog

    rows = [entry for entry in catalog().instances.values()
            if (family is None or entry.family == family) and (accelerator is None or entry.accelerator == accelerator)]
    if output == "json":
        echo_json([entry.__dict__ for entry in rows])
        return
    from orchestrator.cli.render import print_instances

    print_instances(rows, catalog())


@main.command()
@output_option
def images(output: str) -> None:
    """SageMaker's PyTorch training images smtrain plans with: Python, tags, release and end of patch, SMDDP.

    A framework_version outside this table needs image_uri. An unverified image is one whose build configuration
    and release data in AWS's image repository disagree (submit needs allow_unverified: true).

    \b
    Examples:
      smtrain images
      smtrain images -o json
    """
    from orchestrator.cli.render import image_rows, print_images

    rows = image_rows()
    if output == "json":
        echo_json(rows)
        return
    print_images(rows)


_LAZY_COMMANDS = {
    "init": "orchestrator.cli.init:init",
    "local": "orchestrator.cli.local:local",
    "check": "orchestrator.cli.check:check",
    "infra": "orchestrator.cli.infra:infra",
    "tune": "orchestrator.cli.tune:tune",
    **{name: f"orchestrator.cli.jobs:{attribute}" for name, attribute in (
        ("submit", "submit"), ("status", "status"), ("watch", "watch"), ("logs", "logs"), ("metrics", "metrics"),
        ("stop", "stop"),
        ("list", "list_command"))},
}
main.lazy_commands.update(_LAZY_COMMANDS)
