"""What `orchestrator.load_spec` returns keeps the places it was read at: an error about it later (plan refusing a
local channel, a region named with `region=`) and the plan's sources name its file and line as the CLI's do.
Before, the API wrapped it as a spec built in Python: `error: inputs.train: ...`, no file, no line."""

from __future__ import annotations

import gc
import json

import pytest
from click.testing import CliRunner

import orchestrator
from orchestrator.cli.main import main
from orchestrator.errors import SpecError
from orchestrator.specs import loader


@pytest.fixture
def local_channel_spec(write_spec, tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    (tmp_path / "data").mkdir()
    return write_spec(inputs={"train": "./data"})


def test_plan_of_what_load_spec_returned_names_the_file_and_line_as_the_cli_does(local_channel_spec):
    cli = CliRunner().invoke(main, ["plan", str(local_channel_spec)])

    with pytest.raises(SpecError) as raised:
        orchestrator.plan(orchestrator.load_spec(str(local_channel_spec)))

    assert f"{local_channel_spec}:" in str(raised.value) and ": inputs.train: error: " in str(raised.value)
    in_api_words = "inputs={'train': '<local path>'} overrides it for one run"  # a local run's input, as each gives it
    assert in_api_words in str(raised.value)
    assert cli.exit_code == 2 and cli.stderr == "Error: {}\n".format(str(raised.value).replace(
        in_api_words, "--input train=<local path> overrides it for one run"))


def test_the_plan_s_sources_name_the_file_s_lines_as_smtrain_plan_s_do(write_spec, monkeypatch):
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    spec = str(write_spec())
    cli = json.loads(CliRunner().invoke(main, ["plan", spec, "-o", "json"]).stdout)["sources"]

    sources = orchestrator.plan(orchestrator.load_spec(spec)).sources

    assert sources["instance.count"].to_dict() == cli["instance.count"]
    assert cli["instance.count"]["where"].startswith(f"{spec}:")


def test_a_place_is_kept_only_while_the_spec_lives(write_spec):
    spec = orchestrator.load_spec(write_spec())
    assert loader.as_read(spec).path is not None
    assert loader.as_read(spec.model_copy(update={"name": "changed"})) is None  # changed: no longer the file's

    key = id(spec)
    del spec
    gc.collect()
    assert key not in loader._READINGS  # not a count of them all: another test's specs may die in this collection
