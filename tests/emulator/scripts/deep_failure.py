"""Rank 1 fails deep in its own code while rank 0 waits in a collective (an MPI barrier)."""

from mpi4py import MPI


def encoder(depth):
    return decoder(depth - 1) if depth else check_shapes()


def decoder(depth):
    return encoder(depth - 1) if depth else check_shapes()


def check_shapes():
    raise ValueError("shape mismatch in layer 7: (32, 64) vs (32, 48)")


comm = MPI.COMM_WORLD
if comm.Get_rank() == 1:
    print("rank 1 building the model", flush=True)
    encoder(24)
comm.Barrier()
