"""Steps until stopped, under mpirun (`python -m mpi4py` starts it; it makes no MPI call). On SIGTERM rank 0 takes
a second to save its checkpoint while the other ranks exit at once, as a job whose rank 0 alone checkpoints: the
other hosts' Open MPI daemons are then left without ranks while mpirun still waits for rank 0. With
--lose-host-at-step N, the last rank kills its host's Open MPI daemon (its parent) and itself with SIGKILL at step
N, as a host that dies."""

import argparse
import os
import signal
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("--lose-host-at-step", type=int, default=0)
args = parser.parse_args()
rank, size = int(os.environ["OMPI_COMM_WORLD_RANK"]), int(os.environ["OMPI_COMM_WORLD_SIZE"])


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
        os.kill(os.getppid(), signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(0.1)
