"""A completed job that left SM_MODEL_DIR empty is told so, with what it wrote in its working directory instead:
SageMaker completes such a job without a word, with no model to deploy (nanoGPT's checkpoint goes to out/ under
/opt/ml/code). A failed job's archives are packed as SageMaker uploads them, and an empty model said to be one."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from orchestrator.emulator.local_run import Options, run_local
from orchestrator.emulator.reporting.empty_model import empty_model_notice
from orchestrator.specs.loader import load


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


def test_a_failed_run_packs_its_archives_as_sagemaker_does_and_says_the_model_is_empty(make_spec, tmp_path,
                                                                                      notice_recorder):
    """SageMaker uploads model.tar.gz and output.tar.gz for a failed job too (aws/sagemaker-python-sdk#746); the
    run listed model.tar.gz for a job that failed before saving anything, without a word that it held no model."""
    spec = make_spec("failing.py", count=1)
    (tmp_path / "src" / "failing.py").write_text("import sys\nprint('loading data')\nsys.exit(3)\n")

    result = run_local(load(spec), Options(run_dir=tmp_path / "run"), notice_recorder)

    assert result.status == "Failed" and result.model_artifact is not None and result.output_artifact is not None
    assert ("model: the job failed with nothing in SM_MODEL_DIR (/opt/ml/model) on any host, so its model.tar.gz "
            "holds no model; it is packed all the same, with output.tar.gz, as SageMaker uploads both for a failed "
            "job too") in notice_recorder.notices
