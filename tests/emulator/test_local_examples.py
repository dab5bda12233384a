"""Every example spec in job_specs/ runs to completion here, on as many emulated hosts as it names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.emulator.local_run import Options, run_local
from orchestrator.specs.loader import load

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
SMALL = ["hyperparameters.epochs=1", "hyperparameters.num-samples=256", "hyperparameters.mlp-hidden=32",
         "hyperparameters.precision=fp32"]
# spec, extra overrides, processes per host to fit 2 cores, expected hosts x processes.
EXAMPLES = [
    ("mlp-gloo-none-2x-c5.2xlarge.yaml", [], None, (2, 1)),
    ("mpi-demo-mpi-3x-c5.2xlarge.yaml", [], None, (3, 2)),
    ("convnet-dp-none-1x-g5.12xlarge.yaml", [], None, (1, 1)),
    ("mlp-ddp-pytorchddp-1x-g5.12xlarge.yaml", [], 2, (1, 2)),
    ("mlp-ddp-smddp-2x-p4d.24xlarge.yaml", [], 1, (2, 1)),
    ("mlp-ddp-torch_distributed-2x-g5.12xlarge.yaml", [], 1, (2, 1)),  # its train channel: the local mirror
    ("mlp-ddp-torch_distributed-1x-g5.12xlarge.yaml", ["hyperparameters.checkpoint-every=0"], 2, (1, 2)),
    ("mlp-fsdp-torch_distributed-2x-g5.12xlarge.yaml", ["hyperparameters.checkpoint-every=0",
                                                        "hyperparameters.prefetch=0"], 1, (2, 1)),
    ("mlp-model_parallel-none-1x-g5.12xlarge.yaml", ["hyperparameters.mlp-layers=4", "hyperparameters.prefetch=0"],
     None, (1, 1)),
]


def test_every_example_is_covered():
    assert sorted(example[0] for example in EXAMPLES) == sorted(path.name for path in (REPO / "job_specs").glob("*.yaml"))


@pytest.mark.parametrize(("spec_file", "overrides", "per_host", "shape"), EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_example_runs_locally(spec_file, overrides, per_host, shape, tmp_path):
    is_training = "mpi-demo" not in spec_file
    loaded = load(REPO / "job_specs" / spec_file, (SMALL if is_training else []) + overrides)
    result = run_local(loaded, Options(run_dir=tmp_path / "run", processes_per_host=per_host))
    assert result.status == "Completed", result.failure_reason
    hosts, per_host_seen = shape
    assert result.world_size == hosts * per_host_seen
    assert sorted(path.name for path in result.run_dir.glob("algo-*")) == [f"algo-{i + 1}" for i in range(hosts)]
    assert all((result.run_dir / f"algo-{i + 1}/output/success").exists() for i in range(hosts))
    if is_training:
        metadata = json.loads((result.run_dir / "algo-1/model/model.json").read_text())
        assert metadata["world_size"] == result.world_size
        assert len(set(metadata["replica_checksums"])) == 1
        assert result.final_metrics["train:loss"] > 0
        if loaded.spec.local_inputs:  # trained on the mirror of its S3 channel (1024 rows), not synthetic data
            assert metadata["samples_seen_per_epoch"] == [1024]
