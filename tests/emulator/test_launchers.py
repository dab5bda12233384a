"""One rule says which of a run's processes are launchers rather than ranks, for the supervisor and the stack
collector alike: torchrun's agent, by script or module, a host's namespace holder, shells and Open MPI's."""

from orchestrator.emulator.supervising.launchers import is_launcher_command


def test_launchers_by_name_script_or_module_and_ranks_are_not():
    assert is_launcher_command("pt_elastic", ["/venv/bin/python", "/venv/bin/torchrun", "--nproc-per-node", "4"])
    assert is_launcher_command("python", ["python", "-m", "torch.distributed.run", "train.py"])
    assert is_launcher_command("python", ["python", "-I", "-S", "/x/orchestrator/emulator/launching/hostfs.py"])
    assert is_launcher_command("mpirun", ["mpirun", "-np", "8", "python", "train.py"])
    # the MPI hook that starts each rank and waits for it: the rank is its child, whose stack a hang shows
    assert is_launcher_command("python", ["python", "-I", "-S", "/x/orchestrator/emulator/launching/mpi_hooks.py",
                                          "exec", "python", "-m", "mpi4py", "train.py"])
    assert is_launcher_command("sh", ["/bin/sh", "-c", "python train.py"])
    assert not is_launcher_command("python", ["python", "--", "train.py", "--epochs", "3"])
    assert not is_launcher_command("python", ["python", "train.py", "--a", "b", "torchrun"])  # past argv[3]
