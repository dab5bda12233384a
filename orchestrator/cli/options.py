"""What every smtrain command group shares: user-error handling, the `--set` and `--output` options, JSON out."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import click

SET_HELP = ("KEY.PATH=VALUE: overrides that value of the spec file (YAML syntax: 3, true, \"2.3.0\", [a, b]). "
            "Repeatable, e.g. --set instance.count=2 --set hyperparameters.epochs=1")


class UserErrorGroup(click.Group):
    """Prints user errors as one clear message (no traceback) with their exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        from orchestrator.errors import SmtrainError

        try:
            return super().invoke(ctx)
        except SmtrainError as exc:
            click.secho(f"Error: {exc}", fg="red", err=True)
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.secho("interrupted", fg="yellow", err=True)
            ctx.exit(130)


def set_option(function: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--set", "overrides", multiple=True, metavar="KEY.PATH=VALUE", help=SET_HELP)(function)


def output_option(function: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--output", "-o", type=click.Choice(["text", "json"]), default="text", show_default=True,
                        help="json: machine-readable output on stdout for scripts and CI (progress goes to "
                             "stderr).")(function)


def key_value_pairs(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, str]:
    """Click callback for repeatable `KEY=VALUE` options (`--input`, `--parameter`); a malformed one is a usage
    error (exit 2) naming the option's own form."""
    pairs = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"'{item}' is not {param.metavar}", ctx=ctx, param=param)
        pairs[key] = value
    return pairs


def echo_json(document: Any) -> None:
    click.echo(json.dumps(document, indent=2, default=str))
