"""A requirements.txt pin that replaces a package the image ships (`torch==2.3.0` in the PyTorch 2.10.0 image) is
a warning from validate before anything runs: the toolkit's pip install would swap the image's torch for the
package index's on every host at every start. A pin the image already satisfies is none."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from forked import smtrain

from orchestrator.cli.main import main

REPO = Path(__file__).resolve().parents[2]

SPEC = ("name: mine\nentry_point: train.py\nsource_dir: src\nframework_version: '2.10.0'\n"
        "instance: {type: ml.g5.xlarge, count: 1}\n")


def _validate(tmp_path, monkeypatch, requirements: str, spec: str = SPEC) -> str:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text("print('loss=1.0')\n")
    (tmp_path / "src" / "requirements.txt").write_text(requirements)
    (tmp_path / "job.yaml").write_text(spec)
    result = CliRunner().invoke(main, ["validate", "job.yaml"], terminal_width=400)
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


def test_a_torch_pin_other_than_the_images_is_a_warning_at_its_line(tmp_path, monkeypatch):
    said = _validate(tmp_path, monkeypatch, "tqdm>=4.60\ntorch==2.3.0  # what my laptop has\nnumpy\n")

    assert ("WARNING: job.yaml:3:1: source_dir: src/requirements.txt:2 pins torch==2.3.0, but the PyTorch 2.10.0 "
            "image ships torch 2.10.0: the toolkit's pip install replaces the image's build") in said, said
    assert "fix: drop the pin to use the image's torch 2.10.0, or set framework_version" in said


def test_a_pin_of_another_package_the_image_pins_is_a_warning_too(tmp_path, monkeypatch):
    said = _validate(tmp_path, monkeypatch, "TorchVision==0.18.0\n")  # any spelling of its name

    assert "pins TorchVision==0.18.0, but the PyTorch 2.10.0 image ships torchvision 0.25.0" in said, said


@pytest.mark.parametrize("requirements", [
    "torch==2.10\n",                    # pip's == pads with zeros: 2.10 is 2.10.0
    "torchvision==0.25.*\n",            # the image's 0.25.0
    "torch>=2.0\ntorch\n",              # satisfied by the image: pip changes nothing
    "# torch==2.3.0\n",                 # a comment
    "numpy==1.26.4\n",                  # not one the image pins
])
def test_a_requirement_the_image_satisfies_is_no_warning(tmp_path, monkeypatch, requirements):
    assert "requirements.txt" not in _validate(tmp_path, monkeypatch, requirements)


def test_a_custom_image_is_not_judged_by_the_pytorch_images_versions(tmp_path, monkeypatch):
    spec = SPEC.replace("framework_version: '2.10.0'",
                        "image_uri: 123456789012.dkr.ecr.us-east-1.amazonaws.com/mine:latest")
    assert "requirements.txt" not in _validate(tmp_path, monkeypatch, "torch==2.3.0\n", spec)


@pytest.mark.hardening
@pytest.mark.parametrize("kind", ["fifo", "link to /dev/zero"])
def test_a_requirements_txt_that_is_no_file_is_never_read(tmp_path, kind):
    """validate reads requirements.txt for its pins only as source_files reads a script: a FIFO would hold it
    forever (the forked call's time limit ends it), /dev/zero would fill its memory (capped at 1 GB here)."""
    source = tmp_path / "src"
    source.mkdir()
    (source / "train.py").write_text("print('loss=1.0')\n")
    if kind == "fifo":
        os.mkfifo(source / "requirements.txt")
    else:
        (source / "requirements.txt").symlink_to("/dev/zero")
    (tmp_path / "job.yaml").write_text(SPEC)

    result = smtrain("validate", str(tmp_path / "job.yaml"), cwd=REPO, memory_limit_bytes=1 << 30, timeout=120)

    assert result.returncode == 0, result.stdout + result.stderr
    assert "requirements.txt" not in result.stdout
