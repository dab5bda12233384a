"""A plain mpi4py script: every rank contributes its rank to an allreduce; rank 0 writes the result."""

import json
import os

from mpi4py import MPI

comm = MPI.COMM_WORLD
total = comm.allreduce(comm.Get_rank(), op=MPI.SUM)
ranks = comm.gather({"rank": comm.Get_rank(), "local_rank": int(os.environ["OMPI_COMM_WORLD_LOCAL_RANK"])}, root=0)
if comm.Get_rank() == 0:
    with open(os.path.join(os.environ["SM_MODEL_DIR"], "allreduce.json"), "w") as handle:
        json.dump({"size": comm.Get_size(), "sum": total, "ranks": ranks}, handle)
print(f"rank {comm.Get_rank()} sum {total}", flush=True)
