"""Every rank of an smddp or pytorchddp job gets the variables SMDDP's launcher gives it (docs/smddp-environment.md):
SMDATAPARALLEL_LOCAL_RANK, which transformers' Trainer reads for DistributedDataParallel's device_ids, and torch's
rank variables, from Open MPI's."""

from __future__ import annotations

import pytest

SMDDP_ENV = pytest.importorskip("orchestrator.emulator.gpu_standin.smtrain_gpu_standin.smddp_env")


def _open_mpi(rank: int, local_rank: int, size: int = 8, local_size: int = 4) -> dict[str, str]:
    return {"OMPI_COMM_WORLD_RANK": str(rank), "OMPI_COMM_WORLD_LOCAL_RANK": str(local_rank),
            "OMPI_COMM_WORLD_SIZE": str(size), "OMPI_COMM_WORLD_LOCAL_SIZE": str(local_size)}


def test_fill_gives_each_rank_its_smddp_and_torch_variables():
    environ = _open_mpi(rank=5, local_rank=1)
    SMDDP_ENV.fill(environ)
    assert {name: environ[name] for name in SMDDP_ENV.FROM_OPEN_MPI} == {
        "SMDATAPARALLEL_LOCAL_RANK": "1", "RANK": "5", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "4"}


def test_fill_keeps_values_already_set_and_invents_none():
    environ = {**_open_mpi(rank=2, local_rank=2), "SMDATAPARALLEL_LOCAL_RANK": "3"}
    SMDDP_ENV.fill(environ)
    assert environ["SMDATAPARALLEL_LOCAL_RANK"] == "3"
    empty: dict[str, str] = {}
    SMDDP_ENV.fill(empty)
    assert empty == {}


def test_the_toolkits_smddp_launch_marks_a_rank():
    assert SMDDP_ENV.launched_by_smddp({**_open_mpi(0, 0), "SMDATAPARALLEL_USE_SINGLENODE": "1"})
    assert SMDDP_ENV.launched_by_smddp({**_open_mpi(0, 0), "SMDATAPARALLEL_USE_HOMOGENEOUS": "1"})
    assert not SMDDP_ENV.launched_by_smddp(_open_mpi(0, 0))  # mpi mode: mpirun without SMDDP
    assert not SMDDP_ENV.launched_by_smddp({"SMDATAPARALLEL_USE_SINGLENODE": "1"})  # not a rank


@pytest.mark.slow
def test_ranks_of_an_smddp_launch_have_them_before_the_script_imports_anything(standin):
    env = standin.environment(num_gpus=4, SMDATAPARALLEL_USE_SINGLENODE="1")
    command = standin.mpirun(2, standin.scripts / "smddp_rank_environment.py")
    command[command.index("-np"):command.index("-np")] = ["-x", "SMDATAPARALLEL_USE_SINGLENODE"]
    lines = standin.json_lines(standin.run(command, env).stdout)
    seen = sorted((line["at_start"] for line in lines), key=lambda start: start["RANK"])
    assert seen == [{"SMDATAPARALLEL_LOCAL_RANK": str(rank), "RANK": str(rank), "WORLD_SIZE": "2",
                     "LOCAL_RANK": str(rank), "LOCAL_WORLD_SIZE": "2"} for rank in range(2)]
    assert all(line["after_import"] == line["at_start"] for line in lines)
