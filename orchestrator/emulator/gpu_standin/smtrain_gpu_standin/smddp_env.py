"""The per-rank environment of SMDDP's launcher, for the ranks the emulator starts in smddp and pytorchddp modes.

On the instance, the toolkit's mpirun starts every rank through SMDDP's ``smddprun`` (part of the SMDDP library,
not published), which gives each rank ``SMDATAPARALLEL_LOCAL_RANK``: transformers' Trainer reads it for
DistributedDataParallel's ``device_ids``. Here each rank takes it from Open MPI's local rank, at start-up
(``sitecustomize``) when the toolkit's smddp launch marks the process, and whenever the ``smdistributed``
stand-in is imported (a script started by a bare ``mpirun``). torch's own ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``
and ``LOCAL_WORLD_SIZE`` are filled the same way, so that ``init_process_group("smddp")`` (``env://``) finds
them. Values already set are kept. docs/smddp-environment.md lists every variable and its source.

Torch-free: ``sitecustomize`` runs it in every process, and the emulator and tests import the names.
"""

from __future__ import annotations

from collections.abc import MutableMapping

# Set by the toolkit's SMDataParallel runner on every rank (sagemaker-training, smdataparallel.py).
USE_SINGLENODE = "SMDATAPARALLEL_USE_SINGLENODE"
USE_HOMOGENEOUS = "SMDATAPARALLEL_USE_HOMOGENEOUS"
SERVER_ADDR = "SMDATAPARALLEL_SERVER_ADDR"
SERVER_PORT = "SMDATAPARALLEL_SERVER_PORT"
# Set per rank by smddprun (read by transformers' trainer.py).
LOCAL_RANK = "SMDATAPARALLEL_LOCAL_RANK"

FROM_OPEN_MPI = {
    LOCAL_RANK: "OMPI_COMM_WORLD_LOCAL_RANK",
    "RANK": "OMPI_COMM_WORLD_RANK",
    "WORLD_SIZE": "OMPI_COMM_WORLD_SIZE",
    "LOCAL_RANK": "OMPI_COMM_WORLD_LOCAL_RANK",
    "LOCAL_WORLD_SIZE": "OMPI_COMM_WORLD_LOCAL_SIZE",
}


def launched_by_smddp(environ: MutableMapping[str, str]) -> bool:
    """Whether the toolkit's SMDataParallel runner started this process (as one of mpirun's ranks)."""
    return "OMPI_COMM_WORLD_RANK" in environ and (USE_SINGLENODE in environ or USE_HOMOGENEOUS in environ)


def fill(environ: MutableMapping[str, str]) -> None:
    """Sets each rank variable that is unset from Open MPI's, where mpirun gave them."""
    for name, open_mpi in FROM_OPEN_MPI.items():
        if open_mpi in environ:
            environ.setdefault(name, environ[open_mpi])
