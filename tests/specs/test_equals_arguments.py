"""A script that reads its settings only as `--key=value` (nanoGPT's configurator.py) is told apart before the job
runs: SageMaker passes each hyperparameter as two arguments, which it refuses at the first. equals_scripts/ holds
such a script written for these tests (SOURCE there), beside the documented wrapper of examples/nanogpt/."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from orchestrator.specs.equals_arguments import EqualsReader, equals_reader
from orchestrator.specs.loader import from_mapping

SCRIPTS = Path(__file__).resolve().parent / "equals_scripts"
WRAPPER = Path(__file__).resolve().parents[1] / "examples" / "nanogpt" / "sagemaker_args.py"
EXEC_LINE = 8
"""The line of equals_scripts/train.py that runs its configurator."""
SPEC = {"name": "nanogpt", "entry_point": "train.py", "framework_version": "2.10.0",
        "instance": {"type": "ml.g5.2xlarge", "count": 1}, "distribution": {"mode": "none"}}


@pytest.fixture
def scripts(tmp_path: Path) -> Path:
    """train.py, its configurator.py and the wrapper as the source dir `src`."""
    shutil.copytree(SCRIPTS, tmp_path / "src", ignore=shutil.ignore_patterns("SOURCE"))
    shutil.copy(WRAPPER, tmp_path / "src")
    return tmp_path / "src"


def _findings(source: Path, **fields) -> dict[str, tuple[str, str, str]]:
    loaded = from_mapping({**SPEC, "source_dir": str(source), **fields}, base_dir=source.parent)
    return {finding.rule: (finding.severity, finding.message, finding.fix) for finding in loaded.findings}


def test_a_script_reads_through_the_configurator_it_runs(scripts):
    assert equals_reader(scripts, "train.py") == EqualsReader("configurator.py", EXEC_LINE)


def test_a_reader_run_by_a_joined_path_or_the_entry_point_itself_is_found(tmp_path):
    (tmp_path / "nanochat").mkdir()
    shutil.copy(SCRIPTS / "configurator.py", tmp_path / "nanochat" / "configurator.py")
    (tmp_path / "base_train.py").write_text(
        "import os\nexec(open(os.path.join('nanochat', 'configurator.py')).read())\n")
    (tmp_path / "inline.py").write_text("import sys\nfor arg in sys.argv[1:]:\n    if '=' not in arg:\n"
                                        "        raise SystemExit(arg)\n    key, val = arg.split('=')\n")
    assert equals_reader(tmp_path, "base_train.py") == EqualsReader("nanochat/configurator.py", 2)
    assert equals_reader(tmp_path, "inline.py") == EqualsReader("inline.py", 3)


def test_the_wrapper_and_an_argparse_script_read_pairs(scripts, tmp_path):
    (tmp_path / "argparse_train.py").write_text(
        "import argparse\nparser = argparse.ArgumentParser()\nparser.add_argument('--lr')\n"
        "key, value = 'a=b'.split('=')\n")
    assert equals_reader(scripts, "sagemaker_args.py") is None
    assert equals_reader(tmp_path, "argparse_train.py") is None


@pytest.mark.hardening
def test_only_regular_files_inside_the_source_dir_are_read(tmp_path):
    """A FIFO would hold validate forever; a path out of the source dir is not the job's."""
    source = tmp_path / "src"
    source.mkdir()
    shutil.copy(SCRIPTS / "configurator.py", tmp_path / "configurator.py")
    (source / "outside.py").write_text("exec(open('../configurator.py').read())\n")
    os.mkfifo(source / "configurator.py")
    (source / "fifo.py").write_text("exec(open('configurator.py').read())\n")
    os.mkfifo(source / "train.py")
    assert equals_reader(source, "outside.py") is None
    assert equals_reader(source, "fifo.py") is None
    assert equals_reader(source, "train.py") is None


def test_validate_warns_with_the_first_argument_sagemaker_passes_and_the_fix(scripts):
    found = _findings(scripts, hyperparameters={"n_layer": 1, "batch_size": 4})
    severity, message, fix = found["hyperparameters-as-two-arguments"]
    assert severity == "warning"
    assert message == ("train.py reads its settings only as `--key=value`, one argument each (in configurator.py, "
                       f"run at train.py:{EXEC_LINE}, as nanoGPT's configurator.py reads them), but SageMaker passes "
                       "each hyperparameter as two, `--batch_size 4`: the job stops at the first with a bare "
                       "AssertionError")
    assert "wrapper" in fix and "docs/bring-your-own-script.md#scripts-that-read-only---keyvalue" in fix


def test_no_warning_without_hyperparameters_or_through_the_wrapper(scripts):
    assert "hyperparameters-as-two-arguments" not in _findings(scripts)
    assert "hyperparameters-as-two-arguments" not in _findings(scripts, entry_point="sagemaker_args.py",
                                                               hyperparameters={"n_layer": 1})
