"""The entrypoints on sys.path (as SageMaker puts /opt/ml/code there), and real launches of them on the CPU."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
ENTRYPOINTS = REPO / "entrypoints"
VENV_BIN = Path(sys.executable).parent
sys.path.insert(0, str(ENTRYPOINTS))

LAUNCH_TIMEOUT_S = 600  # only a hang reaches it: a loaded machine can take minutes for a multi-rank run


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def child_env(base_dir: Path, **extra: str) -> dict[str, str]:
    """A clean environment for one emulated host: nothing inherited but PATH, outputs under `base_dir`.

    Gloo is pinned to the loopback interface and each process to one thread (2-core CI machines). TMPDIR is
    `base_dir` too: torchrun's agent leaves a torchelastic_* folder in it, which under /tmp would pile up.
    """
    env = {
        "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(base_dir),
        "TMPDIR": str(base_dir),
        "LANG": "C.UTF-8",
        "OMP_NUM_THREADS": "1",
        "GLOO_SOCKET_IFNAME": "lo",
        "SAGEMAKER_BASE_DIR": str(base_dir),
        "SM_OUTPUT_DATA_DIR": str(base_dir / "output" / "data"),
    }
    env.update(extra)
    return env


@dataclass
class Finished:
    """One launch that has ended: its exit status, its combined output and the host directory it wrote to."""

    returncode: int
    output: str
    base_dir: Path

    @property
    def model_dir(self) -> Path:
        return self.base_dir / "model"

    def model_json(self) -> dict[str, Any]:
        return json.loads((self.model_dir / "model.json").read_text())

    def state_dict(self) -> dict[str, Any]:
        import torch

        return torch.load(self.model_dir / "model.pt", weights_only=True)

    def metric_events(self, event: str) -> list[dict[str, Any]]:
        lines = (self.base_dir / "output" / "data" / "metrics.jsonl").read_text().splitlines()
        return [record for record in map(json.loads, lines) if record["event"] == event]

    def assert_ok(self) -> Finished:
        assert self.returncode == 0, self.output
        return self

    def assert_identical_replicas(self, launcher_name: str, world_size: int, dataset_size: int) -> None:
        """Every rank ended with the weights rank 0 saved, and each of 2 epochs saw the dataset once."""
        import metrics

        metadata = self.model_json()
        assert (metadata["launcher"], metadata["world_size"]) == (launcher_name, world_size)
        assert len(metadata["replica_checksums"]) == world_size
        assert set(metadata["replica_checksums"]) == {metrics.state_checksum(self.state_dict())}
        assert metadata["replicas_in_sync"] is True
        assert metadata["samples_seen_per_epoch"] == [dataset_size, dataset_size]
        epochs = self.metric_events("epoch")
        assert [event["samples_seen"] for event in epochs] == [dataset_size, dataset_size]


@dataclass
class Running:
    """A started launch whose stdout and stderr go to `log` (a file, so that a chatty process never blocks)."""

    process: subprocess.Popen
    base_dir: Path
    log: Path

    def output(self) -> str:
        return self.log.read_text()

    def wait(self) -> Finished:
        try:
            self.process.wait(timeout=LAUNCH_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            pytest.fail(f"launch did not finish within {LAUNCH_TIMEOUT_S} s:\n{self.output()}")
        return Finished(self.process.returncode, self.output(), self.base_dir)


class Launcher:
    """Starts train.py (or mpi_demo.py) the way each SageMaker mode does, on this machine."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def start(self, command: list[str], base_dir: Path, env: dict[str, str]) -> Running:
        base_dir.mkdir(parents=True, exist_ok=True)
        log = base_dir / "launch.log"
        with log.open("w") as handle:
            process = subprocess.Popen(command, cwd=ENTRYPOINTS, env=env, stdout=handle, stderr=subprocess.STDOUT)
        return Running(process, base_dir, log)

    def single(self, name: str, args: list[str], **extra_env: str) -> Finished:
        base = self.root / name
        return self.start([sys.executable, "train.py", *args], base, child_env(base, **extra_env)).wait()

    def torchrun(self, name: str, num_processes: int, args: list[str]) -> Finished:
        base = self.root / name
        command = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(num_processes),
                   "--master-addr", "127.0.0.1", "--master-port", str(free_port()), "train.py", *args]
        return self.start(command, base, child_env(base)).wait()

    def mpirun(self, name: str, num_processes: int, script: str, args: list[str]) -> Finished:
        mpirun = VENV_BIN / "mpirun"
        if not mpirun.exists():
            pytest.skip(f"no {mpirun}; install the [local] extra for Open MPI")
        base = self.root / name
        root_flag = ["--allow-run-as-root"] if os.geteuid() == 0 else []
        command = [str(mpirun), *root_flag, "--oversubscribe", "-np", str(num_processes),
                   sys.executable, "-m", "mpi4py", script, *args]
        return self.start(command, base, child_env(base)).wait()

    def start_hosts(self, name: str, args: list[str], num_hosts: int = 2) -> list[Running]:
        """SageMaker mode none: one `python train.py` per emulated host algo-1..N, MASTER_ADDR on loopback."""
        hosts = [f"algo-{index}" for index in range(1, num_hosts + 1)]
        port = str(free_port())
        started = []
        for host in hosts:
            base = self.root / name / host
            env = child_env(base, SM_HOSTS=json.dumps(hosts), SM_CURRENT_HOST=host, MASTER_ADDR="127.0.0.1",
                            MASTER_PORT=port)
            started.append(self.start([sys.executable, "train.py", *args], base, env))
        return started

    @staticmethod
    def wait_for(hosts: list[Running], text: str) -> None:
        """Until the first host printed `text`; fails when a host ended first, or at LAUNCH_TIMEOUT_S."""
        deadline = time.monotonic() + LAUNCH_TIMEOUT_S
        while text not in hosts[0].output():
            assert time.monotonic() < deadline and all(host.process.poll() is None for host in hosts), \
                hosts[0].output()
            time.sleep(0.05)

    def hosts(self, name: str, args: list[str], num_hosts: int = 2) -> list[Finished]:
        return [running.wait() for running in self.start_hosts(name, args, num_hosts)]


@pytest.fixture(scope="module")
def launcher(tmp_path_factory) -> Launcher:
    """Module-scoped so that a reference run can be shared by several tests of one module."""
    return Launcher(tmp_path_factory.mktemp("launches"))
