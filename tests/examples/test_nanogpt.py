"""karpathy/nanoGPT's train.py as published (nanogpt/SOURCE), as users bring it to SageMaker: torchrun DDP from
RANK/LOCAL_RANK/WORLD_SIZE, `init_process_group('nccl')`, `cuda:{local_rank}`, bfloat16 autocast where
`is_bf16_supported()`, pinned non-blocking copies, fused AdamW, scaled dot-product attention, `torch.compile` by
default, np.memmap of `data/<dataset>/train.bin`, and its configurator.py, which reads only `--key=value`.

SageMaker passes hyperparameters as `--key value`: validate warns, and the documented wrapper
(docs/bring-your-own-script.md, nanogpt/sagemaker_args.py) joins them. The data is a few KB of tokens made here.
The published files are not kept in this repository: the runs are opt-in (tests/support/published_scripts.py).
"""

from __future__ import annotations

import json
import math
import pickle
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest
import yaml
from published_scripts import published, records

from example_data import EXAMPLES

NANOGPT = EXAMPLES / "nanogpt"
DOCS = EXAMPLES.parents[1] / "docs" / "bring-your-own-script.md"
RECORD = records(NANOGPT / "SOURCE")
PUBLISHED_SHA256 = {key.removeprefix("sha256 "): value for key, value in RECORD.items() if key.startswith("sha256 ")}
TINY = {"n_layer": 1, "n_head": 2, "n_embd": 32, "block_size": 32, "batch_size": 4, "max_iters": 6,
        "eval_interval": 3, "eval_iters": 2, "gradient_accumulation_steps": 2, "warmup_iters": 0,
        "lr_decay_iters": 6, "dataset": "/opt/ml/input/data/train"}
LOSS = re.compile(r"^iter (\d+): loss ([\d.]+|nan|inf)", re.M)


def _tokens(path: Path, count: int, rng: np.random.Generator) -> None:
    """uint16 tokens as nanoGPT's prepare.py writes them: runs of a 16-token cycle from random starts."""
    tokens: list[int] = []
    while len(tokens) < count:
        start = int(rng.integers(0, 16))
        tokens += [(start + step) % 16 for step in range(int(rng.integers(20, 60)))]
    np.array(tokens[:count], dtype=np.uint16).tofile(path)


@pytest.fixture
def nanogpt() -> Path:
    """The provided checkout of nanoGPT's published commit; the test is skipped without one."""
    return published("nanoGPT", PUBLISHED_SHA256, NANOGPT / "SOURCE")


def _job(tmp_path: Path, nanogpt: Path, entry_point: str, instance: dict, mode: str, **hyperparameters) -> Path:
    """The three published files and the wrapper in one source dir, the tokens in a `train` channel."""
    source = tmp_path / "src"
    source.mkdir()
    for name in PUBLISHED_SHA256:
        shutil.copy(nanogpt / name, source)
    shutil.copy(NANOGPT / "sagemaker_args.py", source)
    data = tmp_path / "data"
    data.mkdir()
    rng = np.random.default_rng(0)
    _tokens(data / "train.bin", 4096, rng)
    _tokens(data / "val.bin", 1024, rng)
    (data / "meta.pkl").write_bytes(pickle.dumps({"vocab_size": 16}))
    spec = {"name": "nanogpt", "entry_point": entry_point, "source_dir": "src", "framework_version": "2.10.0",
            "instance": instance, "distribution": {"mode": mode}, "max_run_seconds": 900,
            "hyperparameters": {**TINY, **hyperparameters}, "inputs": {"train": "s3://bucket/nanogpt/"},
            "local_inputs": {"train": "data"}}
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def _smtrain(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestrator", *args], capture_output=True, text=True,
                          timeout=900, check=False)


def _archived(model_artifact: str) -> list[str]:
    with tarfile.open(model_artifact) as tar:
        return sorted(tar.getnames())


def _losses(log: str) -> list[float]:
    return [float(value) for _, value in LOSS.findall(log)]


def test_source_records_the_commit_and_a_digest_of_each_published_file():
    assert RECORD["repository"] == "karpathy/nanoGPT" and re.fullmatch(r"[0-9a-f]{40}", RECORD["commit"])
    assert sorted(PUBLISHED_SHA256) == ["configurator.py", "model.py", "train.py"]
    assert all(re.fullmatch(r"[0-9a-f]{64}", digest) for digest in PUBLISHED_SHA256.values())


def test_the_provided_files_are_the_published_ones(nanogpt):
    """Where a checkout is provided, the fixture has checked each file's digest against SOURCE."""
    assert all((nanogpt / name).is_file() for name in PUBLISHED_SHA256)


def test_the_documented_wrapper_is_the_one_tested():
    documented = DOCS.read_text().split("### Scripts that read only `--key=value`", 1)[1]
    code = re.search(r"```python\n(.*?)```", documented, re.S)[1]
    assert code == (NANOGPT / "sagemaker_args.py").read_text()


@pytest.mark.slow
def test_validate_warns_before_sagemaker_passes_two_arguments_and_the_run_shows_why(tmp_path, nanogpt):
    """Run as published, with hyperparameters: configurator.py asserts at `--batch_size 4`. validate says so
    first, naming the line that runs it and the fix; the run fails at that line, and its cause repeats the fix."""
    spec = _job(tmp_path, nanogpt, "train.py", {"type": "ml.g5.2xlarge", "count": 1}, "none", compile=False)

    validated = _smtrain("validate", str(spec))
    ran = _smtrain("local", str(spec), "--run-dir", str(tmp_path / "run"), "-o", "json")

    assert validated.returncode == 0, validated.stderr
    said = " ".join((validated.stdout + validated.stderr).split())
    assert ("train.py reads its settings only as `--key=value`, one argument each (in configurator.py, run at "
            "train.py:77" in said and "`--batch_size 4`" in said and "wrapper" in said), said
    assert ran.returncode == 1
    cause = json.loads(ran.stdout)["failure_cause"]
    assert cause["exception"] == "AssertionError" and cause["location"].endswith("train.py:77"), cause
    assert cause["category"] == "argument_rejected" and cause["fix"] in said, cause


@pytest.mark.slow
def test_ddp_on_two_gpu_hosts_trains_and_checkpoints_into_the_model(tmp_path, nanogpt):
    """torch_distributed, 2 x ml.g5.2xlarge (one GPU each): world size 2 on the CPU stand-in, NCCL over gloo."""
    spec = _job(tmp_path, nanogpt, "sagemaker_args.py", {"type": "ml.g5.2xlarge", "count": 2}, "torch_distributed",
                compile=False, out_dir="/opt/ml/model")

    ran = _smtrain("local", str(spec), "--run-dir", str(tmp_path / "run"), "-o", "json")

    assert ran.returncode == 0, ran.stderr
    result = json.loads(ran.stdout)
    assert result["world_size"] == 2
    logs = {host: (tmp_path / "run" / "logs" / f"{host}.log").read_text() for host in ("algo-1", "algo-2")}
    for log in logs.values():  # every rank prints it; 2 micro-steps split over 2 ranks x 4 x 32 tokens
        assert "tokens per iteration will be: 256" in log
    assert "Overriding: gradient_accumulation_steps = 2" in logs["algo-2"]
    assert not _losses(logs["algo-2"]), "rank 1 is not nanoGPT's master process"
    losses = _losses(logs["algo-1"])
    assert len(losses) == 7 and all(math.isfinite(loss) for loss in losses), losses
    assert losses[-1] < losses[0], losses
    # /opt/ml/model in the host's mount namespace; where the kernel refuses one, the host's folder (host-file-system.md)
    assert re.search(r"^saving checkpoint to (/opt/ml|\S+/algo-1)/model$", logs["algo-1"], re.M), logs["algo-1"]
    assert _archived(result["model_artifact"]) == ["ckpt.pt"]
    assert "nothing in SM_MODEL_DIR" not in ran.stderr


@pytest.mark.slow
def test_a_smoke_ends_at_its_iteration_with_its_losses_read_by_the_default_definitions(tmp_path, nanogpt):
    """nanoGPT prints `iter N: loss X` and `step N: train loss X, val loss Y`, no `step=`: the smoke reads its step
    and the defaults its losses, as SageMaker's charts would, with no `metrics:` in the spec."""
    spec = _job(tmp_path, nanogpt, "sagemaker_args.py", {"type": "ml.g5.2xlarge", "count": 1}, "none", compile=False,
                out_dir="/opt/ml/model")

    ran = _smtrain("local", str(spec), "--run-dir", str(tmp_path / "run"), "--smoke", "300", "--smoke-steps", "4",
                   "-o", "json")

    assert ran.returncode == 0, ran.stderr
    result = json.loads(ran.stdout)
    assert result["smoke"]["steps_reached"] >= 4 and result["smoke"]["step_source"] == "progress line"
    log = (tmp_path / "run" / "logs" / "algo-1.log").read_text()
    assert result["smoke"]["last_loss"] in _losses(log), "the training loss, not an eval's"
    assert set(result["final_metrics"]) == {"train:loss", "eval:loss", "eval:train_loss"}


@pytest.mark.slow
def test_compiled_on_one_gpu_host_and_told_its_checkpoint_is_not_the_model(tmp_path, nanogpt):
    """Mode none, 1 x ml.g5.2xlarge, `torch.compile` as published (inductor's C++ on the CPU), bfloat16 autocast
    where the CPU has it. Its checkpoint goes to `out` under its working directory: model.tar.gz stays empty, as on
    SageMaker, and the run says so, with what to set."""
    spec = _job(tmp_path, nanogpt, "sagemaker_args.py", {"type": "ml.g5.2xlarge", "count": 1}, "none")

    ran = _smtrain("local", str(spec), "--run-dir", str(tmp_path / "run"), "-o", "json")

    assert ran.returncode == 0, ran.stderr
    log = (tmp_path / "run" / "logs" / "algo-1.log").read_text()
    assert "compiling the model..." in log and "tokens per iteration will be: 256" in log
    losses = _losses(log)
    assert len(losses) == 7 and all(math.isfinite(loss) for loss in losses), losses
    assert (tmp_path / "run" / "algo-1" / "code" / "out" / "ckpt.pt").is_file()
    assert _archived(json.loads(ran.stdout)["model_artifact"]) == []
    said = " ".join(ran.stderr.split())
    assert ("the job completed with nothing in SM_MODEL_DIR (/opt/ml/model) on any host" in said
            and "it wrote out/ckpt.pt in its working directory (/opt/ml/code)" in said
            and "`out_dir: /opt/ml/model`" in said), said
