"""smtrain's shared training entry point: the SageMaker ``source_dir`` runs it in every distribution mode.

Launch lines (hyperparameters as ``--key value``; see config.py for all of them):

    # one process (single CPU/GPU, or trainer dp over every GPU of the host)
    python train.py --model mlp --epochs 2
    # one host, 4 processes (torchrun sets RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, ...)
    torchrun --nproc-per-node 4 train.py --trainer gloo
    # two hosts, run on each with its --node-rank
    torchrun --nnodes 2 --nproc-per-node 8 --node-rank 0 --master-addr algo-1 --master-port 7777 train.py
    # Open MPI, 4 processes (add --allow-run-as-root as root, --oversubscribe for more ranks than cores)
    mpirun -np 4 python -m mpi4py train.py --trainer gloo
    # sharded: FSDP2 over 4 processes (GPUs, or CPUs over gloo); ZeRO-1 for the DDP trainers
    torchrun --nproc-per-node 4 train.py --trainer fsdp
    torchrun --nproc-per-node 4 train.py --trainer ddp --zero-stage 1
    # model parallel: one process per host, the model split over its GPUs (every stage on the CPU without CUDA)
    python train.py --trainer model_parallel --num-stages 2

How the SageMaker distribution modes map to them (docs/sagemaker-contract.md §7):

    none               python train.py on every host; rank from SM_HOSTS / SM_CURRENT_HOST, MASTER_ADDR from the
                       PyTorch toolkit (algo-1:7777)
    torch_distributed  torchrun on every host
    mpi                mpirun -np <hosts x processes_per_host> python -m mpi4py train.py, from the master host
    pytorchddp, smddp  mpirun (+ smddprun on GPU images) as for mpi; smddp mode selects the smddp backend

Exit status: 0 when training finished, and also after a SIGTERM (spot interruption, StopTrainingJob) once the
checkpoint is saved (the line ``interrupted: checkpoint saved at step N`` says which). Stopping is the platform's
decision, and a non-zero exit would make mpirun or torchrun kill the other ranks, possibly while rank 0 still
writes the checkpoint. On an error: 1 (2 for bad hyperparameters), after writing the exception type and
message to ``$SM_OUTPUT_DIR/failure``, which SageMaker shows as the job's FailureReason; the first rank to
write it wins.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path

import dist_env
from config import HyperparameterError, parse_config
from trainers import run_training


def main(argv: Sequence[str], environ: Mapping[str, str]) -> int:
    output_dir = dist_env.container_paths(environ).output_dir
    try:
        run_training(parse_config(argv, environ), environ)
    except HyperparameterError as error:
        print(f"train.py: error: {error}", file=sys.stderr)
        write_failure(output_dir, error)
        return 2
    except Exception as error:
        traceback.print_exc()
        write_failure(output_dir, error)
        return 1
    return 0


def write_failure(output_dir: Path, error: BaseException) -> None:
    """Writes ``<type>: <message>`` then the traceback to the failure file, unless someone already wrote it."""
    reason = f"{type(error).__name__}: {error}\n\n{''.join(traceback.format_exception(error))}"
    try:
        output_dir.mkdir(parents=True, exist_ok=True)
        with (output_dir / dist_env.FAILURE_FILE).open("x") as handle:
            handle.write(reason)
    except FileExistsError:
        pass  # another rank, or an earlier attempt, got there first: its reason is the one SageMaker shows
    except OSError as write_error:
        print(f"smtrain: could not write {output_dir / dist_env.FAILURE_FILE}: {write_error}", file=sys.stderr)


def leave(code: int) -> None:
    """Ends the process without interpreter finalization, once everything the run writes is closed and on disk.

    Gloo's worker threads release a finished collective's tensors after it returns, which takes the GIL; one that
    asks for it once finalization has begun is ended inside a C++ frame and aborts the process ("terminate called
    without an active exception", exit 134 or 139; seen with gdb). A rank that had finished its work failed the
    2-host gloo example so in 1 of 5 full suite runs, despite run_training's collection; a finished 2-rank DDP
    script on plain gloo aborts so in 7 of 40 runs (bench/bench_exit_aborts.py, README). Leaving here skips
    finalization altogether (tests/entrypoints/test_train_exit.py fails without it).
    """
    mpi = sys.modules.get("mpi4py.MPI")  # under `python -m mpi4py`: what its exit handler would have done
    if mpi is not None and mpi.Is_initialized() and not mpi.Is_finalized():
        mpi.Finalize()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    leave(main(sys.argv[1:], os.environ))
