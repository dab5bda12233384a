"""A local run's refusals name the option the way its user gave it: `smtrain local`'s flag on the command line
(`--master-host algo-9`), the keyword from Python (`master_host='algo-9'`), each worded once at its source
through the option's declaration (`FieldWords.option` over `run_options.Options`). Each message is checked through
both: the CLI (`smtrain local`) and the API (`orchestrator.run(..., backend="local")`)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from click.testing import CliRunner

import orchestrator
from orchestrator.cli.main import main
from orchestrator.emulator.run_options import Options
from orchestrator.errors import SmtrainError
from orchestrator.specs.loader import LoadedSpec, load
from orchestrator.specs.words import API_WORDS, SPEC_WORDS


def _spec(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir(exist_ok=True)
    (tmp_path / "src" / "train.py").write_text("print('trained')\n")
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump({
        "name": "words", "entry_point": "train.py", "source_dir": "src", "framework_version": "2.10.0",
        "instance": {"type": "ml.c5.2xlarge", "count": 2}}))
    return path


def _cli(*args: str) -> str:
    """What `smtrain local` says when it refuses (exit 2)."""
    result = CliRunner().invoke(main, ["local", *args])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    return " ".join(result.output.split())  # one line, however the console wrapped it


def _api(spec: Path | LoadedSpec, **options) -> str:
    """What `orchestrator.run(spec, backend="local", ...)` raises, from the call or from the job it returned."""
    with pytest.raises(SmtrainError) as raised:
        orchestrator.run(spec, backend="local", **options).wait(poll_seconds=0.05)
    return str(raised.value)


def test_an_option_is_worded_as_the_command_line_gives_it_or_as_python_does():
    assert SPEC_WORDS.option(Options, "master_host", "algo-9") == "--master-host algo-9"
    assert API_WORDS.option(Options, "master_host", "algo-9") == "master_host='algo-9'"
    assert SPEC_WORDS.option(Options, "run_dir") == "--run-dir"
    assert API_WORDS.option(Options, "run_dir", Path("/r")) == "run_dir='/r'"
    assert SPEC_WORDS.option(Options, "inputs", ("train", "./data")) == "--input train=./data"
    assert API_WORDS.option(Options, "inputs", ("train", "./data")) == "inputs={'train': './data'}"
    for words in (SPEC_WORDS, API_WORDS):  # said below the run's options, by a plan, as the declaration says it
        assert words.one_run_input("train") == words.option(Options, "inputs", ("train", "<local path>"))
    assert SPEC_WORDS.option(Options, "smoke_seconds", 60) == "--smoke 60"
    assert SPEC_WORDS.option(Options, "gpu_standin") == "--no-gpu-standin"
    assert API_WORDS.option(Options, "gpu_standin") == "gpu_standin=False"
    assert SPEC_WORDS.option(Options, "host_order", ("algo-2", "algo-1")) == "--host-order algo-2,algo-1"


def test_a_local_path_as_a_channel_is_refused_by_plan_naming_a_local_run_s_input_as_its_user_gives_it(tmp_path,
                                                                                                     monkeypatch):
    """Before, `orchestrator.plan` told a Python caller that `--input train=PATH` overrides the folder for one
    run."""
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    spec = _spec(tmp_path)
    (tmp_path / "data").mkdir()
    spec.write_text(yaml.safe_dump({**yaml.safe_load(spec.read_text()), "inputs": {"train": "data"}}))

    with pytest.raises(SmtrainError) as refused:
        orchestrator.plan(spec)
    planned = CliRunner().invoke(main, ["plan", str(spec)])

    assert "inputs={'train': '<local path>'} overrides it for one run" in str(refused.value)
    assert "--input" not in str(refused.value)
    assert planned.exit_code == 2
    assert "--input train=<local path> overrides it for one run" in " ".join(planned.output.split())


def test_a_master_host_that_is_no_host_of_the_job(tmp_path):
    spec = _spec(tmp_path)
    said = "is not a host of this job, which has algo-1, algo-2 To fix: name one of algo-1, algo-2 as"

    assert f"--master-host algo-9 {said} --master-host" in _cli(str(spec), "--master-host", "algo-9")
    assert _api(spec, master_host="algo-9") == (
        f"master_host='algo-9' {said.replace(' To fix', chr(10) + '  To fix')} master_host=")


def test_a_host_order_that_orders_no_hosts_of_the_job(tmp_path):
    spec = _spec(tmp_path)

    assert "at most once in --host-order" in _cli(str(spec), "--host-order", "algo-3,algo-1")
    assert _api(spec, host_order="algo-3,algo-1").endswith("at most once in host_order=")


def test_a_local_input_that_does_not_exist(tmp_path):
    spec = _spec(tmp_path)

    assert "To fix: pass --input train=<local path>" in _cli(str(spec), "--input", "train=/nonexistent")
    assert _api(spec, inputs={"train": "/nonexistent"}).endswith("To fix: pass inputs={'train': '<local path>'}")


def test_a_local_input_whose_name_is_no_folder_name(tmp_path):
    spec = _spec(tmp_path)

    assert "--input NAME=PATH: the name '..'" in _cli(str(spec), "--input", "..=/tmp")
    assert _api(spec, inputs={"..": "/tmp"}).startswith("inputs={'NAME': 'PATH'}: the name '..'")


def test_a_local_input_without_a_path_names_no_flag_from_python(tmp_path):
    spec = _spec(tmp_path)

    assert "channel 'train' has no path" in _cli(str(spec), "--input", "train=")
    said = _api(spec, inputs={"train": ""})
    assert said.startswith("inputs: channel 'train' has no path") and "--input" not in said


def test_a_run_directory_that_is_a_file(tmp_path):
    spec, taken = _spec(tmp_path), tmp_path / "taken"
    taken.write_text("not a directory")

    assert "Invalid value for '--run-dir'" in _cli(str(spec), "--run-dir", str(taken))  # click checks it first
    assert _api(spec, run_dir=taken) == (f"run_dir='{taken}' is a file\n"
                                         "  To fix: give a directory's path as run_dir=")


def test_a_run_directory_smtrain_did_not_make(tmp_path):
    spec, other = _spec(tmp_path), tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")

    assert (f"--run-dir {other} is not empty and is not a run directory smtrain made To fix: give a new or empty "
            "directory as --run-dir") in _cli(str(spec), "--run-dir", str(other))
    assert _api(spec, run_dir=other).startswith(f"run_dir='{other}' is not empty")
    assert "as run_dir=, or one an earlier local run wrote" in _api(spec, run_dir=other)


def test_an_interpreter_that_is_not_python(tmp_path):
    spec = _spec(tmp_path)

    cli = _cli(str(spec), "--run-dir", str(tmp_path / "cli"), "--python", "/bin/true")
    assert "/bin/true is not a Python interpreter" in cli and "e.g. --python python3" in cli
    said = _api(spec, run_dir=tmp_path / "api", python="/bin/true")
    assert "/bin/true is not a Python interpreter" in said and said.endswith("e.g. python='python3'")


def test_a_search_into_a_folder_of_another_search_names_run_dir_as_its_user_gives_it(tmp_path):
    """`smtrain tune local --run-dir` and `orchestrator.tune_local(..., SearchOptions(run_dir=...))`: the search's
    options are declared as a run's are (`search_options.SearchOptions`), so its refusals name them the same way
    (before: `--run-dir` from Python too)."""
    from orchestrator.emulator.tuning.search import SearchOptions

    search = _search(tmp_path)
    folder = tmp_path / "taken"
    folder.mkdir()
    (folder / "tuning.json").write_text('{"search_spec": "/elsewhere/other.yaml"}')

    result = CliRunner().invoke(main, ["tune", "local", str(search), "--run-dir", str(folder)])
    assert result.exit_code == 2, result.output
    assert "give another --run-dir to keep them" in " ".join(result.output.split())
    with pytest.raises(SmtrainError) as raised:
        orchestrator.tune_local(str(search), SearchOptions(run_dir=folder))
    assert "give another run_dir= to keep them" in str(raised.value)
    assert "--run-dir" not in str(raised.value)
    assert SPEC_WORDS.option(SearchOptions, "budget_seconds", 60) == "--budget 60"
    assert API_WORDS.option(SearchOptions, "max_jobs", 3) == "max_jobs=3"


def _search(tmp_path: Path) -> Path:
    """A tuning spec of the job `_spec` writes: one trial, random over lr."""
    job = _spec(tmp_path)
    search = tmp_path / "search.yaml"
    search.write_text(yaml.safe_dump({
        "job": job.name, "objective": {"metric": "train:loss", "type": "Minimize"}, "strategy": "Random",
        "parameters": {"lr": {"type": "continuous", "min": 0.001, "max": 0.1}}, "max_jobs": 1}))
    return search


def _searches(tmp_path: Path) -> tuple[Path, Path]:
    """A tuning spec of the job `_spec` writes, and a folder holding an earlier search of it with other settings."""
    search = _search(tmp_path)
    folder = tmp_path / "earlier"
    folder.mkdir()
    (folder / "tuning.json").write_text(json.dumps({"search_spec": str(search.resolve()), "settings": "other"}))
    return search, folder


def test_a_search_of_other_settings_names_the_overrides_as_its_user_gives_them(tmp_path):
    """The settings that differ include the job spec's overrides: `--set` on `smtrain tune local`, `overrides=`
    (of `load_tuning`) from Python, where no `--set` exists."""
    from orchestrator.emulator.tuning.search import SearchOptions

    search, folder = _searches(tmp_path)

    result = CliRunner().invoke(main, ["tune", "local", str(search), "--run-dir", str(folder)])
    assert result.exit_code == 2, result.output
    assert "objective or job spec, --set included, differ" in " ".join(result.output.split())
    with pytest.raises(SmtrainError) as raised:
        orchestrator.tune_local(str(search), SearchOptions(run_dir=folder))
    assert "objective or job spec, overrides= included, differ" in str(raised.value)
    assert "--set" not in str(raised.value)


def test_a_spec_loaded_for_the_command_line_is_told_in_the_apis_words(tmp_path):
    """What `specs.loader.load` returned (worded for the command line) given to the API is refused in the API's
    words, as the same spec by its path is; a function job's own words (its decorator's) are kept."""
    from orchestrator.function_jobs.function import KEYWORD_WORDS

    loaded = load(_spec(tmp_path))

    said = _api(loaded, master_host="algo-9")
    assert said.startswith("master_host='algo-9' is not a host of this job") and "--master-host" not in said
    assert orchestrator.api._loaded(loaded.in_words(KEYWORD_WORDS)).field_words == KEYWORD_WORDS


@pytest.mark.slow
def test_a_runs_notices_name_its_options_as_its_user_gives_them(tmp_path, monkeypatch, caplog):
    """The memory warning and the emulator's deviations of a run started from Python name `run`'s keywords
    (`processes_per_host=`, `instance.count` in the spec); `smtrain local` says its flags (`--processes-per-host`,
    `--set instance.count=N`), and `--explain` lists them so."""
    from orchestrator.emulator import local_run

    monkeypatch.setattr(local_run.psutil, "virtual_memory", lambda: SimpleNamespace(available=1e9))
    spec = _spec(tmp_path)

    result = CliRunner().invoke(main, ["local", str(spec), "--run-dir", str(tmp_path / "cli")])
    assert result.exit_code == 0, result.output
    assert "fewer ranks (--processes-per-host, --set instance.count=N) or" in " ".join(result.output.split())
    explained = CliRunner().invoke(main, ["local", str(spec), "--explain"]).output
    assert "(--processes-per-host overrides" in explained and "--no-gpu-standin leaves" in explained

    with caplog.at_level(logging.INFO, logger="orchestrator"):
        orchestrator.run(str(spec), backend="local", run_dir=tmp_path / "api").wait(poll_seconds=0.05)
    said = " ".join(record.getMessage() for record in caplog.records)
    assert "fewer ranks (processes_per_host=, `instance.count: N` in the spec) or" in said
    assert "(processes_per_host= overrides the process count)" in said and "gpu_standin=False leaves" in said
    assert "cpus= names how many cores" in said
    assert "--processes-per-host" not in said and "--set" not in said and "--cpus" not in said
