"""Names that become paths and files smtrain writes: nothing lands outside the run directory."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml
from forked import smtrain

from orchestrator.contract import RUN_MARKER_FILE
from orchestrator.emulator.preparing.layout import LOCK_FILE, open_run_directory, write_result
from orchestrator.emulator.supervising.status import STOP_FILE, request_stop
from orchestrator.errors import SpecError
from orchestrator.specs.path_names import require_path_name

pytestmark = pytest.mark.hardening


def _spec(tmp_path: Path, **extra) -> Path:
    (tmp_path / "train.py").write_text("print('ran')\n")
    document = {"name": "hard", "entry_point": "train.py", "framework_version": "2.3.0",
                "instance": {"type": "ml.c5.2xlarge", "count": 1}, "max_run_seconds": 600, **extra}
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def _smtrain(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return smtrain(*args, cwd=cwd, timeout=300)


@pytest.mark.parametrize("name", ["<tmp>/escaped", "..", ".", "a/b", "x" * 300])
def test_an_input_name_that_is_not_one_folder_name_is_refused_before_anything_is_written(tmp_path, name):
    name = name.replace("<tmp>", str(tmp_path))  # an absolute name, kept inside the test's folder
    spec = _spec(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "resourceconfig.json").write_text("planted")
    result = _smtrain("local", str(spec), "--input", f"{name}=./data", "--run-dir", "run", cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "--input NAME=PATH" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "run").exists() and not (tmp_path / "escaped").exists()


@pytest.mark.parametrize("name", ["..", "."])
def test_a_spec_channel_named_dot_or_dot_dot_is_refused_naming_the_field(tmp_path, name):
    spec = _spec(tmp_path, inputs={name: {"uri": "s3://bucket/prefix"}})
    result = _smtrain("validate", str(spec), cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "channel name" in result.stdout + result.stderr and "Traceback" not in result.stderr


def test_the_checker_names_the_field_and_keeps_a_plain_name():
    assert require_path_name("inputs", "train.v2-a_b") == "train.v2-a_b"
    with pytest.raises(SpecError, match="tuning folder"):
        require_path_name("tuning folder", "../x")


def _reused_run(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    (run / RUN_MARKER_FILE).write_text("smtrain local run directory\n")
    return run


@pytest.mark.parametrize("planted", [LOCK_FILE, "etc-hosts", "status.tmp", ".result.json.partial",
                                     ".model.tar.gz.partial", ".output.tar.gz.partial", "checkpoints-s3"])
def test_a_reused_run_directory_holding_a_planted_link_is_refused_and_the_target_kept(tmp_path, planted):
    run = _reused_run(tmp_path)
    outside = tmp_path / "outside"
    outside.write_text("the user's file\n")
    (run / planted).symlink_to(outside)
    with pytest.raises(SpecError, match="link"):
        open_run_directory(run)
    assert outside.read_text() == "the user's file\n"


def test_a_link_deep_in_the_kept_checkpoint_prefix_is_refused(tmp_path):
    run = _reused_run(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    (run / "checkpoints-s3" / "step").mkdir(parents=True)
    (run / "checkpoints-s3" / "step" / "model.pt").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(SpecError, match="checkpoints-s3/step/model.pt"):
        open_run_directory(run)


def test_smtrain_writes_no_file_through_a_link_that_appears_after_the_check(tmp_path):
    run = _reused_run(tmp_path)
    outside = tmp_path / "outside"
    outside.write_text("the user's file\n")
    (run / ".result.json.partial").symlink_to(outside)
    with pytest.raises(OSError):
        write_result(run, {"status": "Completed"})
    assert outside.read_text() == "the user's file\n"


def test_a_stop_request_is_not_written_through_a_planted_link(tmp_path):
    run = _reused_run(tmp_path)
    outside = tmp_path / "outside"
    outside.write_text("the user's file\n")
    (run / STOP_FILE).symlink_to(outside)
    with pytest.raises(SpecError, match="link"):
        request_stop(run)
    assert outside.read_text() == "the user's file\n"
