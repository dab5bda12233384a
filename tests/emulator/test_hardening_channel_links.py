"""Links in a local channel folder: a host's copy never writes through to outside the channel, and a
link inside the channel reads the copy's file, as an upload to S3 and the download SageMaker makes would give."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from deep_trees import nested_folders

from orchestrator.emulator.preparing.channels import copy_tree

pytestmark = pytest.mark.hardening


def _no_run_directories(_directory: str, _names: list[str]) -> set[str]:
    return set()


def _channel(tmp_path: Path) -> Path:
    outside = tmp_path / "outside.txt"
    outside.write_text("the user's file\n")
    data = tmp_path / "data"
    (data / "sub").mkdir(parents=True)
    (data / "real.txt").write_text("inside\n")
    (data / "absolute").symlink_to(outside)
    (data / "sub" / "relative").symlink_to("../real.txt")
    (data / "sub" / "up").symlink_to("..")
    (data / "dangling").symlink_to(tmp_path / "missing")
    return data


def test_a_copy_holds_no_link_to_outside_and_inside_links_read_the_copy(tmp_path):
    copy = tmp_path / "copy"
    copy_tree(_channel(tmp_path), copy, _no_run_directories)
    assert not (copy / "absolute").is_symlink() and (copy / "absolute").read_text() == "the user's file\n"
    assert os.readlink(copy / "sub" / "relative") == "../real.txt"
    (copy / "real.txt").write_text("changed in the copy\n")
    assert (copy / "sub" / "relative").read_text() == "changed in the copy\n"  # the copy's, not the user's
    assert (tmp_path / "data" / "real.txt").read_text() == "inside\n"
    assert (copy / "sub" / "up").resolve() == copy.resolve()
    assert not os.path.lexists(copy / "dangling")
    (copy / "absolute").write_text("written by the job\n")
    assert (tmp_path / "outside.txt").read_text() == "the user's file\n"


@pytest.mark.slow
def test_a_job_writing_to_its_channel_copy_leaves_the_users_file_and_reads_inside_links(tmp_path):
    _channel(tmp_path)
    job = tmp_path / "job"  # the spec's folder is its source_dir: the channel lives beside it
    job.mkdir()
    (job / "train.py").write_text(textwrap.dedent("""
        import json, os
        channel = os.environ["SM_CHANNEL_TRAIN"]
        with open(os.path.join(channel, "absolute"), "a") as handle:
            handle.write("written by the job\\n")
        print(json.dumps({"relative": open(os.path.join(channel, "sub", "relative")).read()}))
    """))
    spec = job / "spec.yaml"
    spec.write_text(yaml.safe_dump({"name": "links", "entry_point": "train.py", "framework_version": "2.3.0",
                                    "instance": {"type": "ml.c5.2xlarge", "count": 1}, "max_run_seconds": 600}))
    result = subprocess.run([sys.executable, "-m", "orchestrator", "local", str(spec), "--input",
                             f"train={tmp_path / 'data'}", "--run-dir", str(tmp_path / "run")],
                            capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "outside.txt").read_text() == "the user's file\n"
    log = (tmp_path / "run" / "logs" / "algo-1.log").read_text()
    assert json.dumps({"relative": "inside\n"}) in log


def _local_with_input(tmp_path: Path, train: object) -> subprocess.CompletedProcess:
    """`smtrain local` of a one-host job whose `train` input is `train`, from the job's folder."""
    job = tmp_path / "job"
    job.mkdir()
    (job / "train.py").write_text("print('ran')\n")
    spec = job / "spec.yaml"
    spec.write_text(yaml.safe_dump({"name": "inputs", "entry_point": "train.py", "framework_version": "2.3.0",
                                    "instance": {"type": "ml.c5.2xlarge", "count": 1}, "max_run_seconds": 600,
                                    "inputs": {"train": train}}))
    return subprocess.run([sys.executable, "-m", "orchestrator", "local", str(spec), "--run-dir",
                           str(tmp_path / "run")], capture_output=True, text=True, timeout=300, cwd=job, check=False)


def test_a_gzip_pipe_channel_over_plain_files_is_refused_before_the_run(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "rows.csv").write_text("a,b\n" * 10)
    result = _local_with_input(tmp_path, {"uri": str(data), "input_mode": "Pipe", "compression": "Gzip"})
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"{data / 'rows.csv'} is not gzip data" in result.stderr and "Traceback" not in result.stderr


def test_a_channel_folder_nested_deeper_than_any_s3_key_is_refused_before_the_run(tmp_path):
    """Copying a local channel walks it recursively: 1,200 folders deep it died with a RecursionError."""
    with nested_folders(tmp_path / "data") as data:
        result = _local_with_input(tmp_path, str(data))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "input train: " in result.stderr and "nests folders more than 512 deep (a/...)" in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "run").exists()
