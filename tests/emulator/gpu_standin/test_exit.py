"""A GPU script's process group at exit: gloo, standing in for NCCL, must not add gloo's teardown abort.

Gloo's worker threads release a finished collective's tensors after it returns, which takes the GIL; one still
waiting for it when interpreter finalization begins aborts the process (bench/bench_exit_aborts.py counts how
often). The stand-in destroys the group at exit and yields the GIL to such threads first.
"""

from __future__ import annotations

import textwrap

import pytest

# A thread blocked in C (here on a lock, there on a finished collective) that then needs the GIL. The switch
# interval keeps the main thread from handing the GIL over on request, so the thread runs only if something at exit
# blocks or sleeps; the script itself ends without blocking after releasing it. Nothing is printed after that:
# writing could release the GIL too. The thread records once the group is destroyed: destroying it can itself hand
# the GIL over before it is done (seen on a loaded machine), so a thread that runs then waits for the rest.
SCRIPT = textwrap.dedent("""
    import sys, threading, time
    from pathlib import Path
    import torch, torch.distributed as dist

    dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1)
    total = torch.ones(1, device="cuda")
    dist.all_reduce(total)
    print(f"backend {dist.get_backend()}, total {total.item()}", flush=True)
    if sys.argv[1] == "destroy":
        dist.destroy_process_group()

    gate = threading.Lock()
    gate.acquire()
    def needs_the_gil():
        gate.acquire()
        while dist.is_initialized():  # destroying the group can hand the GIL over before it is done
            time.sleep(0.001)
        Path("ran").write_text(f"before finalization, group initialized: {dist.is_initialized()}")
    waiter = threading.Thread(target=needs_the_gil, daemon=True)
    waiter.start()
    sys.setswitchinterval(1000)
    gate.release()
""")


@pytest.mark.parametrize("script_destroys", [False, True], ids=["left-to-exit", "destroyed-by-script"])
def test_at_exit_the_group_is_destroyed_and_waiting_threads_get_the_gil(standin, script_destroys):
    (standin.work_dir / "exit_script.py").write_text(SCRIPT)
    result = standin.python("exit_script.py", "destroy" if script_destroys else "keep", num_gpus=1)
    assert "backend gloo, total 1.0" in result.stdout
    assert (standin.work_dir / "ran").is_file(), result.stderr
    assert (standin.work_dir / "ran").read_text() == "before finalization, group initialized: False"
    assert "destroy_process_group" not in result.stderr  # no "process group has NOT been destroyed" warning


def test_without_the_standin_the_waiting_thread_never_runs(standin):
    """The check above is not vacuous: nothing else at exit hands the GIL over (plain gloo, no stand-in)."""
    (standin.work_dir / "exit_script.py").write_text(SCRIPT.replace('"nccl"', '"gloo"').replace(', device="cuda"', ""))
    result = standin.python("exit_script.py", "destroy", num_gpus=None)
    assert "backend gloo, total 1.0" in result.stdout
    assert not (standin.work_dir / "ran").exists(), result.stderr
