"""TensorBoard and MLflow settings in `smtrain local`: what the script writes to the TensorBoard local path is kept
in the run directory (and `smtrain metrics` names it), and an MLflow configuration reaches the script as the MLflow
client's variables, pointing at a local store in the run directory."""

from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner

from orchestrator.cli.main import main
from orchestrator.emulator.local_run import Options, run_local
from orchestrator.specs.loader import load

SCRIPT = """import json, os, pathlib
board = pathlib.Path("/opt/ml/output/tensorboard")
if not board.parent.exists():  # no mount namespace here: the host's /opt/ml is SM_OUTPUT_DIR's parent
    board = pathlib.Path(os.environ["SM_OUTPUT_DIR"], "tensorboard")
board.mkdir(parents=True, exist_ok=True)
(board / "events.out.tfevents.1").write_bytes(b"event")
print("train_loss=0.5 epoch=1 step=1/1")
keys = ("MLFLOW_TRACKING_URI", "MLFLOW_EXPERIMENT_NAME", "MLFLOW_RUN_NAME")
pathlib.Path(os.environ["SM_MODEL_DIR"], "mlflow.json").write_text(json.dumps({k: os.environ.get(k) for k in keys}))
"""
MLFLOW_ARN = "arn:aws:sagemaker:us-east-1:123456789012:mlflow-tracking-server/team"


@pytest.mark.slow
def test_tensorboard_output_is_kept_and_mlflow_reaches_the_script(tmp_path, notice_recorder):
    source = tmp_path / "src"
    source.mkdir()
    (source / "train.py").write_text(SCRIPT)
    spec = {"name": "tracking", "entry_point": "train.py", "source_dir": "src", "framework_version": "2.3.0",
            "instance": {"type": "ml.c5.2xlarge", "count": 2}, "max_run_seconds": 600,
            "tensorboard": {"s3_uri": "s3://bucket/tb/"},
            "mlflow": {"tracking_server_arn": MLFLOW_ARN, "experiment_name": "exp-1", "run_name": "run-1"}}
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    result = run_local(load(path), Options(run_dir=tmp_path / "run"), notice_recorder)
    assert result.status == "Completed", result.failure_reason
    for host in ("algo-1", "algo-2"):
        assert (result.run_dir / "tensorboard" / host / "events.out.tfevents.1").read_bytes() == b"event"
        seen = json.loads((result.run_dir / host / "model" / "mlflow.json").read_text())
        assert seen == {"MLFLOW_TRACKING_URI": (result.run_dir / "mlruns").as_uri(),
                        "MLFLOW_EXPERIMENT_NAME": "exp-1", "MLFLOW_RUN_NAME": "run-1"}
    assert any(text.startswith("TensorBoard: ") for text in notice_recorder.notices)
    assert any(text.startswith("MLflow: ") for text in notice_recorder.notices)
    shown = CliRunner().invoke(main, ["metrics", str(result.run_dir)])
    assert shown.exit_code == 0, shown.output
    assert f"tensorboard --logdir {result.run_dir / 'tensorboard'}" in shown.output


def test_a_tensorboard_path_outside_opt_ml_is_refused_before_the_run(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    (source / "train.py").write_text("print(1)\n")
    spec = {"name": "tracking", "entry_point": "train.py", "source_dir": "src", "framework_version": "2.3.0",
            "instance": {"type": "ml.c5.2xlarge"}, "tensorboard": {"s3_uri": "s3://bucket/tb/", "local_path": "/tmp/tb"}}
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    result = CliRunner().invoke(main, ["local", str(path), "--run-dir", str(tmp_path / "run")])
    assert result.exit_code == 2, result.output
    assert "tensorboard.local_path '/tmp/tb' is outside /opt/ml" in result.output
    assert "fix:" in result.output and "Traceback" not in result.output
