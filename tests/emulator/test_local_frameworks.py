"""Scripts written for the frameworks users train with (transformers' Trainer, with FSDP or DeepSpeed too, Accelerate,
Lightning) run unchanged
by `smtrain local` on this CPU-only machine, on the CPU stand-in for CUDA, at the instance's full world size and
under the launcher each mode uses (tests/emulator/frameworks/, SOURCE says where each script comes from). The model
and tokenizer are built locally (tiny_model.py) and handed over as the `model` channel; nothing reaches the hub
(HF_HUB_OFFLINE=1). Each test checks the world size as the framework counts it, that training progressed by the
framework's own loss or evaluation lines, that smtrain's default metric definitions recorded those losses in the
run's metrics.jsonl (as SageMaker would read them from the log), and the model files in model.tar.gz.

Needs the `frameworks` extra (transformers, accelerate, lightning; deepspeed for its tests); skipped without it.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from installed import needs_packages

from orchestrator.emulator.instances.standin import local_gpu_count
from orchestrator.observing.metric_series import METRICS_FILE, read_points

pytestmark = [
    pytest.mark.slow,
    needs_packages("transformers", "accelerate", "lightning"),
    pytest.mark.skipif(local_gpu_count() > 0, reason="checks the CPU stand-in; with GPUs here real CUDA runs"),
]

FRAMEWORKS = Path(__file__).parent / "frameworks"
SMTRAIN = Path(sys.executable).with_name("smtrain")
TIMEOUT_S = 1800  # only a hang reaches it: eight ranks importing transformers take minutes on a loaded 2-core machine
# The stall clock's default (300 s) can stop a run whose ranks are still importing transformers on a loaded machine;
# a generous one keeps these tests independent of the machine's speed.
STALL_TIMEOUT_S = "1200"


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    """The `model` channel: a 2-layer BERT and its tokenizer, saved with save_pretrained."""
    folder = tmp_path_factory.mktemp("model")
    subprocess.run([sys.executable, str(FRAMEWORKS / "tiny_model.py"), str(folder)], check=True, timeout=600,
                   capture_output=True, env={"HF_HUB_OFFLINE": "1", "PATH": str(Path(sys.executable).parent)})
    return folder


def _local(spec: str, run_dir: Path, *args: str) -> tuple[dict, str]:
    """`smtrain local SPEC -o json`, as a user types it: the result, and every host's log (algo-1's first)."""
    command = [str(SMTRAIN), "local", str(FRAMEWORKS / spec), "--run-dir", str(run_dir), "-o", "json",
               "--stall-timeout", STALL_TIMEOUT_S, *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    assert done.stdout, done.stderr
    result = json.loads(done.stdout)
    logs = "\n".join(log.read_text() for log in sorted((run_dir / "logs").glob("algo-*.log")))
    assert (result["status"], result["exit_code"]) == ("Completed", 0), (result["failure_reason"], logs[-6000:])
    return result, logs


def _json_lines(logs: str) -> list[dict]:
    """The JSON objects the scripts printed. A rank's stderr may share the line (a warning without its newline
    first), so objects are decoded where they start, whatever follows."""
    decoder = json.JSONDecoder()
    found = []
    for line in logs.splitlines():
        start = line.find('{"')
        while start >= 0:
            item, end = decoder.raw_decode(line, start)
            found.append(item)
            start = line.find('{"', end)
    return found


def _trainer_logs(run_dir: Path, key: str) -> list[dict]:
    """The Trainer's own log lines (`{'loss': '0.69', ..., 'epoch': '1'}`) that hold `key`, from the first host's
    log (the main process of each host prints them; hosts agree)."""
    found = []
    for line in (run_dir / "logs" / "algo-1.log").read_text().splitlines():
        start = line.find("{'")
        if start >= 0 and f"'{key}'" in line:
            found.append({name: float(value) for name, value in ast.literal_eval(line[start:]).items()})
    return found


def _recorded(run_dir: Path, metric: str) -> set[float]:
    """The values of `metric` the default metric definitions read from the run's lines."""
    return {point.value for point in read_points(run_dir / METRICS_FILE) if point.metric == metric}


def _model_files(run_dir: Path) -> set[str]:
    with tarfile.open(run_dir / "model.tar.gz") as archive:
        return set(archive.getnames())


def _assert_trainer_run(run_dir: Path, logs: str, world_size: int, epochs: int = 3) -> dict:
    """The Trainer counted `world_size` processes, logged a falling training loss (recorded as train:loss) and
    evaluated every epoch (recorded as eval:loss)."""
    counted = [line for line in _json_lines(logs) if "parallel_mode" in line]
    assert len(counted) == 1 and counted[0]["world_size"] == world_size, counted
    losses = [entry["loss"] for entry in _trainer_logs(run_dir, "loss") if "eval_loss" not in entry]
    assert len(losses) == epochs and losses[-1] < losses[0], losses
    assert set(losses) <= _recorded(run_dir, "train:loss")  # the default metric definitions read the Trainer's lines
    evaluations = _trainer_logs(run_dir, "eval_loss")
    assert [entry["epoch"] for entry in evaluations] == [float(epoch) for epoch in range(1, epochs + 1)]
    assert {entry["eval_loss"] for entry in evaluations} <= _recorded(run_dir, "eval:loss")
    return counted[0]


def test_trainer_under_torchrun_on_two_g5_hosts_evaluating_every_epoch(tiny_model, tmp_path):
    result, logs = _local("trainer-torch_distributed-2x-g5.12xlarge.yaml", tmp_path / "run",
                          "--input", f"model={tiny_model}")
    assert result["world_size"] == 8
    counted = _assert_trainer_run(tmp_path / "run", logs, world_size=8)
    assert (counted["parallel_mode"], counted["device"]) == ("ParallelMode.DISTRIBUTED", "cuda:0")
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= _model_files(tmp_path / "run")


def test_trainer_with_fsdp_and_bf16_on_two_hosts(tiny_model, tmp_path):
    """`--fsdp "full_shard auto_wrap"` with bf16: the Trainer wraps with FSDP2 through Accelerate, whose precision
    policy casts each wrapped layer's outputs to bf16."""
    result, logs = _local("trainer-fsdp-torch_distributed-2x-g5.2xlarge.yaml", tmp_path / "run",
                          "--input", f"model={tiny_model}")
    assert result["world_size"] == 2
    counted = _assert_trainer_run(tmp_path / "run", logs, world_size=2)
    assert (counted["parallel_mode"], counted["device"]) == ("ParallelMode.DISTRIBUTED", "cuda:0")
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= _model_files(tmp_path / "run")


@needs_packages("deepspeed")
@pytest.mark.parametrize("config", ["ds_zero2.json", "ds_zero3.json"])
def test_trainer_with_deepspeed_zero_on_two_hosts(tiny_model, tmp_path, config):
    """DeepSpeed ZeRO-2 and ZeRO-3 through the Trainer (`deepspeed=<json>`, bf16) on DeepSpeed's CUDA accelerator;
    ZeRO-3 gathers the partitioned weights into model.safetensors when saving."""
    result, logs = _local("trainer-deepspeed-torch_distributed-2x-g5.2xlarge.yaml", tmp_path / "run",
                          "--input", f"model={tiny_model}", "--set", f"hyperparameters.deepspeed={config}")
    assert result["world_size"] == 2
    counted = _assert_trainer_run(tmp_path / "run", logs, world_size=2)
    assert (counted["parallel_mode"], counted["device"]) == ("ParallelMode.DISTRIBUTED", "cuda:0")
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= _model_files(tmp_path / "run")


def test_trainer_under_smddp(tiny_model, tmp_path):
    result, logs = _local("trainer-smddp-1x-p4d.24xlarge.yaml", tmp_path / "run", "--input", f"model={tiny_model}")
    assert result["world_size"] == 8
    counted = _assert_trainer_run(tmp_path / "run", logs, world_size=8)
    assert counted["parallel_mode"] == "ParallelMode.SAGEMAKER_DATA_PARALLEL"
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= _model_files(tmp_path / "run")


@pytest.mark.parametrize(("spec", "world_size", "distributed_type", "backend"), [
    ("accelerate-torch_distributed-1x-g5.12xlarge.yaml", 4, "DistributedType.MULTI_GPU", "nccl"),
    ("accelerate-smddp-1x-p4d.24xlarge.yaml", 8, "DistributedType.MULTI_GPU", "smddp"),
])
def test_accelerate_loop_with_fp16(tiny_model, tmp_path, spec, world_size, distributed_type, backend):
    result, logs = _local(spec, tmp_path / "run", "--input", f"model={tiny_model}")
    assert result["world_size"] == world_size
    lines = _json_lines(logs)
    counted = [line for line in lines if "num_processes" in line]
    assert counted == [{"num_processes": world_size, "distributed_type": distributed_type, "backend": backend,
                        "mixed_precision": "fp16", "device": "cuda:0"}]
    epochs = [line for line in lines if "epoch" in line]
    assert [line["epoch"] for line in epochs] == [0, 1, 2]
    assert epochs[-1]["loss"] < epochs[0]["loss"], epochs
    assert {line["loss"] for line in epochs} <= _recorded(tmp_path / "run", "train:loss")
    assert "model.safetensors" in _model_files(tmp_path / "run")  # save_model writes the weights only


def test_lightning_ddp_with_mixed_precision_on_two_hosts(tmp_path):
    result, logs = _local("lightning-torch_distributed-2x-g5.12xlarge.yaml", tmp_path / "run")
    assert result["world_size"] == 8
    assert re.search(r"GPU available: True \(cuda\), used: True", logs)
    lines = _json_lines(logs)
    assert [line for line in lines if "world_size" in line] == [{
        "world_size": 8, "num_devices": 4, "num_nodes": 2, "strategy": "DDPStrategy", "precision": "16-mixed",
        "root_device": "cuda:0"}]
    epochs = [line for line in lines if "epoch" in line]
    assert [line["epoch"] for line in epochs] == [0, 1, 2]
    assert epochs[-1]["loss"] < epochs[0]["loss"], epochs
    # ModelCheckpoint(verbose=True)'s own line, `Epoch 0, global step 4: 'train_loss' reached 0.69315 (best ...`,
    # once an epoch's loss is the best yet (the first epoch's always is).
    reached = [float(value) for value in re.findall(r"'train_loss' reached ([0-9.]+)", logs)]
    assert reached and {line["loss"] for line in epochs} | set(reached) <= _recorded(tmp_path / "run", "train:loss")
    assert "model.ckpt" in _model_files(tmp_path / "run")
