"""A completed job that left SM_MODEL_DIR empty is told so, with what it wrote in its working directory instead:
SageMaker completes such a job without a word, with no model to deploy (nanoGPT's checkpoint goes to out/ under
/opt/ml/code)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from orchestrator.emulator.reporting.empty_model import empty_model_notice


def _hosts(tmp_path: Path, count: int) -> SimpleNamespace:
    """The part of a run's layout the notice reads: each host's model and code folders, the source unpacked."""
    hosts = []
    for index in range(1, count + 1):
        folder = tmp_path / f"algo-{index}"
        host = SimpleNamespace(model_dir=folder / "model", code_dir=folder / "code")
        host.model_dir.mkdir(parents=True)
        (host.code_dir / "__pycache__").mkdir(parents=True)
        (host.code_dir / "train.py").write_text("")
        (host.code_dir / "__pycache__" / "model.cpython-311.pyc").write_text("")
        hosts.append(host)
    return SimpleNamespace(hosts=hosts)


def test_an_empty_model_dir_is_told_with_the_files_left_in_the_working_directory(tmp_path):
    layout = _hosts(tmp_path, 2)
    (layout.hosts[0].code_dir / "out").mkdir()
    (layout.hosts[0].code_dir / "out" / "ckpt.pt").write_bytes(b"weights")

    said = empty_model_notice(layout, ["train.py"])

    assert said.startswith("model: the job completed with nothing in SM_MODEL_DIR (/opt/ml/model) on any host, so its "
                           "model.tar.gz holds no model, here as on SageMaker, which completes such a job without a "
                           "word; it wrote out/ckpt.pt in its working directory (/opt/ml/code), which SageMaker discards")
    assert "`out_dir: /opt/ml/model`" in said


def test_an_empty_model_dir_alone_is_told_without_files(tmp_path):
    said = empty_model_notice(_hosts(tmp_path, 1), ["train.py"])
    assert said.endswith("which completes such a job without a word")


def test_a_model_file_on_any_host_is_enough(tmp_path):
    layout = _hosts(tmp_path, 2)
    (layout.hosts[1].model_dir / "nested").mkdir()
    (layout.hosts[1].model_dir / "nested" / "model.pth").write_bytes(b"weights")
    assert empty_model_notice(layout, ["train.py"]) is None
