"""MPI check for SageMaker's ``mpi`` mode: a point-to-point ring, a broadcast and a gather-average-broadcast.

    mpirun -np 4 python -m mpi4py mpi_demo.py        # what SageMaker's mpi mode runs, from the master host

Every rank prints what it saw (rank, host, values received) and checks it; every rank exits 1 if any check
failed on any rank. Rank 0 writes the summary to ``$SM_MODEL_DIR/mpi_demo.json``. Needs mpi4py, not torch.
"""

from __future__ import annotations

import json
import os
import sys

import dist_env
from mpi4py import MPI

SUMMARY_FILE = "mpi_demo.json"


def main() -> int:
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    env = dist_env.detect(os.environ)
    left, right = (rank - 1) % size, (rank + 1) % size

    from_left = comm.sendrecv(rank, dest=right, source=left)
    message = comm.bcast({"sender": 0, "text": "hello from rank 0"} if rank == 0 else None, root=0)
    values = comm.gather(float(rank + 1), root=0)
    average = comm.bcast(sum(values) / size if rank == 0 else None, root=0)

    checks = {
        "detected_rank_matches_mpi": (env.rank, env.world_size) == (rank, size),
        "ring_received_left_neighbour": from_left == left,
        "broadcast_received": message == {"sender": 0, "text": "hello from rank 0"},
        "average_of_1_to_n": average == (size + 1) / 2,
    }
    failed = [name for name, passed in checks.items() if not passed]
    seen = {"rank": rank, "host": MPI.Get_processor_name(), "local_rank": env.local_rank,
            "node_rank": env.node_rank, "from_left": from_left, "broadcast": message, "average": average,
            "failed_checks": failed}
    print(f"rank {rank}/{size} on {seen['host']} (local rank {env.local_rank}, node {env.node_rank}): "
          f"got {from_left} from rank {left}, broadcast {message}, average {average}: "
          f"{'ok' if not failed else 'FAILED ' + ', '.join(failed)}", flush=True)

    everyone_passed = comm.allreduce(not failed, op=MPI.LAND)
    ranks = comm.gather(seen, root=0)
    if rank == 0:
        model_dir = dist_env.container_paths(os.environ).model_dir
        model_dir.mkdir(parents=True, exist_ok=True)
        summary = {"world_size": size, "all_checks_passed": everyone_passed, "ranks": ranks}
        (model_dir / SUMMARY_FILE).write_text(json.dumps(summary, indent=2) + "\n")
        print(f"mpi demo: {'all checks passed' if everyone_passed else 'some checks FAILED'} on {size} ranks; "
              f"summary in {model_dir / SUMMARY_FILE}", flush=True)
    return 0 if everyone_passed else 1


if __name__ == "__main__":
    sys.exit(main())
