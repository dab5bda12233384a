"""What every smtrain command group shares: user-error handling, the `--set` and `--output` options, the options
declared once (a local run's, how a job is followed, letting an unverified combination through) as flags generated
from their declaration, JSON out."""

from __future__ import annotations

import contextlib
import copy
import functools
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource

if TYPE_CHECKING:
    from orchestrator.declaration import Declared

SET_HELP = ("KEY.PATH=VALUE: overrides that value of the spec file (YAML syntax: 3, true, \"2.3.0\", [a, b]). "
            "Repeatable, e.g. --set instance.count=2 --set hyperparameters.epochs=1")
JOB_SET_HELP = ("KEY.PATH=VALUE: overrides that value of the job spec the tuning spec names (its `job:`; "
                "YAML syntax: 3, true, \"2.3.0\", [a, b]). Repeatable, e.g. --set hyperparameters.epochs=2 "
                "--set instance.count=1")


_OUTPUT_KEY = "smtrain.output"
"""ctx.meta key under which the eager --output option records its choice, for the error handler."""
_WORDS_KEY = "smtrain.words"
"""ctx.meta key of the command line's words as the group received them (click consumes them as it goes)."""
_PLACE_KEYS = ("file", "line", "column", "field")
"""Where in a spec an error is: every JSON error document has these keys, null where no file is involved."""


class UserErrorGroup(click.Group):
    """Prints user errors as one clear message (no traceback) with their exit code; under `--output json`, as
    one JSON object on stdout (`{"error": {...}}`, see error_document) with the same exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        from orchestrator.errors import SmtrainError

        ctx.meta.setdefault(_WORDS_KEY, [*getattr(ctx, "_protected_args", ()), *ctx.args])
        try:
            return super().invoke(ctx)
        except SmtrainError as exc:
            from orchestrator.cli.ci_annotations import user_error

            user_error(exc)
            if _wants_json(ctx):
                echo_json(error_document(exc))
            else:
                click.secho(f"Error: {terminal_safe(str(exc))}", fg="red", err=True)
            ctx.exit(exc.exit_code)
        except click.UsageError as exc:
            if not _wants_json(ctx):
                raise
            command = exc.ctx.command_path if exc.ctx else "smtrain"
            echo_json(_unplaced_error("UsageError", exc.format_message(), f"see `{command} --help`"))
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt as error:  # said where it can be: a closed terminal (SIGHUP) must not exit 1
            import sys

            from orchestrator.cli.closed_console import Tolerant
            from orchestrator.emulator.supervising.interruption import interrupted_by

            # The signal, as the run's reason names it, and what was left behind where the interrupted code noted
            # it (a submit: whether the job exists).
            said = ": ".join([f"interrupted ({interrupted_by(error)})", *getattr(error, "__notes__", ())])
            if _wants_json(ctx):
                echo_json(_unplaced_error("Interrupted", said, None), file=Tolerant(sys.stdout))
            else:
                click.secho(said, fg="yellow", file=Tolerant(sys.stderr))
            ctx.exit(130)


class LazyGroup(UserErrorGroup):
    """A group whose subcommands in `lazy_commands` ("name": "module:attribute") are imported only when run or
    listed: `smtrain validate` then never loads the job, tuning and infra commands' modules (and what they
    import: the spec model, the AWS readers)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy_commands: dict[str, str] = {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy_commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy_commands:
            import importlib

            module, _, attribute = self.lazy_commands[cmd_name].partition(":")
            self.add_command(getattr(importlib.import_module(module), attribute), cmd_name)
        return super().get_command(ctx, cmd_name)


def terminal_safe(text: str) -> str:
    """`text` with every control and formatting character written as an escape (`\\u001b`), line breaks but
    kept: an error quotes what the user gave (a path, a run name), and `\\x1b]52;...` or `\\x1b[2J` in it would
    otherwise write the clipboard or clear the screen."""
    from orchestrator.specs.model import printable

    return printable(text)


def _wants_json(ctx: click.Context) -> bool:
    """--output json was given: recorded by the option (eager, so before other options fail), else read from
    the raw arguments (an unknown option fails before any option is processed)."""
    if ctx.meta.get(_OUTPUT_KEY):
        return ctx.meta[_OUTPUT_KEY] == "json"
    words = ctx.meta.get(_WORDS_KEY, [])
    pairs = zip(words, words[1:])
    return any(word in ("--output=json", "-ojson") for word in words) or any(
        flag in ("--output", "-o") and value == "json" for flag, value in pairs)


def error_document(exc: Exception) -> dict[str, Any]:
    """`{"error": {"type", "message", "fix", "file", "line", "column", "field"}}`; a spec with several problems
    also lists each of them under "problems" (the first one fills the top-level place)."""
    from orchestrator.specs.loader import InvalidSpec

    problems = [problem.to_dict() for problem in exc.problems] if isinstance(exc, InvalidSpec) else []
    place = problems[0] if problems else {**dict.fromkeys(_PLACE_KEYS), "file": getattr(exc, "file", None),
                                          "line": getattr(exc, "line", None)}
    message, fix = getattr(exc, "message", str(exc)), getattr(exc, "fix", None)
    if problems:  # "2 problems in the job spec: <the first one's message>", and the first one's fix
        message, fix = f"{message.splitlines()[0]} {problems[0]['message']}", problems[0]["fix"]
    error = {"type": type(exc).__name__, "message": message, "fix": fix,
             **{key: place[key] for key in _PLACE_KEYS}}
    if problems:
        error["problems"] = problems
    return {"error": error}


def _unplaced_error(kind: str, message: str, fix: str | None) -> dict[str, Any]:
    """An error that no file holds (bad usage, Ctrl-C) in error_document's shape: scripts read one set of keys."""
    return {"error": {"type": kind, "message": message, "fix": fix, **dict.fromkeys(_PLACE_KEYS)}}


def spec_argument(name: str, **settings: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The spec file argument (`FILE`, `FILES`) of every command that reads one. Any path: the loader refuses a
    folder, a FIFO or a missing file naming it (`file` under `--output json`, a file's own report in `validate`),
    where click's own check was a usage error with no file."""
    return click.argument(name, type=click.Path(), **settings)


def set_option(function: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--set", "overrides", multiple=True, metavar="KEY.PATH=VALUE", help=SET_HELP)(function)


_REGION_CHAIN = "$AWS_REGION, then boto3's chain: AWS_DEFAULT_REGION, profile"
"""Where a region comes from when neither `--region` nor a spec names one."""
_JOB_REGION_DEFAULT = f"the spec's `region:`, else {_REGION_CHAIN}"
_JOB_REGION_MORE = " The same as --set region=REGION, which still works; given both, --region wins."


def region_option(of: str, default: str = _REGION_CHAIN,
                  more: str = "") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """`--region REGION`, the one spelling of a region on every command: `of` says whose region it is (the job,
    the stack), `default` where it comes from otherwise, `more` anything else it does. The command receives
    `region`, None where it was not given."""
    return click.option("--region", metavar="REGION", help=f"AWS region of {of} [default: {default}].{more}")


def job_region_option(function: Callable[..., Any]) -> Callable[..., Any]:
    """`--region` of every command that reads a job spec (validate, plan, local, submit and their tune
    counterparts): the job's region, as `status`, `list`, `tune` and `infra` take theirs, and the canonical
    spelling of `--set region=REGION`, which still works. The command receives it among its `overrides`, after
    every `--set`, so that it wins."""

    @functools.wraps(function)
    def in_region(*args: Any, region: str | None, overrides: tuple[str, ...], **kwargs: Any) -> Any:
        return function(*args, overrides=region_overrides(overrides, region), **kwargs)

    return region_option("the job", _JOB_REGION_DEFAULT, _JOB_REGION_MORE)(in_region)


def backend_option(named: str, local: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """`--backend` of the verbs that answer for one `named` (JOB, TUNING), whose bare name is `local` (a local run,
    a local search) where there is one: the place the prefix `local:` or `sagemaker:` would say."""
    from orchestrator.backends.base import BACKENDS

    return click.option("--backend", type=click.Choice(BACKENDS),
                        help=f"Where {named} is, for a bare name, as the prefix local: or sagemaker: says [default: "
                             f"{local} of that name where there is one, else SageMaker].")


def check_region_option(function: Callable[..., Any]) -> Callable[..., Any]:
    """`check`'s `--region`: the job's, as `job_region_option`'s (check and submit then judge one region), and
    without a spec the region checked; the command receives `region` and adds it to its overrides itself."""
    return region_option("the job (without FILE: the region checked)", _JOB_REGION_DEFAULT,
                         _JOB_REGION_MORE)(function)


def region_overrides(overrides: tuple[str, ...], region: str | None) -> tuple[str, ...]:
    """The `--set` overrides with what `--region` means, `region="REGION"`, last, where it was given: quoted, so
    that `--region null` or `--region 123` is refused as no region's name rather than read as YAML (null: no region
    at all, silently the environment's), and named `--region REGION`, as typed, wherever a message names it."""
    from orchestrator.specs.option_overrides import OptionOverride

    return (*overrides, OptionOverride("--region", "region", region)) if region is not None else overrides


def job_set_option(function: Callable[..., Any]) -> Callable[..., Any]:
    """`--set` of the tune commands, which applies to the job spec, not the tuning spec."""
    return click.option("--set", "overrides", multiple=True, metavar="KEY.PATH=VALUE",
                        help=JOB_SET_HELP)(function)


def max_source_option(function: Callable[..., Any]) -> Callable[..., Any]:
    """`plan`, `submit`, `tune plan` and `tune submit` pack the same source under the same limit; a limit of 0 or
    less refuses every source. The commands receive it in bytes (`max_source_bytes`), as packing takes it."""
    return click.option("--max-source-mb", "max_source_bytes", type=click.FloatRange(min=0, min_open=True),
                        default=100, show_default=True, callback=lambda _ctx, _param, megabytes: int(megabytes * 1e6),
                        help="Refuse a source_dir that packs larger than this.")(function)


class _FirstNameInHelp(click.Option):
    """An option that `--help` names by its first name only: the others are earlier spellings, kept working."""

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        shown = copy.copy(self)
        shown.opts = self.opts[:1]
        return super(_FirstNameInHelp, shown).get_help_record(ctx)


def job_name_option(named: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """`--job-name` of `plan`, `submit`, `tune plan` and `tune submit`, the exact name of the `named` (a job, a
    tuning job) they plan or create; `--name`, the tune commands' first spelling, still works. The command
    receives `job_name`."""
    return click.option("--job-name", "--name", "job_name", cls=_FirstNameInHelp, metavar="NAME",
                        help=f"Exact {named} name (default: the spec's name plus a timestamp).")


def instance_type_option(function: Callable[..., Any]) -> Callable[..., Any]:
    """`--instance-type`, the SageMaker instance a written spec names instead of the one smtrain suggests; the
    command receives `instance_type` (None: the suggestion)."""
    return click.option("--instance-type", metavar="TYPE",
                        help="The instance type, e.g. ml.g5.12xlarge (`smtrain instances` lists them) "
                             "[default: one that fits the mode and whether the script uses a GPU].")(function)


def mode_option(function: Callable[..., Any]) -> Callable[..., Any]:
    """`--mode`, the distribution mode a written spec names instead of the one smtrain suggests; the command
    receives `mode` (None: the suggestion)."""
    from orchestrator.specs.modes import Mode

    return click.option("--mode", type=click.Choice([member.value for member in Mode]),
                        help="The distribution mode [default: torch_distributed for a script that reads RANK, "
                             "LOCAL_RANK or WORLD_SIZE, mpi for one that uses MPI, else none].")(function)


def full_plan_option(function: Callable[..., Any]) -> Callable[..., Any]:
    """`--full` of `plan` and of `submit --dry-run`, which prints the plan exactly as `plan` does."""
    return click.option("--full", is_flag=True, help="Also print the resolved spec, the SDK v2 estimator arguments "
                                                     "and the exact CreateTrainingJob request.")(function)


def plan_view(output: str, full: bool) -> str:
    """How a plan is printed: "json", "text" (one screen), or "full" (text with the whole request: --full)."""
    return "full" if full and output == "text" else output


def wait_option(followed: str, implied_by: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """`--wait` of `submit` and `tune submit`: follow the `followed` (a job, a tuning job) the command created to
    its end, the exit code its final status's; the flags `implied_by` names ask for it too."""
    return click.option("--wait", is_flag=True, help=f"Follow the {followed} to its end; exit 0 Completed, 1 Failed, "
                                                     f"3 Stopped (implied by {implied_by}).")


_JSON_HELP = ("machine-readable output on stdout for scripts and CI (progress goes to stderr), errors too: "
              "{\"error\": {...}}.")


def output_option(function: Callable[..., Any], json_help: str = _JSON_HELP) -> Callable[..., Any]:
    return click.option("--output", "-o", type=click.Choice(["text", "json"]), default="text", show_default=True,
                        is_eager=True, callback=_record_output, help=f"json: {json_help}")(function)


def report_output_option(function: Callable[..., Any]) -> Callable[..., Any]:
    """`validate`'s and `tune validate`'s --output: they report on several files, each valid or not, so their JSON
    is one list (`cli/validation.py`)."""
    return output_option(function, "one report per file on stdout, for scripts and CI: [{\"file\", \"valid\", "
                                   "\"summary\", \"problems\", \"warnings\"}], a file's error among its "
                                   "problems.")


def _record_output(ctx: click.Context, param: click.Parameter, value: str) -> str:
    ctx.meta[_OUTPUT_KEY] = value
    return value


def runs_option(noun: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """`--runs DIR` of `list` and `tune list`: a run's `--run-dir` can be anywhere (a CI job's /tmp/ci/job-1), so
    the local listing is told which folder to read; the command gets None where it was not given."""
    return click.option(
        "--runs", "runs_root", type=click.Path(file_okay=False, path_type=Path), callback=_existing_folder,
        metavar="DIR", help=f"List the local {noun} in the folder DIR (for runs started with --run-dir "
                            f"/tmp/ci/job-1: --runs /tmp/ci), or DIR alone where it is itself one of them "
                            f"[default: runs/].")


def _existing_folder(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    from orchestrator.backends.runs import is_directory

    if value is not None and not is_directory(value):
        raise click.BadParameter(f"{value} is no folder here; give the folder `--run-dir` wrote into (or that "
                                 "run directory itself)", ctx=ctx, param=param)
    return value


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


def local_run_options(*names: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The flags of a local run's options (emulator/run_options.py): all of them, or the `names` given."""
    from orchestrator.emulator.run_options import Options

    return declared_options(Options, *names)


def follow_options(*, defaults: dict[str, Any] | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The flags of how a job is followed (`cloud/hang_watch.py`'s WatchOptions): `watch`'s and `submit --wait`'s;
    `defaults` where the command's differ from the declaration's."""
    from orchestrator.cloud.hang_watch import WatchOptions

    return declared_options(WatchOptions, defaults=defaults)


def allow_unverified_option(function: Callable[..., Any]) -> Callable[..., Any]:
    """`--allow-unverified` of `validate`, `submit`, `tune validate` and `tune submit`, generated from its declaration
    (`planning/unverified.py`, whose field is also the API's keyword); the command receives `allow_unverified`."""
    from orchestrator.declaration import declarations
    from orchestrator.planning.unverified import UnverifiedOptions

    option = declarations(UnverifiedOptions)["allow_unverified"]
    return _declared_option(UnverifiedOptions, "allow_unverified", option, {})(function)


def allowing_unverified(overrides: tuple[str, ...], allow_unverified: bool) -> tuple[str, ...]:
    """The `--set` overrides with what `--allow-unverified` means, `allow_unverified=true`, where it was given,
    named `--allow-unverified`, as typed, wherever a message or the plan's sources name it."""
    from orchestrator.specs.option_overrides import OptionOverride

    if not allow_unverified:
        return overrides
    return (*overrides, OptionOverride.flag("--allow-unverified", "allow_unverified=true"))


def any_given(context: click.Context, options: type) -> bool:
    """Whether the command line gave any flag of `options`' declared fields: a flag that only matters in one mode
    (following a job) asks for that mode rather than being dropped unseen."""
    from orchestrator.declaration import declarations

    return any(context.get_parameter_source(name) not in (None, ParameterSource.DEFAULT)
               for name in declarations(options))


def declared_options(options: type, *names: str, defaults: dict[str, Any] | None = None,
                     receive_as: str = "options") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The flags of the options `options` declares (orchestrator/declaration.py), all of them in declaration order
    or the `names` given, with the declared defaults or the field values `defaults` gives instead. The command
    receives them as one instance, its parameter `receive_as` (a command of two option classes names one
    otherwise), holding what the command line gave and the defaults for the rest."""
    from orchestrator.declaration import declarations

    chosen = {name: option for name, option in declarations(options).items() if not names or name in names}
    given_defaults = defaults or {}

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(command)
        def collect(**given: Any) -> Any:
            from orchestrator.declaration import flag_of

            context = click.get_current_context()
            values = {name: given.pop(name) for name in chosen}
            values = {name: value for name, value in values.items()
                      if context.get_parameter_source(name) is not ParameterSource.DEFAULT}
            for name in values:
                needed = chosen[name].needs
                if needed and needed not in values:
                    raise click.UsageError(f"{flag_of(options, name)} needs {flag_of(options, needed)} "
                                           f"{chosen[needed].metavar or ''}".rstrip())
            return command(**given, **{receive_as: options(**{**given_defaults, **values})})

        for name, option in reversed(chosen.items()):
            collect = _declared_option(options, name, option, given_defaults)(collect)
        return collect

    return decorate


def _declared_option(options: type, name: str, option: Declared,
                     defaults: dict[str, Any]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """One declared option as a click option: its flag, type and range, metavar, help; the value converted by
    the declaration's `normalize` (a ValueError is a usage error naming the flag, exit 2)."""
    from orchestrator.declaration import default_of, flag_of, not_a_number

    default = defaults[name] if name in defaults else default_of(options, name)
    settings: dict[str, Any] = {"help": option.help, "metavar": option.metavar, "hidden": option.hidden}
    if option.takes == "flag":
        settings["is_flag"] = True
    elif option.takes == "pairs":
        settings["multiple"] = True
    elif option.takes == "directory":
        settings["type"] = click.Path(file_okay=False, path_type=Path)
    elif option.takes == "int":
        settings["type"] = click.IntRange(min=option.minimum) if option.minimum is not None else click.INT
    elif option.takes == "number":
        settings["type"] = click.FloatRange(min=option.minimum) if option.minimum is not None else click.FLOAT
    if option.show_default:
        settings.update(default=option.word(default), show_default=True)  # as its word: 300, not 300.0

    def convert(context: click.Context, parameter: click.Parameter, value: Any) -> Any:
        if context.get_parameter_source(name) is ParameterSource.DEFAULT:
            return value
        if option.takes == "flag":
            return not default  # the flag turns the option from its default
        if option.takes == "pairs":
            value = key_value_pairs(context, parameter, value)
        if option.takes == "number" and (refusal := not_a_number(value)):
            raise click.BadParameter(refusal, ctx=context, param=parameter)
        try:
            return option.normalize(value) if option.normalize else value
        except ValueError as error:
            raise click.BadParameter(str(error), ctx=context, param=parameter) from None

    return click.option(flag_of(options, name), name, callback=convert, **settings)


def echo_json(document: Any, file: Any = None) -> None:
    click.echo(json.dumps(document, indent=2, default=str), file=file)


def interrupt_on_termination() -> dict[int, Any]:
    """SIGTERM and SIGHUP (the terminal closed) stop the command as Ctrl-C does, by a KeyboardInterrupt naming the
    signal: what it was doing is cleaned up (a run's processes, a half-packed source's temporary file, a multipart
    upload) and said, instead of smtrain dying without a word. Returns the handlers it replaced."""
    import signal

    def interrupt(signum: int, frame: Any) -> None:
        # imported when a signal comes: `plan` and `validate` import nothing of the emulator (tests/cli/test_cli.py)
        from orchestrator.emulator.supervising.interruption import interruption

        raise interruption(signum)

    return {signum: signal.signal(signum, interrupt) for signum in (signal.SIGTERM, signal.SIGHUP)}


@contextlib.contextmanager
def terminations_interrupt() -> Iterator[None]:
    """`interrupt_on_termination` while the block runs (packing and uploading a source), the earlier handlers
    after it."""
    import signal

    replaced = interrupt_on_termination()
    try:
        yield
    finally:
        for signum, handler in replaced.items():
            signal.signal(signum, handler)
