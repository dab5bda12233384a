"""Which trainer, backend and device a launch gets, and what happens when the backend is missing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import backends
import pytest
import torch
from backends import TrainerUnavailable
from dist_env import DistEnv

from orchestrator.emulator.gpu_standin.smtrain_gpu_standin import env as standin_env
from orchestrator.emulator.instances.standin import STANDIN_DIR

ENTRYPOINTS = Path(backends.__file__).parent

SINGLE = DistEnv(0, 0, 1, 1, 0, "127.0.0.1", 7777, "single")
TWO_RANKS = DistEnv(1, 1, 2, 2, 0, "127.0.0.1", 7777, "torchrun")
SMDDP_RANK = DistEnv(0, 0, 2, 2, 0, "algo-1", 7777, "mpirun", "smddp")
needs_no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only behaviour")


@pytest.mark.parametrize(
    ("requested", "env", "num_gpus", "trainer", "reason"),
    [
        ("auto", SINGLE, 0, "gloo", "auto: no CUDA device, 1 process(es)"),
        ("auto", TWO_RANKS, 0, "gloo", "auto: no CUDA device, 2 process(es)"),
        ("auto", SINGLE, 4, "dp", "auto: one process and 4 GPUs"),
        ("auto", SINGLE, 1, "ddp", "auto: CUDA with 1 process(es)"),
        ("auto", TWO_RANKS, 8, "ddp", "auto: CUDA with 2 process(es)"),
        ("auto", SMDDP_RANK, 0, "ddp", "auto: SageMaker smddp mode"),
        ("gloo", SINGLE, 4, "gloo", "requested"),
        ("dp", SINGLE, 0, "dp", "requested"),
    ],
)
def test_choose_trainer(requested, env, num_gpus, trainer, reason):
    assert backends.choose_trainer(requested, env, num_gpus) == (trainer, reason)


def test_dp_refuses_several_processes():
    with pytest.raises(TrainerUnavailable, match="trainer dp runs one process per host, but torchrun started "
                                                 "world_size=2"):
        backends.choose_trainer("dp", TWO_RANKS, 8)


@needs_no_cuda
@pytest.mark.parametrize(
    ("env", "missing"),
    [(TWO_RANKS, "needs the nccl backend, but no CUDA device is visible"),
     (SMDDP_RANK, "needs the smddp backend, but no CUDA device is visible")],
)
def test_ddp_without_its_backend_says_what_is_missing_and_how_to_fix(env, missing):
    with pytest.raises(TrainerUnavailable) as raised:
        backends.resolve_runtime("ddp", env, print)
    assert missing in str(raised.value)
    assert "To fix:" in str(raised.value) and "smtrain local" in str(raised.value)


RESOLVE_ON_THE_STANDIN = """
import backends, json
from dist_env import DistEnv
for env in (DistEnv(1, 1, 2, 2, 0, "127.0.0.1", 7777, "torchrun"),
            DistEnv(0, 0, 2, 2, 0, "algo-1", 7777, "mpirun", "smddp")):
    runtime = backends.resolve_runtime("ddp", env, print)
    print(json.dumps([runtime.trainer, runtime.backend, str(runtime.device)]))
"""


def test_ddp_takes_its_gpu_path_on_the_cpu_standin_for_cuda():
    """What `smtrain local` gives a GPU instance's processes here: CUDA answers, so ddp picks nccl (run over
    gloo by the stand-in) and, in smddp mode, imports the stand-in's smdistributed."""
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp"),
           "PYTHONPATH": os.pathsep.join([str(STANDIN_DIR), str(ENTRYPOINTS)]),
           standin_env.NUM_GPUS: "4", standin_env.GPU_NAME: "A10G"}
    result = subprocess.run([sys.executable, "-c", RESOLVE_ON_THE_STANDIN], env=env, capture_output=True, text=True,
                            timeout=600, check=False)
    assert result.returncode == 0, result.stderr
    assert [json.loads(line) for line in result.stdout.splitlines()] == [["ddp", "nccl", "cuda:1"],
                                                                         ["ddp", "smddp", "cuda:0"]]


@needs_no_cuda
def test_dp_on_a_cpu_trains_the_bare_model_with_one_notice():
    notices: list[str] = []
    runtime = backends.resolve_runtime("dp", SINGLE, notices.append)
    model = torch.nn.Linear(2, 2)
    assert backends.wrap_model(model, runtime) is model
    assert notices == ["trainer dp: no CUDA device, so no DataParallel; training on one CPU device"]


def test_gloo_in_smddp_mode_says_the_mode_is_ignored():
    notices: list[str] = []
    runtime = backends.resolve_runtime("gloo", SMDDP_RANK, notices.append)
    assert (runtime.backend, runtime.device) == ("gloo", torch.device("cpu"))
    assert notices == ["trainer gloo ignores SageMaker's smddp mode and trains on the CPU over gloo"]


def test_model_parallel_refuses_several_processes_on_a_host():
    with pytest.raises(TrainerUnavailable, match="trainer model_parallel runs one process per host .* but torchrun "
                                                 "started 2 on this host"):
        backends.choose_trainer("model_parallel", TWO_RANKS, 8)


@needs_no_cuda
@pytest.mark.parametrize("trainer", ["fsdp", "model_parallel"])
def test_sharded_and_model_parallel_trainers_use_gloo_on_a_cpu_host(trainer):
    env = TWO_RANKS if trainer == "fsdp" else SINGLE
    runtime = backends.resolve_runtime(trainer, env, print)
    assert (runtime.trainer, runtime.backend, runtime.device) == (trainer, "gloo", torch.device("cpu"))
