"""A local run given `--processes-per-host` whose smtrain was killed wrote no cause of its own: `smtrain status`
reads it from the logs by the launcher status.json describes. That assumed the instance's GPUs per host (4 on an
ml.g5.12xlarge) where the run started 2, and named algo-2's failed local rank 1 as rank 5 of a world that had
only 4. status.json records the processes per host the run was given, and the reading uses them."""

from __future__ import annotations

import json

from click.testing import CliRunner
from local_run_dirs import written_run_dir

from orchestrator.cli.main import main
from orchestrator.emulator.supervising.status import StatusReport, now

# torchrun's report of a worker that failed, with no command line before it: a long log's tail no longer holds it.
ALGO2 = """Traceback (most recent call last):
  File "/opt/ml/code/train.py", line 48, in main
    batch = collate(items)
TypeError: expected Tensor as element 3 in argument 0, but got NoneType
E1126 10:41:01.554000 31 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) local_rank: 1 (pid: 92) of binary: /usr/bin/python3
"""
REQUEST = {"TrainingJobName": "ddp", "ResourceConfig": {"InstanceType": "ml.g5.12xlarge", "InstanceCount": 2},
           "HyperParameters": {"sagemaker_torch_distributed_enabled": "true"}}


def _local_run_record(tmp_path, processes_per_host: int | None) -> dict:
    """The LocalRun record a run's status.json starts with, as `smtrain local` writes it."""
    StatusReport(tmp_path, REQUEST, now(), processes_per_host=processes_per_host).preparing()
    return json.loads((tmp_path / "status.json").read_text())["LocalRun"]


def _failing_rank(tmp_path, processes_per_host: int | None) -> int:
    record = {**_local_run_record(tmp_path, processes_per_host), "pid": 2**22 + 1}  # its smtrain is gone
    run_dir = written_run_dir(tmp_path / "run", {"algo-1": "", "algo-2": ALGO2}, LocalRun=record,
                              ResourceConfig=REQUEST["ResourceConfig"], HyperParameters=REQUEST["HyperParameters"])
    shown = CliRunner().invoke(main, ["status", str(run_dir), "-o", "json"])
    assert shown.exit_code == 0, shown.output
    cause = json.loads(shown.stdout)["failure_cause"]
    assert cause["host"] == "algo-2" and "TypeError" in cause["exception"], cause
    return cause["rank"]


def test_a_killed_run_given_fewer_processes_per_host_names_the_rank_it_ran(tmp_path):
    assert _failing_rank(tmp_path, processes_per_host=2) == 3


def test_without_the_option_the_instances_gpus_per_host_count(tmp_path):
    assert _failing_rank(tmp_path, processes_per_host=None) == 5
