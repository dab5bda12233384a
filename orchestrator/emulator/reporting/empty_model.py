"""A job that ended with nothing in SM_MODEL_DIR on any host.

Completed: SageMaker completes it without a word and there is no model to deploy (aws/sagemaker-python-sdk#608,
#3455), so the first sign is a deployment that finds none. Scripts that save to a path of their own do this:
nanoGPT's train.py writes `out/ckpt.pt` under its working directory, /opt/ml/code, which SageMaker discards. Said
once, at the end of a completed run, with what the job wrote there instead.

Failed: SageMaker uploads model.tar.gz and output.tar.gz for a failed job too (aws/sagemaker-python-sdk#746, which
made its local mode do the same), and so does the run; the archive a failed run lists is then said to hold no
model, where a failure before the first save leaves it empty."""

from __future__ import annotations

from collections.abc import Collection

from orchestrator.contract import OPT_ML
from orchestrator.emulator.preparing.layout import RunLayout

_SHOWN = 3


def _model_saved(layout: RunLayout) -> bool:
    return any(path.is_file() for host in layout.hosts for path in host.model_dir.rglob("*"))


def failed_empty_model_notice(layout: RunLayout) -> str | None:
    """The notice for a failed run, or None when a host's model dir holds a file (the archive holds it, as a
    failed job's does on SageMaker)."""
    if _model_saved(layout):
        return None
    return (f"model: the job failed with nothing in SM_MODEL_DIR ({OPT_ML}/model) on any host, so its model.tar.gz "
            "holds no model; it is packed all the same, with output.tar.gz, as SageMaker uploads both for a failed "
            "job too")


def empty_model_notice(layout: RunLayout, source_files: Collection[str]) -> str | None:
    """The notice, or None when a host's model dir holds a file. `source_files` are the packed source's own files,
    which the working directory holds from the start."""
    if _model_saved(layout):
        return None
    written = sorted({path.relative_to(host.code_dir).as_posix() for host in layout.hosts
                      for path in host.code_dir.rglob("*")
                      if path.is_file() and "__pycache__" not in path.parts}
                     - set(source_files))
    elsewhere = ""
    if written:
        shown = ", ".join(written[:_SHOWN]) + (f" and {len(written) - _SHOWN} more" if len(written) > _SHOWN else "")
        elsewhere = (f"; it wrote {shown} in its working directory ({OPT_ML}/code), which SageMaker discards: "
                     "point the script's output path at SM_MODEL_DIR (read `os.environ['SM_MODEL_DIR']`, or pass it "
                     f"as a hyperparameter, e.g. `out_dir: {OPT_ML}/model` for nanoGPT's train.py)")
    return (f"model: the job completed with nothing in SM_MODEL_DIR ({OPT_ML}/model) on any host, so its model.tar.gz "
            f"holds no model, here as on SageMaker, which completes such a job without a word{elsewhere}")
