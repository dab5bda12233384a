"""The CI smoke's verdict line (`smoke FAILED: N of M ranks started, ...`) is true of a fast failure: a rank whose
own lines, error or exit record the run holds has started, though it ended before the process list was read, and
the step reached is one this run showed, not a checkpoint an earlier run left in the prefix."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from types import SimpleNamespace

import pytest

from orchestrator.cli.local import _smoke_line
from orchestrator.emulator.instances.container import Host
from orchestrator.emulator.instances.hostname import HOSTNAME_VARIABLE
from orchestrator.emulator.launching.launch import HostProcess
from orchestrator.emulator.launching.toolkit_launchers import RunnerType, ToolkitCommand
from orchestrator.emulator.preparing.layout import RunLayout
from orchestrator.emulator.reporting.smoke import RankCensus, SmokeReport, checkpoint_entries, last_step
from orchestrator.observing.root_cause import MPI, PROCESS, TORCHRUN, Launcher, ranks_heard_from

INVOKED = ["Invoking script with the following command:", "", "/usr/bin/python -- train.py", ""]
IMPORT_ERROR = ["Traceback (most recent call last):", '  File "/opt/ml/code/train.py", line 3, in <module>',
                '    raise ValueError("bad config")', "ValueError: bad config"]


def _torchrun_summary(ranks: list[int]) -> list[str]:
    """torchrun's ChildFailedError summary as it prints it: the first failed rank as the root cause."""

    def entry(rank: int) -> list[str]:
        return [f"[{rank}]:", "  host      : localhost", f"  rank      : {rank} (local_rank: {rank})",
                f"  exitcode  : 1 (pid: {20 + rank})"]

    others = [line for rank in ranks[1:] for line in entry(rank)] or ["  <NO_OTHER_FAILURES>"]
    return ["torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ", "=" * 60, "train.py FAILED",
            "-" * 60, "Failures:", *others, "-" * 60, "Root Cause (first observed failure):", *entry(ranks[0]),
            "=" * 60]


def _torchrun_import_failure(ranks: int) -> list[str]:
    return [*INVOKED[:2], f"/usr/bin/torchrun --nnodes 1 --nproc_per_node {ranks} train.py", "",
            *IMPORT_ERROR * ranks,
            "E1128 09:47:14.400000 3 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) "
            "local_rank: 0 (pid: 20) of binary: /usr/bin/python", *_torchrun_summary(list(range(ranks)))]


def _census(tmp_path: Path, runner: RunnerType, hosts: int, per_host: int) -> RankCensus:
    argv = ["mpirun", "-np", str(hosts * per_host), "python", "train.py"] if runner is RunnerType.mpi else ["train.py"]
    names = [f"algo-{number}" for number in range(1, hosts + 1)]
    processes = [HostProcess(Host(name, tmp_path / name),
                             ToolkitCommand(runner, argv, per_host) if runner is not RunnerType.mpi or index == 0
                             else None, {}, {}, {}) for index, name in enumerate(names)]
    return RankCensus(processes, names, "train.py")


def _verdict(census: RankCensus, step: tuple[int | None, str | None]) -> tuple[str, dict]:
    """The console's line and the `smoke` key of `-o json` of a failed smoke, from one report as the run builds
    it."""
    report = SmokeReport(deadline_seconds=600, ranks_expected=census.expected, ranks_started=census.started,
                         missing=census.missing(), steps_reached=step[0], step_source=step[1], last_loss=None,
                         killed_after_deadline=[], steps_wanted=1)
    result = SimpleNamespace(smoke=report, status="Failed", exit_code=1, seconds=2.3)
    return _smoke_line(result, None), asdict(report)


NO_STEP = (None, None)


@pytest.mark.parametrize("ranks", [4, 1])
def test_a_script_failing_at_import_under_torchrun_started_all_its_ranks(tmp_path, ranks):
    census = _census(tmp_path, RunnerType.torch_distributed, hosts=1, per_host=ranks)
    census.heard_from(ranks_heard_from({"algo-1": _torchrun_import_failure(ranks)},
                                       Launcher(TORCHRUN, ("algo-1",), ranks), exit_codes={"algo-1": 1}))

    line, smoke = _verdict(census, NO_STEP)

    assert line.startswith(f"smoke FAILED: {ranks} of {ranks} ranks started, NO rank reached a step"), line
    assert (smoke["ranks_started"], smoke["missing"], smoke["steps_reached"]) == (ranks, [], None)


def test_a_script_failing_at_import_in_mode_none_started_on_one_host(tmp_path):
    census = _census(tmp_path, RunnerType.process, hosts=1, per_host=1)
    census.heard_from(ranks_heard_from({"algo-1": [*INVOKED, *IMPORT_ERROR]}, Launcher(PROCESS, ("algo-1",)),
                                       exit_codes={"algo-1": 1}))

    line, smoke = _verdict(census, NO_STEP)

    assert line.startswith("smoke FAILED: 1 of 1 ranks started, NO rank reached a step"), line
    assert (smoke["ranks_started"], smoke["missing"]) == (1, [])


def test_a_script_failing_at_import_in_mode_none_started_on_every_host(tmp_path):
    """Each host's one process is its rank: its own traceback, or smtrain's stop of it once the first failed."""
    hosts = ("algo-1", "algo-2", "algo-3", "algo-4")
    census = _census(tmp_path, RunnerType.process, hosts=4, per_host=1)
    logs = {"algo-1": [*INVOKED, *IMPORT_ERROR], "algo-2": [*INVOKED, *IMPORT_ERROR], "algo-3": INVOKED,
            "algo-4": [*INVOKED, *IMPORT_ERROR]}
    census.heard_from(ranks_heard_from(logs, Launcher(PROCESS, hosts),
                                       exit_codes={"algo-1": 1, "algo-2": 1, "algo-3": -15, "algo-4": 1}))

    line, _ = _verdict(census, NO_STEP)

    assert line.startswith("smoke FAILED: 4 of 4 ranks started"), line


def test_every_rank_an_mpi_hook_recorded_started(tmp_path):
    census = _census(tmp_path, RunnerType.mpi, hosts=2, per_host=2)
    recorded = {("algo-1", 0): 1, ("algo-1", 1): 1, ("algo-2", 2): -15, ("algo-2", 3): 1}
    census.heard_from(ranks_heard_from({"algo-1": INVOKED}, Launcher(MPI, ("algo-1", "algo-2"), 2),
                                       exit_codes={"algo-1": 1}, rank_exits=recorded))

    line, _ = _verdict(census, NO_STEP)

    assert line.startswith("smoke FAILED: 4 of 4 ranks started"), line


def test_a_rank_failing_after_step_1_shows_both_ranks_started_and_step_1(tmp_path):
    """Rank 0 was seen running; rank 1 ended before the process list was read, its own traceback in the log."""
    census = _census(tmp_path, RunnerType.torch_distributed, hosts=1, per_host=2)
    census.observe([_RankProcess("algo-1", 0)])
    lines = [*INVOKED[:2], "/usr/bin/torchrun --nnodes 1 --nproc_per_node 2 train.py", "", "step=1/10 loss=0.5",
             "[rank1]: Traceback (most recent call last):",
             '[rank1]:   File "/opt/ml/code/train.py", line 9, in <module>',
             "[rank1]: ValueError: labels missing on rank 1", *_torchrun_summary([1])]
    census.heard_from(ranks_heard_from({"algo-1": lines}, Launcher(TORCHRUN, ("algo-1",), 2),
                                       exit_codes={"algo-1": 1}))

    line, _ = _verdict(census, (1, "progress line"))

    assert line.startswith("smoke FAILED: 2 of 2 ranks started, step 1 reached (progress line)"), line


def test_torchrun_agents_that_never_started_their_workers_leave_every_rank_missing(tmp_path):
    """A hung smoke stopped at its deadline: the agents' own SIGTERM tracebacks name no rank."""
    census = _census(tmp_path, RunnerType.torch_distributed, hosts=2, per_host=1)
    agent = [*INVOKED[:3], "Traceback (most recent call last):",
             '  File "/usr/bin/torchrun", line 8, in <module>',
             '  File "/usr/lib/python3.11/site-packages/torch/distributed/run.py", line 919, in main',
             "torch.distributed.elastic.multiprocessing.api.SignalException: Process 3 got signal: 15"]
    census.heard_from(ranks_heard_from({"algo-1": agent, "algo-2": INVOKED}, Launcher(TORCHRUN, ("algo-1", "algo-2")),
                                       exit_codes={"algo-1": -15, "algo-2": -15}))

    line, smoke = _verdict(census, NO_STEP)

    assert line.startswith("smoke FAILED: 0 of 2 ranks started"), line
    assert smoke["missing"] == ["rank 0 (algo-1)", "rank 1 (algo-2)"]


def test_a_checkpoint_restored_from_an_earlier_run_is_no_step_reached(tmp_path):
    """A rerun in the same run directory receives the prefix's ckpt-1.pt before its script fails at import."""
    host = Host("algo-1", tmp_path / "algo-1")
    layout = RunLayout(tmp_path, (host,), "/opt/ml/checkpoints")
    host.checkpoint_dir.mkdir(parents=True)
    (host.checkpoint_dir / "ckpt-1.pt").write_text("from the run before")
    restored = checkpoint_entries(layout)

    assert last_step(layout, [], restored) == NO_STEP

    (host.checkpoint_dir / "ckpt-2.pt").write_text("saved by this run")
    assert last_step(layout, [], restored) == (2, "checkpoint")


class _RankProcess:
    """A worker as the process list shows it: its emulated host's name and its RANK."""

    def __init__(self, host: str, rank: int) -> None:
        self._env = {HOSTNAME_VARIABLE: host, "RANK": str(rank)}

    def environ(self) -> dict[str, str]:
        return self._env

    def cmdline(self) -> list[str]:
        return ["python", "train.py"]
