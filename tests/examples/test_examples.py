"""Public SageMaker PyTorch example scripts, kept byte for byte as published (each folder's SOURCE names the
repository, path and commit), run unchanged through `smtrain local` on synthetic data in the format each reads.

Nothing is downloaded: the data is generated here, and the one requirement the SDK's code bundle names
(aws-xray-sdk) comes from this environment (moto's dependency) or, where it lacks it, from a local wheel that
provides the module the script imports.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import re
import zipfile
from pathlib import Path

import numpy as np
import pytest

from example_data import EXAMPLES, mnist_idx, model_files, write_spec

from orchestrator.emulator.local_run import Options, run_local
from orchestrator.observing.metric_series import METRICS_FILE, read_points
from orchestrator.specs.loader import load

pytestmark = pytest.mark.slow



def _spec(tmp_path: Path, example: str, entry_point: str, count: int = 1, **extra) -> Path:
    return write_spec(tmp_path, example, entry_point, **{"instance": {"type": "ml.c5.2xlarge", "count": count}, **extra})


def _mnist_idx(directory: Path, prefix: str, count: int, seed: int) -> None:
    """MNIST's gzipped IDX files of synthetic digits."""
    images, labels = mnist_idx(count, np.random.default_rng(seed))
    directory.mkdir(parents=True, exist_ok=True)
    with gzip.open(directory / f"{prefix}-images-idx3-ubyte.gz", "wb") as handle:
        handle.write(images)
    with gzip.open(directory / f"{prefix}-labels-idx1-ubyte.gz", "wb") as handle:
        handle.write(labels)


@pytest.mark.parametrize("hosts", [1, 2])
def test_mnist_from_gzipped_idx_files(tmp_path, hosts):
    _mnist_idx(tmp_path / "training", "train", 640, seed=1)
    _mnist_idx(tmp_path / "testing", "t10k", 200, seed=2)
    spec = _spec(tmp_path, "mnist_gzip", "train.py", count=hosts,
                 hyperparameters={"epochs": 2, "log-interval": 2, "batch-size": 32},
                 inputs={"training": str(tmp_path / "training"), "testing": str(tmp_path / "testing")})
    result = run_local(load(spec), Options(run_dir=tmp_path / "run"))
    assert result.status == "Completed", result.failure_reason
    for host in range(1, hosts + 1):
        log = (result.run_dir / "logs" / f"algo-{host}.log").read_text()
        losses = [float(value) for value in re.findall(r"Train Epoch: \d+ .*Loss: ([\d.]+)", log)]
        assert len(losses) >= 10, log
        assert sum(losses[-3:]) / 3 < 0.5 * sum(losses[:3]) / 3, losses  # it learned the squares
        assert "Test set: Average loss" in log
    assert model_files(result) == ["model.pth"]


def test_script_mode_regression_from_npy_files(tmp_path):
    rng = np.random.default_rng(0)
    weights = rng.normal(size=8)
    for channel, count in (("train", 512), ("test", 128)):
        x = rng.normal(size=(count, 8)).astype(np.float32)
        (tmp_path / channel).mkdir()
        np.save(tmp_path / channel / f"x_{channel}.npy", x)
        np.save(tmp_path / channel / f"y_{channel}.npy", (x @ weights).astype(np.float32))
    spec = _spec(tmp_path, "script_mode_npy", "train_deploy_pytorch_without_dependencies.py",
                 hyperparameters={"epochs": 10, "batch_size": 32, "learning_rate": 0.05},
                 inputs={"train": str(tmp_path / "train"), "test": str(tmp_path / "test")})
    result = run_local(load(spec), Options(run_dir=tmp_path / "run"))
    assert result.status == "Completed", result.failure_reason
    log = (result.run_dir / "logs" / "algo-1.log").read_text()
    losses = [float(value) for value in re.findall(r"epoch: \d+ -> loss: (?:tensor\()?([\d.e+-]+)", log)]
    assert len(losses) == 10 and losses[-1] < 0.5 * losses[0], losses
    assert model_files(result) == ["code/pytorch_model_def.py", "code/train_deploy_pytorch_without_dependencies.py",
                                    "model.pth"]


def _xray_wheel(directory: Path) -> None:
    """aws-xray-sdk as a local wheel: the module path the script imports, no network."""
    directory.mkdir(parents=True)
    info = "aws_xray_sdk-2.14.0.dist-info"
    files = {"aws_xray_sdk/__init__.py": "", "aws_xray_sdk/core/__init__.py": "xray_recorder = object()\n",
             f"{info}/METADATA": "Metadata-Version: 2.1\nName: aws-xray-sdk\nVersion: 2.14.0\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: smtrain-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    digest = {name: base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
              for name, text in files.items()}
    files[f"{info}/RECORD"] = "".join(f"{name},sha256={digest[name]},{len(text.encode())}\n"
                                      for name, text in files.items()) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(directory / "aws_xray_sdk-2.14.0-py3-none-any.whl", "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)


def test_code_bundle_with_requirements(tmp_path, monkeypatch):
    _xray_wheel(tmp_path / "wheels")
    monkeypatch.setenv("SMTRAIN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "wheels"))
    result = run_local(load(_spec(tmp_path, "code_bundle_with_reqs", "main_script.py")),
                       Options(run_dir=tmp_path / "run"))
    assert result.status == "Completed", result.failure_reason
    log = (result.run_dir / "logs" / "algo-1.log").read_text()
    assert "Trying to import module from requirements.txt...\nDone" in log
    # pip ran for it (what the environment already has counts as installed, as in the image)
    assert list((tmp_path / "cache" / "overlays").glob("*/.complete"))


def test_the_examples_are_kept_as_published():
    for source in sorted(EXAMPLES.glob("*/SOURCE")):
        record = dict(line.partition(": ")[::2] for line in source.read_text().splitlines())
        assert re.fullmatch(r"[\w.-]+/[\w.-]+", record["repository"])
        assert re.fullmatch(r"[0-9a-f]{40}", record["commit"])
        kept = source.parent / "src"
        if kept.is_dir():
            assert list(kept.iterdir())
        else:  # not kept here (tests/support/published_scripts.py): each file's digest is recorded instead
            assert any(re.fullmatch(r"sha256 \S+: [0-9a-f]{64}", line) for line in source.read_text().splitlines())


def test_distributed_operations_on_two_hosts(tmp_path):
    """The toolkit's own collective check: each host spawns one process per vCPU (2 on an m5.large) with
    torch.multiprocessing, and they meet at algo-1:55555 over gloo; any wrong collective fails an assert."""
    spec = _spec(tmp_path, "distributed_operations", "distributed_operations.py", count=2,
                 instance={"type": "ml.m5.large", "count": 2},
                 hyperparameters={"backend": "gloo", "rows": 3, "columns": 2})
    result = run_local(load(spec), Options(run_dir=tmp_path / "run"))
    assert result.status == "Completed", result.failure_reason
    for host in (1, 2):
        log = (result.run_dir / "logs" / f"algo-{host}.log").read_text()
        assert "Running 'gloo' backend on 2 nodes and 2 processes. World size is 4." in log, log
        assert log.count("Run operations supported by 'gloo' backend.") == 2, log
        assert "Error" not in log, log
    for rank in range(4):  # every rank received rank 0's tensor from send/recv (the last operation)
        logs = "".join((result.run_dir / "logs" / f"algo-{host}.log").read_text() for host in (1, 2))
        assert f"Rank: {rank},\nTensor AFTER send_recv: tensor([[1., 1.]," in logs, logs
    assert model_files(result) == ["success"]


def _word_corpus(directory: Path, seed: int) -> int:
    """Wikitext-2's three files as the notebook renames them (train, valid, test): lines of words, here each line
    a run of a 40-word cycle from a random start, so the next word is predictable but for each line's first.
    Returns the vocabulary's size (with the script's '<eos>')."""
    rng = np.random.default_rng(seed)
    words = [f"w{index}" for index in range(40)]
    directory.mkdir()
    for name, lines in (("train", 400), ("valid", 60), ("test", 60)):
        starts = rng.integers(0, len(words), lines)
        text = "".join(" ".join(words[(int(start) + step) % len(words)] for step in range(12)) + "\n"
                       for start in starts)
        (directory / name).write_text(text)
    return len(words) + 1


def test_lstm_word_language_model(tmp_path):
    vocabulary = _word_corpus(tmp_path / "wikitext", seed=3)
    spec = _spec(tmp_path, "lstm_word_language_model", "train.py",
                 hyperparameters={"epochs": 3, "emsize": 32, "nhid": 32, "nlayers": 1, "dropout": 0.0,
                                  "log-interval": 2},
                 inputs={"training": str(tmp_path / "wikitext")}, metrics=None)  # the default metric definitions
    result = run_local(load(spec), Options(run_dir=tmp_path / "run"))
    assert result.status == "Completed", result.failure_reason
    log = (result.run_dir / "logs" / "algo-1.log").read_text()
    batch_losses = [float(value) for value in re.findall(r"\| epoch +\d+ \| .* \| loss +([\d.]+) \|", log)]
    valid_losses = [float(value) for value in re.findall(r"\| end of epoch +\d+ .*\| valid loss +([\d.]+) \|", log)]
    assert len(batch_losses) >= 6 and len(valid_losses) == 3, log
    assert valid_losses[-1] < valid_losses[0] < batch_losses[0], (batch_losses, valid_losses)
    points = read_points(result.run_dir / METRICS_FILE)  # the script's own rows, read as SageMaker would read them
    assert set(batch_losses) <= {point.value for point in points if point.metric == "train:loss"}
    assert set(valid_losses) <= {point.value for point in points if point.metric == "eval:loss"}
    test_ppl = float(re.search(r"\| End of training \| test loss +[\d.]+ \| test ppl +([\d.]+)", log).group(1))
    assert test_ppl < vocabulary / 4, (test_ppl, vocabulary)  # far better than guessing among the words
    assert model_files(result) == ["model.pth", "model_info.pth", "test", "train", "valid"]




def test_distributed_operations_over_nccl_on_gpu_hosts(tmp_path):
    """deep-learning-containers' copy of the collective check as its GPU test runs it: ml.g5.4xlarge hosts (one
    GPU each), no distribution, backend nccl. Each host spawns one process per GPU ('spawn' start method); here
    CUDA and NCCL are the CPU stand-in's, in the spawned processes too."""
    spec = _spec(tmp_path, "distributed_operations_nccl", "distributed_operations.py",
                 instance={"type": "ml.g5.4xlarge", "count": 2},
                 hyperparameters={"backend": "nccl", "rows": 3, "columns": 2})
    result = run_local(load(spec), Options(run_dir=tmp_path / "run"))
    assert result.status == "Completed", result.failure_reason
    logs = "".join((result.run_dir / "logs" / f"algo-{host}.log").read_text() for host in (1, 2))
    for host in (1, 2):
        log = (result.run_dir / "logs" / f"algo-{host}.log").read_text()
        assert "Running 'nccl' backend on 2 nodes and 1 processes. World size is 2." in log, log
        assert f"Init process rank {host - 1} on host 'algo-{host}'" in log, log
        assert log.count("Run operations supported by 'nccl' backend.") == 1, log
        assert "Error" not in log, log
    for rank in range(2):  # the last operation: each rank gathered both ranks' tensors
        assert re.search(rf"Rank: {rank},\nTensor AFTER all_gather: .*?tensors_list: \[tensor\(\[\[1\., 1\.\],"
                         r"\s+\[1\., 1\.\],\s+\[1\., 1\.\]\]\), tensor\(\[\[2\., 2\.\],", logs, re.S), logs
    assert model_files(result) == ["success"]
