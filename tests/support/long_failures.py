"""A 16-rank torchrun job (2 hosts, 8 ranks each) whose rank 3 raises and whose logs go on long after it: the other
15 ranks' NCCL teardown tracebacks, a warnings flood of any length, then torchrun's ChildFailedError report. Shared
by the tests that read such a job's cause from CloudWatch and from a local run's logs."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from recorded_sagemaker_logs import toolkit_failure, toolkit_start

from orchestrator.emulator import local_run
from orchestrator.emulator.launching.toolkit_launchers import RunnerType
from orchestrator.emulator.supervising.supervisor import FAILURE_TAIL_LINES, Exit, Outcome
from orchestrator.observing.root_cause import FailureCause, SourcePaths

COMMAND = ("torchrun --nnodes 2 --nproc_per_node 8 --master_addr algo-1 --master_port 7777 --node_rank {node} "
           "train.py --epochs 3")
HEADLINE = "algo-1 (rank 3) failed: ValueError: shard 7 has 0 samples at train.py:48"
RANK_3_TRACEBACK = [f"[rank3]: {line}" for line in (
    "Traceback (most recent call last):",
    '  File "/opt/ml/code/train.py", line 70, in <module>',
    "    main()",
    '  File "/opt/ml/code/train.py", line 48, in main',
    "    loader = shard_loader(args.shard)",
    "ValueError: shard 7 has 0 samples")]


def _teardown(rank: int) -> list[str]:
    """What a rank prints when a peer it shares a collective with exits: NCCL's error, under its rank's prefix."""
    return [f"[rank{rank}]: {line}" for line in (
        "Traceback (most recent call last):",
        '  File "/opt/ml/code/train.py", line 61, in main',
        "    dist.all_reduce(loss)",
        "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, remote process exited or "
        "there was a network error, NCCL version 2.21.5")]


def _torchrun_report(node: int) -> list[str]:
    failed = [(3, 1)] if node == 0 else [(8, 1)]
    lines = ["Traceback (most recent call last):", '  File "/opt/conda/bin/torchrun", line 8, in <module>',
             "    sys.exit(main())", "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
             "============================================================", "train.py FAILED",
             "------------------------------------------------------------", "Root Cause (first observed failure):"]
    for index, (rank, code) in enumerate(failed):
        lines += [f"[{index}]:", "  time      : 2026-11-26_10:41:01", f"  host      : algo-{node + 1}",
                  f"  rank      : {rank} (local_rank: {rank % 8})", f"  exitcode  : {code} (pid: {90 + rank})",
                  "  error_file: <N/A>"]
    return [*lines, "============================================================"]


def warnings_flood(count: int) -> list[str]:
    """`count` lines of the kind a job prints while it winds down: a library's warnings, none of them an error."""
    return [f"/opt/conda/lib/python3.11/site-packages/torch/utils/data/dataloader.py:{558 + index % 40}: UserWarning: "
            f"worker {index % 16} is still releasing pinned buffer {index}" for index in range(count)]


def rank_3_fails_then(noise: int) -> dict[str, list[str]]:
    """Each host's log, algo-1's with `noise` lines of warnings between the ranks' errors and torchrun's report."""
    logs = {}
    for node in (0, 1):
        ranks = range(node * 8, node * 8 + 8)
        lines = [*toolkit_start(COMMAND.format(node=node)), "epoch=1 step=10/90 train_loss=0.812345"]
        if node == 0:
            lines += RANK_3_TRACEBACK
        lines += [line for rank in ranks if rank != 3 for line in _teardown(rank)]
        lines += warnings_flood(noise) if node == 0 else []
        logs[f"algo-{node + 1}"] = [*lines, *_torchrun_report(node), *toolkit_failure(1)]
    return logs


def cause_at_the_end_of(run_dir: Path, logs: dict[str, list[str]]) -> FailureCause | None:
    """What a 2-host torchrun run with these logs stores as its cause when it ends: the supervisor's tails are the
    last FAILURE_TAIL_LINES lines each host printed; logs/algo-N.log holds every line."""
    (run_dir / "logs").mkdir(parents=True)
    for host, lines in logs.items():
        (run_dir / "logs" / f"{host}.log").write_text("\n".join(lines) + "\n")
    hosts = [SimpleNamespace(name=host) for host in logs]
    prepared = SimpleNamespace(layout=SimpleNamespace(hosts=hosts, logs_dir=run_dir / "logs"), group_hosts=list(logs),
                               plan=SimpleNamespace(spec=SimpleNamespace(framework_version="2.3.0", image_uri=None)),
                               source_paths=SourcePaths())
    processes = [SimpleNamespace(toolkit=SimpleNamespace(runner=RunnerType.torch_distributed, processes_per_host=8))]
    outcome = Outcome("failed", [Exit(host, 1) for host in logs],
                      tails={host: lines[-FAILURE_TAIL_LINES:] for host, lines in logs.items()})
    return local_run.failure_cause(prepared, processes, outcome)
