"""`smtrain local`'s flags, the API's keywords and `tune local`'s trial command line all come from one declaration
(emulator/run_options.py): every declared option is a flag and a keyword, and both give the run the same Options."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import orchestrator
import orchestrator.backends.local as local_backend
import orchestrator.cli.local as local_command
import orchestrator.emulator.local_run as local_run
from orchestrator.cli.main import main
from orchestrator.emulator.run_options import Options, command_words, declarations, default_of, flag_of
from orchestrator.errors import SpecError

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "job_specs" / "mlp-gloo-none-2x-c5.2xlarge.yaml"
BODY_LINES = 40


class _Captured(Exception):
    """Raised where the run would start: the options it would run with, and nothing started."""

    def __init__(self, options: Options) -> None:
        super().__init__("captured")
        self.options = options


def _sample(name: str, tmp_path: Path) -> object:
    """A value unlike the default for each declared option, from what the declaration says it takes (a word:
    `true`, a host name to a host option and a command on PATH to --python, which resolves it)."""
    option = declarations()[name]
    return {"int": int(option.minimum or 0) + 2, "number": (option.minimum or 0) + 2.5,
            "flag": not default_of(name), "text": "true", "directory": tmp_path / "run",
            "pairs": {"train": tmp_path / "data"}}[option.takes]


def _local_parameters() -> dict[str, click.Option]:
    command = main.get_command(click.Context(main), "local")
    return {flag: parameter for parameter in command.params if isinstance(parameter, click.Option)
            for flag in parameter.opts}


def test_every_declared_option_is_a_flag_of_smtrain_local_as_declared():
    flags = _local_parameters()
    for name, option in declarations().items():
        parameter = flags.get(flag_of(name))
        assert parameter is not None, f"{name} is declared but `smtrain local` has no {flag_of(name)}"
        assert (parameter.name, parameter.help, parameter.hidden) == (name, option.help, option.hidden)
        assert parameter.metavar == option.metavar
        if option.minimum is not None:
            assert parameter.type.min == option.minimum, name


def test_the_api_and_the_command_line_give_a_run_the_same_options_for_every_declared_option(tmp_path, monkeypatch):
    keywords = {name: _sample(name, tmp_path) for name in declarations()}
    keywords["smoke_steps"] = 3  # needs smoke_seconds, given too

    def capture_backend(self, options):
        raise _Captured(options)

    monkeypatch.setattr(local_backend.LocalBackend, "__init__", capture_backend)
    with pytest.raises(_Captured) as through_api:
        orchestrator.run(EXAMPLE, backend="local", **keywords)
    from_api = through_api.value.options
    assert all(getattr(from_api, name) != default_of(name) for name in declarations()), from_api

    def capture_run(loaded, options, *args, **kwargs):
        raise _Captured(options)

    monkeypatch.setattr(local_run, "run_local", capture_run)
    monkeypatch.setattr(local_command, "interrupt_on_termination", lambda: {})
    words = command_words(from_api)
    result = CliRunner().invoke(main, ["local", str(EXAMPLE), "-q", *words])
    assert isinstance(result.exception, _Captured), result.output
    assert result.exception.options == from_api
    assert sorted({word for word in words if word.startswith("--")}) == sorted(flag_of(name) for name in declarations())


def test_an_unknown_or_out_of_range_keyword_is_refused_before_anything_starts(tmp_path):
    with pytest.raises(SpecError, match="no option 'run_dirr'") as unknown:
        orchestrator.run(EXAMPLE, backend="local", run_dirr=tmp_path)
    assert "did you mean `run_dir`?" in str(unknown.value)
    with pytest.raises(SpecError, match="processes_per_host=0 is below its minimum 1"):
        orchestrator.run(EXAMPLE, backend="local", processes_per_host=0)
    with pytest.raises(SpecError, match="is not an integer"):
        orchestrator.run(EXAMPLE, backend="local", processes_per_host="2")
    with pytest.raises(SpecError, match="is not a mapping"):
        orchestrator.run(EXAMPLE, backend="local", inputs="train=./data")
    with pytest.raises(SpecError, match="smoke_steps needs smoke_seconds"):
        orchestrator.run(EXAMPLE, backend="local", smoke_steps=3)
    with pytest.raises(SpecError, match="takes no local run options: run_dir"):
        orchestrator.run(EXAMPLE, backend="sagemaker", run_dir=tmp_path)
    assert not (tmp_path / "run").exists()


def test_a_keyword_is_normalized_as_its_flag_is():
    from orchestrator.emulator.run_options import options_from

    options = options_from({"host_order": "algo-2,algo-1", "stall_timeout_seconds": 0, "inputs": {"train": "d"},
                            "python": Path(sys.executable).name})
    assert options.host_order == ("algo-2", "algo-1") and options.stall_timeout_seconds is None
    assert options.inputs == {"train": Path("d")} and Path(options.python).is_absolute()


def test_the_local_command_body_stays_short():
    """Its options arrive as one Options: the body only loads, runs and reports."""
    tree = ast.parse(Path(local_command.__file__).read_text())
    [function] = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "local"]
    first = function.body[1] if ast.get_docstring(function) else function.body[0]
    lines = function.end_lineno - first.lineno + 1
    assert lines < BODY_LINES, f"`local`'s body is {lines} lines"
    assert [argument.arg for argument in function.args.args] == [
        "file", "overrides", "options", "verbose", "quiet", "hyperparameters_file", "output"]


def test_tune_local_hands_every_trial_the_shared_options_as_declared():
    from orchestrator.cli.tune import TRIAL_OPTIONS, tune

    command = tune.get_command(click.Context(tune), "local")
    flags = {flag: parameter for parameter in command.params for flag in parameter.opts}
    for name in TRIAL_OPTIONS:
        assert flags[flag_of(name)].help == declarations()[name].help
    assert flags["--run-dir"].name == "run_dir" and "trials" in flags["--run-dir"].help  # the search's own


def test_tune_local_takes_cpus_for_every_trial(monkeypatch):
    """docs/tuning.md: the trials at once share the cores, `--cpus` cores / `--parallel`, unless --cpus is given."""
    import orchestrator.emulator.tuning.search as search

    def capture(loaded, options, on_event=None):
        raise _Captured(options.trial)

    monkeypatch.setattr(search, "tune_local", capture)
    result = CliRunner().invoke(main, ["tune", "local", str(REPO / "job_specs" / "tuning" / "mlp-lr-search.yaml"),
                                       "--cpus", "3"])

    assert isinstance(result.exception, _Captured), result.output
    assert result.exception.options.cpus == 3
