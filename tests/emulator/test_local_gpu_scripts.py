"""Unmodified GPU-shaped scripts (gpu_standin/scripts/, some of which the tests there also run without the emulator)
run by `smtrain local` on this CPU-only machine: every training process gets the emulator's CPU stand-in for CUDA (the
instance's GPUs, nccl and smddp over gloo), under python, torchrun and mpirun, and the launches, ranks, shards and
collectives are really exercised."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from orchestrator.emulator.instances.standin import local_gpu_count

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(local_gpu_count() > 0, reason="checks the CPU stand-in; with GPUs here real CUDA runs"),
]

SPECS = Path(__file__).parent / "gpu_scripts"
SMTRAIN = Path(sys.executable).with_name("smtrain")
SOURCE_FILES = sorted(path.name for path in (SPECS.parent / "gpu_standin" / "scripts").glob("*.py"))
DEBIAN_PYTHON = "/usr/bin/python3"  # Debian's, with torch 1.13 (docs/host-file-system.md)
STANDIN_NOTICE = "This GPU job runs on the CPU: every training process gets smtrain's CPU stand-in for CUDA"


def _local(spec: str, run_dir: Path, *args: str) -> tuple[dict, str]:
    """`smtrain local SPEC -o json`, as a user types it: the result, and what it printed on stderr."""
    command = [str(SMTRAIN), "local", str(SPECS / spec), "--run-dir", str(run_dir), "-o", "json", *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert done.stdout, done.stderr
    return json.loads(done.stdout), done.stderr


def _json_lines(run_dir: Path) -> dict[str, list[dict]]:
    """The JSON objects each host's log holds (after mpirun's `[1,mpirank:N,algo-K]<stdout>:` tags). Unbuffered
    ranks sharing a host's output write a line and its newline separately, so two may share a line."""
    decoder = json.JSONDecoder()
    found: dict[str, list[dict]] = {}
    for log in sorted((run_dir / "logs").glob("algo-*.log")):
        found[log.stem] = []
        for line in log.read_text().splitlines():
            start = line.find('{"')
            while start >= 0:
                item, end = decoder.raw_decode(line, start)
                found[log.stem].append(item)
                start = line.find('{"', end)
    return found


def _assert_one_world(lines: list[dict], world_size: int, dataset_size: int, agreed: tuple[str, ...]) -> None:
    """Every rank printed once, they know the world size, their sampler shards partition the dataset, and they
    agree on `agreed` (losses, weight checksums)."""
    assert sorted(line["rank"] for line in lines) == list(range(world_size))
    assert {line["world_size"] for line in lines} == {world_size}
    shards = [set(line["shard"]) for line in lines]
    assert sum(len(shard) for shard in shards) == dataset_size
    assert set().union(*shards) == set(range(dataset_size))
    for key in agreed:
        assert len({line[key] for line in lines}) == 1, f"ranks disagree on {key}: {lines}"


def test_torchrun_ddp_over_nccl_on_two_g5_hosts(tmp_path):
    """Two of each host's four stand-in GPUs (--processes-per-host 2): every rank still sees the instance's 4 and
    takes its local rank's. torchrun's default of one rank per GPU, 8 here, is the Trainer's test under torchrun
    (test_local_frameworks.py) and the DLC's MNIST job's (test_examples_debian_torch.py)."""
    result, printed = _local("ddp-torch_distributed-2x-g5.12xlarge.yaml", tmp_path / "run",
                             "--processes-per-host", "2")
    assert (result["status"], result["exit_code"], result["world_size"]) == ("Completed", 0, 4), result
    assert printed.count(STANDIN_NOTICE) == 1
    assert "emulating 4 x A10G per host" in printed
    hosts = _json_lines(tmp_path / "run")
    assert sorted(line["rank"] for line in hosts["algo-1"]) == [0, 1]
    assert sorted(line["rank"] for line in hosts["algo-2"]) == [2, 3]
    lines = hosts["algo-1"] + hosts["algo-2"]
    _assert_one_world(lines, world_size=4, dataset_size=64, agreed=("final_loss", "checksum", "device_count"))
    assert {line["rank"]: line["device"] for line in lines} == {rank: rank % 2 for rank in range(4)}
    assert lines[0]["device_count"] == 4


def test_fsdp_v1_trains_under_torch_1_13(tmp_path):
    """FSDP v1 on Debian's torch 1.13, whose gloo has no reduce-scatter or all-gather into a tensor, and whose FSDP
    does not import on Python 3.11 as it is: both ranks train, with the same falling loss."""
    if subprocess.run([DEBIAN_PYTHON, "-c", "import torch"], capture_output=True, check=False).returncode:
        pytest.skip(f"{DEBIAN_PYTHON} has no torch (Debian: apt-get install python3-torch)")
    result, _ = _local("fsdp_v1-torch_distributed-2x-g5.xlarge.yaml", tmp_path / "run", "--python", DEBIAN_PYTHON)
    assert (result["status"], result["exit_code"], result["world_size"]) == ("Completed", 0, 2), result
    hosts = _json_lines(tmp_path / "run")
    lines = hosts["algo-1"] + hosts["algo-2"]
    assert sorted(line["rank"] for line in lines) == [0, 1]
    assert lines[0]["losses"] == lines[1]["losses"]
    losses = lines[0]["losses"]
    assert losses[-1] < losses[0] / 4 and all(later < earlier for earlier, later in zip(losses, losses[1:])), losses


def test_spawn_one_process_per_gpu_with_a_localhost_master(tmp_path):
    result, _ = _local("spawn-none-1x-g5.12xlarge.yaml", tmp_path / "run")
    assert (result["status"], result["exit_code"]) == ("Completed", 0), result
    lines = _json_lines(tmp_path / "run")["algo-1"]
    _assert_one_world(lines, world_size=4, dataset_size=40, agreed=("checksum", "device"))
    assert lines[0]["device"] == "A10G (smtrain CPU stand-in)"
    log = (tmp_path / "run" / "logs" / "algo-1.log").read_text()
    assert all(f"Finished running basic DDP example on rank {rank} of 4." in log for rank in range(4))


def test_smddp_backend_on_two_p4d_hosts(tmp_path):
    """SMDDP's mpirun over the stand-in's smddp backend, filling each host's slots in turn: two of each host's eight
    stand-in GPUs (--processes-per-host 2), as the slots' order and the collectives show it at any count and each
    rank costs a torch import. All 16 ranks start in test_example_smoke.py's smoke of the SMDDP example on 2 x p4d,
    and 8 on one p4d train the Trainer and Accelerate in test_local_frameworks.py."""
    result, printed = _local("smddp-2x-p4d.24xlarge.yaml", tmp_path / "run", "--processes-per-host", "2")
    assert (result["status"], result["exit_code"], result["world_size"]) == ("Completed", 0, 4), result
    assert "emulating 8 x A100 per host" in printed
    lines = _json_lines(tmp_path / "run")["algo-1"]  # mpirun runs on the master and prints every rank
    _assert_one_world(lines, world_size=4, dataset_size=64, agreed=("mean_last_loss", "checksum", "backend"))
    assert {line["rank"]: (line["host"], line["local_rank"]) for line in lines} == {
        rank: (f"algo-{rank // 2 + 1}", rank % 2) for rank in range(4)}
    assert {(line["backend"], line["device_count"]) for line in lines} == {("smddp", 8)}


def test_prefetch_thread_side_stream_autocast_and_grad_scaler(tmp_path):
    """--exact-autocast: bfloat16 on any CPU (without it, a CPU without native bfloat16 computes in float32)."""
    result, _ = _local("prefetch_amp-none-1x-g5.12xlarge.yaml", tmp_path / "run", "--exact-autocast")
    assert (result["status"], result["exit_code"]) == ("Completed", 0), result
    [outcome] = _json_lines(tmp_path / "run")["algo-1"]
    assert outcome["finite"] is True
    assert (outcome["epochs"], outcome["steps"]) == (3, 8)
    assert outcome["autocast_dtype"] == "torch.bfloat16"
    # The stand-in is on PYTHONPATH only: neither the uploaded tarball nor the code directory holds it.
    [tarball] = (tmp_path / "run").rglob("sourcedir.tar.gz")
    with tarfile.open(tarball) as archive:
        assert sorted(archive.getnames()) == SOURCE_FILES
    assert sorted(path.name for path in (tmp_path / "run" / "algo-1" / "code").iterdir()) == SOURCE_FILES


def test_without_the_standin_nccl_fails_with_torchs_own_error(tmp_path):
    """--no-gpu-standin: the script meets this machine as it is (one host, one rank keeps it short)."""
    result, printed = _local("ddp-torch_distributed-2x-g5.12xlarge.yaml", tmp_path / "run", "--no-gpu-standin",
                             "--set", "instance.count=1", "--processes-per-host", "1")
    assert (result["status"], result["exit_code"]) == ("Failed", 1), result
    assert result["failure_reason"].startswith(
        "algo-1 (rank 0) failed: RuntimeError: Distributed package doesn't have NCCL built in"), result
    assert STANDIN_NOTICE not in printed
    assert "--no-gpu-standin: the training processes see this machine's 0 GPUs" in printed
