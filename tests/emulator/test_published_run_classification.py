"""transformers' published text-classification example, run_classification.py, runs unchanged under `smtrain local`
as a user hands it to SageMaker: torch_distributed on 2 x ml.g5.2xlarge (world size 2) on the CPU stand-in, the
tiny BERT of frameworks/tiny_model.py as the `model` channel, a JSON-lines dataset as the `train` channel, every
path given as the literal container path SageMaker's hyperparameters carry (`--train_file
/opt/ml/input/data/train/train.json`, `--output_dir /opt/ml/model`), and evaluate's accuracy metric loaded offline
from `accuracy/accuracy.py` beside the script (`evaluate.load("accuracy")` takes a folder of that name in the
working directory, the code directory, before the hub).

The two published files are not in this repository: this workplace keeps code taken from other repositories out
of its commits, and the transformers wheel and sdist ship no examples. The test runs where
`SMTRAIN_PUBLISHED_SCRIPTS` names a folder holding them in `hf-examples/`, byte for byte (digests below; SOURCE in
tests/emulator/frameworks/ says where each comes from; tests/support/published_scripts.py), with the `hf-examples`
extra installed; it is skipped otherwise.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml
from installed import needs_packages
from published_scripts import published

from orchestrator.emulator.instances.standin import local_gpu_count

FRAMEWORKS = Path(__file__).parent / "frameworks"
sys.path.insert(0, str(FRAMEWORKS))
from sentiment_data import sentences  # noqa: E402  (the frameworks' toy task, shared with their scripts)

SHA256 = {
    # huggingface/transformers @005c23ae8f6dca810fa2a0e5cecabe0cfb24aaf3, examples/pytorch/text-classification/
    # (check_min_version("4.57.0.dev0"), met by transformers 5.24.0)
    "run_classification.py": "ee4f998e9b2d79ecf260d28d997b3a22ae86d2951216c2076f6fe12fd027375a",
    # huggingface/evaluate @c447fc8eda9c62af501bfdc6988919571050d950 (unchanged to a7dd338), metrics/accuracy/
    "accuracy/accuracy.py": "13c80a4b9777ae25ced377fc1fb74be243653fe233ddc711388c34918f5f63e4",
}

pytestmark = [
    pytest.mark.slow,
    needs_packages("transformers", "datasets", "evaluate", "sklearn", extra="hf-examples"),
    pytest.mark.skipif(local_gpu_count() > 0, reason="checks the CPU stand-in; with GPUs here real CUDA runs"),
]

SMTRAIN = Path(sys.executable).with_name("smtrain")
TIMEOUT_S = 1800  # only a hang reaches it
WORLD_SIZE, PER_DEVICE_BATCH, EPOCHS, TRAIN_SIZE = 2, 4, 3, 64


@pytest.fixture
def hf_examples() -> Path:
    """The provided published files, checked against their digests; the test is skipped without them."""
    return published("hf-examples", SHA256, FRAMEWORKS / "SOURCE")


def _source_dir(provided: Path, folder: Path) -> Path:
    """The published files as the job's source_dir."""
    for name in SHA256:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(provided / name, folder / name)
    return folder


def _channels(tmp_path: Path) -> tuple[Path, Path]:
    """The `model` channel (tiny_model.py's BERT and tokenizer) and the `train` channel (JSON lines)."""
    model, data = tmp_path / "model", tmp_path / "data"
    subprocess.run([sys.executable, str(FRAMEWORKS / "tiny_model.py"), str(model)], check=True, timeout=600,
                   capture_output=True, env={"HF_HUB_OFFLINE": "1", "PATH": str(Path(sys.executable).parent)})
    data.mkdir()
    for split, count, seed in (("train", TRAIN_SIZE, 0), ("validation", 16, 1)):
        rows = (json.dumps({"sentence": text, "label": label}) for text, label in sentences(count, seed))
        (data / f"{split}.json").write_text("\n".join(rows) + "\n")
    return model, data


def test_published_run_classification_under_torchrun_on_two_g5_hosts(tmp_path, hf_examples):
    model, data = _channels(tmp_path)
    spec = {
        "name": "hf-run-classification", "entry_point": "run_classification.py",
        "source_dir": str(_source_dir(hf_examples, tmp_path / "src")), "framework_version": "2.13.0",
        "instance": {"type": "ml.g5.2xlarge", "count": 2}, "distribution": {"mode": "torch_distributed"},
        "hyperparameters": {
            "model_name_or_path": "/opt/ml/input/data/model",
            "train_file": "/opt/ml/input/data/train/train.json",
            "validation_file": "/opt/ml/input/data/train/validation.json",
            "output_dir": "/opt/ml/model", "do_train": True, "do_eval": True, "eval_strategy": "epoch",
            "logging_strategy": "epoch", "save_strategy": "no", "num_train_epochs": EPOCHS,
            "per_device_train_batch_size": PER_DEVICE_BATCH, "learning_rate": 0.01, "max_seq_length": 8,
            "report_to": "none", "disable_tqdm": True},
        "environment": {"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"},
        "inputs": {"model": "s3://my-bucket/models/tiny-bert/", "train": "s3://my-bucket/data/"},
        "local_inputs": {"model": str(model), "train": str(data)}, "max_run_seconds": 1200,
    }
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    run = tmp_path / "run"
    done = subprocess.run([str(SMTRAIN), "local", str(tmp_path / "spec.yaml"), "--run-dir", str(run), "-o", "json",
                           "--stall-timeout", "1200"], capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    assert done.stdout, done.stderr
    result = json.loads(done.stdout)
    log = (run / "logs" / "algo-1.log").read_text()
    assert (result["status"], result["exit_code"], result["world_size"]) == ("Completed", 0, WORLD_SIZE), (
        result["failure_reason"], log[-6000:])

    # The Trainer counts the world size in its own banner: the per-device batch times the processes.
    assert f"Num examples = {TRAIN_SIZE}" in log
    assert f"Instantaneous batch size per device = {PER_DEVICE_BATCH}" in log
    assert f"Total train batch size (w. parallel, distributed & accumulation) = {PER_DEVICE_BATCH * WORLD_SIZE}" in log
    # Its argument dump is shown as printed: TOKENIZERS_PARALLELISM=false in the spec masks nothing.
    assert "average_tokens_across_devices=True," in log

    with tarfile.open(run / "model.tar.gz") as archive:
        names = set(archive.getnames())
        state = json.load(archive.extractfile("trainer_state.json"))
        evaluated = json.load(archive.extractfile("eval_results.json"))
    assert {"config.json", "model.safetensors", "tokenizer.json", "trainer_state.json", "all_results.json"} <= names
    steps_per_epoch = TRAIN_SIZE // (PER_DEVICE_BATCH * WORLD_SIZE)
    assert state["global_step"] == EPOCHS * steps_per_epoch  # each rank took its half of every epoch
    losses = [entry["loss"] for entry in state["log_history"] if "loss" in entry]
    assert len(losses) == EPOCHS and all(math.isfinite(loss) for loss in losses) and losses[-1] < losses[0], losses
    evaluated_at = [entry["epoch"] for entry in state["log_history"] if "eval_accuracy" in entry]
    assert evaluated_at[:EPOCHS] == [1.0, 2.0, 3.0], state["log_history"]  # every epoch, then the final evaluate
    assert 0.0 <= evaluated["eval_accuracy"] <= 1.0 and evaluated["eval_samples"] == 16
