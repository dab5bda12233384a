"""A prepared run is what preparation made, unchanged afterwards: installing the user's code gives a new one,
and what changes while the run goes (status.json) lives with the run, not on it."""

from __future__ import annotations

import dataclasses

import pytest
import yaml

from orchestrator.emulator.local_plan import local_plan
from orchestrator.emulator.preparing.prepared_run import PreparedRun, prepare_run
from orchestrator.emulator.run_options import Options
from orchestrator.specs.loader import load


def test_preparation_makes_a_run_no_module_can_change_afterwards(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text("print(1)\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({"name": "frozen", "entry_point": "train.py", "source_dir": "src",
                                    "framework_version": "2.3.0", "instance": {"type": "ml.c5.2xlarge"},
                                    "metrics": []}))
    settings = Options(run_dir=tmp_path / "run")
    prepared = prepare_run(local_plan(load(spec), settings), settings)

    with pytest.raises(dataclasses.FrozenInstanceError):
        prepared.overlay = None  # type: ignore[misc]
    assert "report" not in {item.name for item in dataclasses.fields(PreparedRun)}

    installed = prepared.with_user_code_installed(print)
    assert installed is not prepared and installed.overlay is None  # no requirements.txt: nothing to install
    assert dataclasses.replace(installed, overlay=prepared.overlay) == prepared
