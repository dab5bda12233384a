"""Steps until stopped, under mpirun (`python -m mpi4py` starts it; it makes no MPI call). On SIGTERM rank 0 takes
a second to save its checkpoint while the other ranks exit at once, as a job whose rank 0 alone checkpoints: the
other hosts' Open MPI daemons are then left without ranks while mpirun still waits for rank 0. With
--lose-host-at-step N, the last rank kills its host's Open MPI daemon, the hook between them and itself with
SIGKILL at step N, as a host that dies: nothing on it is left to report how its rank ended."""

import argparse
import os
import signal
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("--lose-host-at-step", type=int, default=0)
args = parser.parse_args()
rank, size = int(os.environ["OMPI_COMM_WORLD_RANK"]), int(os.environ["OMPI_COMM_WORLD_SIZE"])


def up_to_the_daemon() -> list[int]:
    """This rank's ancestors up to its host's Open MPI daemon (prted; Open MPI 4: orted), the daemon first."""
    found, pid = [], os.getppid()
    while pid > 1:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
            said = stat.read()
        found.append(pid)
        if said[said.index("(") + 1:said.rindex(")")] in ("prted", "orted"):
            return found[::-1]
        pid = int(said[said.rindex(")") + 2:].split()[1])
    sys.exit("no Open MPI daemon above this rank")


def stop(*_: object) -> None:
    if rank == 0:
        time.sleep(1)
        print("checkpoint saved", flush=True)
    sys.exit(0)


signal.signal(signal.SIGTERM, stop)
step = 0
while True:
    step += 1
    print(f"step={step}/100000 loss={1 / step:.6f}", flush=True)
    if step == args.lose_host_at_step and rank == size - 1:
        for pid in [*up_to_the_daemon(), os.getpid()]:
            os.kill(pid, signal.SIGKILL)
    time.sleep(0.1)
