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


# DDP's bf16 gradient compression finishes each bucket in Python callbacks on a gloo thread, which then takes the
# GIL again to release them; without the stand-in's yield, the group's destructor (run when the DDP model that
# holds it is dropped) may join that thread while holding the GIL, and both wait for ever. A race: here it hung
# after 36, 68, 91 and 207 rounds in four runs of 300 (0.06 s a round with the yield, 19.6 s in all). faulthandler
# ends a hang with every stack.
HOOKED_DDP = textwrap.dedent("""
    import faulthandler
    import torch, torch.distributed as dist
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

    faulthandler.dump_traceback_later(120, exit=True)
    for step in range(300):
        dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1)
        ddp = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 2).cuda(), device_ids=[0])
        ddp.register_comm_hook(None, default_hooks.bf16_compress_hook)
        ddp(torch.randn(8, 4).cuda()).sum().backward()
        dist.destroy_process_group()
        del ddp
    print("300 groups destroyed after their hooks' collectives", flush=True)
""")


@pytest.mark.slow
def test_destroying_a_group_after_python_callbacks_on_its_collectives_does_not_hang(standin):
    """Seen in this suite's own API probe (a bf16-hooked DDP, then destroy_process_group): the process hung at the
    function's return with the main thread in ~ProcessGroupGloo joining a gloo thread that waited for the GIL."""
    (standin.work_dir / "hooked_ddp.py").write_text(HOOKED_DDP)
    result = standin.python("hooked_ddp.py", num_gpus=1)
    assert "300 groups destroyed after their hooks' collectives" in result.stdout, result.stderr[-3000:]
