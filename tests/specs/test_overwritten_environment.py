"""A value in `environment` that the PyTorch container writes over gets a warning saying what the training
processes see instead and how to set it; the same value as the container's gets none."""

from __future__ import annotations

import pytest

from orchestrator.specs.loader import from_mapping

GPU = {"type": "ml.g5.12xlarge", "count": 2}


def _warnings(tmp_path, environment, mode="torch_distributed", instance=GPU, **distribution):
    document = {"name": "demo", "entry_point": "train.py", "framework_version": "2.3.0", "instance": instance,
                "distribution": {"mode": mode, **distribution}, "environment": environment}
    (tmp_path / "train.py").write_text("")
    loaded = from_mapping(document, base_dir=tmp_path)
    return [(finding.field, finding.message, finding.fix) for finding in loaded.findings
            if finding.rule == "environment-overwritten-by-container"]


@pytest.mark.parametrize("mode", ["none", "torch_distributed"])
def test_nccl_debug_info_to_debug_a_hang_is_said_to_become_warn_with_the_line_for_the_script(tmp_path, mode):
    [(field, message, fix)] = _warnings(tmp_path, {"NCCL_DEBUG": "INFO"}, mode)
    assert field == "environment.NCCL_DEBUG"
    assert message == ("NCCL_DEBUG=INFO never reaches the training processes: the PyTorch toolkit sets it on every "
                       "host before it starts the script, so they see NCCL_DEBUG=WARN")
    assert 'os.environ["NCCL_DEBUG"] = "INFO"' in fix and "top of the script" in fix


def test_the_value_the_container_sets_anyway_is_not_warned_about(tmp_path):
    assert _warnings(tmp_path, {"NCCL_DEBUG": "WARN", "NCCL_IB_DISABLE": "1", "MASTER_ADDR": "algo-1",
                                "MASTER_PORT": "7777", "NCCL_SOCKET_IFNAME": "eth0", "OTHER": "x"}) == []


def test_nccl_ib_disable_0_on_an_efa_instance_is_said_to_become_1(tmp_path):
    [(_, message, fix)] = _warnings(tmp_path, {"NCCL_IB_DISABLE": "0"},
                                    instance={"type": "ml.p4d.24xlarge", "count": 2})
    assert message.endswith("so they see NCCL_IB_DISABLE=1")
    assert 'os.environ["NCCL_IB_DISABLE"] = "0"' in fix


def test_under_mpirun_nccl_debug_warn_becomes_info_and_custom_mpi_options_is_the_fix(tmp_path):
    [(_, message, fix)] = _warnings(tmp_path, {"NCCL_DEBUG": "WARN"}, "mpi", {"type": "ml.c5.2xlarge", "count": 2})
    assert message == ("NCCL_DEBUG=WARN never reaches the training processes: the toolkit's mpirun passes it to "
                       "every rank (the default of its --NCCL_DEBUG option), so they see NCCL_DEBUG=INFO")
    assert fix.startswith('set distribution.custom_mpi_options: "--NCCL_DEBUG WARN"')
    assert _warnings(tmp_path, {"NCCL_DEBUG": "WARN"}, "mpi", {"type": "ml.c5.2xlarge", "count": 2},
                     custom_mpi_options="--NCCL_DEBUG WARN") == []


def test_a_master_port_of_its_own_is_said_to_be_replaced_by_the_rendezvous(tmp_path):
    [(field, message, fix)] = _warnings(tmp_path, {"MASTER_PORT": "29400"}, "none")
    assert field == "environment.MASTER_PORT" and message.endswith("so they see MASTER_PORT=7777")
    assert fix.startswith("remove it")
    [(_, message, _)] = _warnings(tmp_path, {"MASTER_PORT": "7777"}, instance={"type": "ml.g5.12xlarge", "count": 1})
    assert "torchrun gives its workers its own rendezvous" in message and message.endswith("MASTER_PORT=29500")


def test_under_pytorchddp_whose_request_carries_no_mpirun_options_the_fix_is_the_script(tmp_path):
    [(_, message, fix)] = _warnings(tmp_path, {"NCCL_DEBUG": "WARN"}, "pytorchddp", {"type": "ml.p4d.24xlarge",
                                                                                     "count": 1})
    assert message.endswith("so they see NCCL_DEBUG=INFO")
    assert fix.startswith('set it at the top of the script') and 'os.environ["NCCL_DEBUG"] = "WARN"' in fix
