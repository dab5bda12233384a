"""World sizes and rank tables: what each mode starts on each instance type (sagemaker-contract.md §7)."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.specs.catalog import lookup
from orchestrator.specs.loader import load
from orchestrator.specs.topology import topology

SPECS = Path(__file__).resolve().parents[2] / "job_specs"


@pytest.mark.parametrize(("file", "hosts", "per_host", "world", "master"), [
    ("mpi-demo-mpi-3x-c5.2xlarge.yaml", 3, 2, 6, "algo-1:7777"),
    ("mlp-gloo-none-2x-c5.2xlarge.yaml", 2, 1, 2, "algo-1:7777"),
    ("convnet-dp-none-1x-g5.12xlarge.yaml", 1, 1, 1, "algo-1:7777"),
    ("mlp-ddp-pytorchddp-1x-g5.12xlarge.yaml", 1, 4, 4, "algo-1:7777"),
    ("mlp-ddp-smddp-2x-p4d.24xlarge.yaml", 2, 8, 16, "algo-1:7777"),
    ("mlp-ddp-torch_distributed-2x-g5.12xlarge.yaml", 2, 4, 8, "algo-1:7777"),
])
def test_topology_of_each_example(file, hosts, per_host, world, master):
    spec = load(SPECS / file).spec
    topo = topology(spec, lookup(spec.instance.type))
    assert (len(topo.hosts), topo.processes_per_host, topo.world_size) == (hosts, per_host, world)
    ranks = topo.ranks()
    assert [row.rank for row in ranks] == list(range(world))
    assert {row.master for row in ranks} == {master}
    assert [row.host for row in ranks][::per_host] == [f"algo-{index + 1}" for index in range(hosts)]
    assert {row.local_rank for row in ranks} == set(range(per_host))


def test_topology_single_node_torchrun_uses_its_own_rendezvous():
    spec = load(SPECS / "mlp-ddp-torch_distributed-2x-g5.12xlarge.yaml", ["instance.count=1"]).spec
    topo = topology(spec, lookup(spec.instance.type))
    assert (topo.master_addr, topo.master_port) == ("127.0.0.1", 29500)


def test_topology_override_shrinks_processes_per_host():
    spec = load(SPECS / "mlp-ddp-torch_distributed-2x-g5.12xlarge.yaml").spec
    assert topology(spec, lookup(spec.instance.type), processes_per_host_override=1).world_size == 2


def test_topology_trainium_runs_one_process_per_neuron_core(tmp_path):
    spec = load(SPECS / "mlp-ddp-torch_distributed-2x-g5.12xlarge.yaml",
                ["instance.type=ml.trn1.32xlarge", "framework_version=null", "py_version=null",
                 "image_uri=763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training-neuronx:2.1.2-neuronx-py310",
                 "hyperparameters.trainer=auto"]).spec
    assert topology(spec, lookup(spec.instance.type)).processes_per_host == 32
