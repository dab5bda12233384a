"""A SageMaker job's failure, read from its CloudWatch streams by the reader local runs use: the same words and the
same `failure_cause` fields for the same logs, and each common cause classified with its fix.

CloudWatch Logs is moto's server, the streams named and split into events as SageMaker writes them
(`<job>/algo-N-<epoch>`, one event per line). DescribeTrainingJob comes from botocore's Stubber: moto creates
every job Completed at once and cannot play a Failed or Stopped one."""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner
from job_fakes import GPU_INSTANCE, SubmittedFrom, described, seed_lines
from recorded_sagemaker_logs import (
    DATALOADER_WORKER_KILLED,
    FAILURE_REASON_LIMIT,
    NCCL_PEER_LOST,
    PYTHON,
    TORCH_SAVE_DISK_FULL,
    TORCHRUN_COMMAND,
    TRANSFORMERS_CONFIG_NOT_FOUND,
    failure_reason,
    nccl_error,
    nccl_watchdog_timeout,
    steps,
    toolkit_failure,
    toolkit_failure_reason,
    toolkit_start,
)

from orchestrator.backends.job import Job as BackendJob
from orchestrator.backends.sagemaker import SageMakerBackend
from orchestrator.cli.main import main
from orchestrator.cloud.jobs import JobClient
from orchestrator.contract import RUN_MARKER_FILE
from orchestrator.specs.image_packages import image_packages


def failed(name: str, mode: str = "torch_distributed", **extra) -> dict:
    hyperparameters = {"sagemaker_program": '"train.py"'}
    if mode == "torch_distributed":
        hyperparameters["sagemaker_torch_distributed_enabled"] = "true"
    elif mode == "mpi":
        hyperparameters.update({"sagemaker_mpi_enabled": "true", "sagemaker_mpi_num_of_processes_per_host": "4"})
    return described(name, extra.pop("status", "Failed"), extra.pop("secondary", "Failed"),
                     HyperParameters=hyperparameters, TrainingEndTime=datetime.now(timezone.utc),
                     FailureReason=extra.pop("reason", "AlgorithmError: ExecuteUserScriptError:\nExitCode 1\n"
                                                       'ErrorMessage ""'), **extra)


# A 2-host torchrun job, 4 ranks per host: rank 5 (algo-2) raises; torchrun stops its host's other ranks, and
# algo-1's ranks lose their peer. Rank 5's traceback is interleaved with rank 4's and rank 6's lines.
ALGO1 = """\
Invoking script with the following command:

torchrun --nnodes 2 --nproc_per_node 4 --master_addr algo-1 --master_port 7777 --node_rank 0 train.py --epochs 3
epoch=1 step=10/90 train_loss=0.812345
[rank0]: Traceback (most recent call last):
[rank0]:   File "/opt/ml/code/train.py", line 61, in <module>
[rank0]:     dist.all_reduce(loss)
[rank0]: torch.distributed.DistBackendError: [../gloo/transport/tcp/pair.cc:537] Read error: Connection reset by peer
E1126 10:41:01.543000 23094 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) local_rank: 0 (pid: 80) of binary: /opt/conda/bin/python3.11
Traceback (most recent call last):
  File "/opt/conda/bin/torchrun", line 8, in <module>
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-11-26_10:41:01
  host      : algo-1
  rank      : 0 (local_rank: 0)
  exitcode  : 1 (pid: 80)
  error_file: <N/A>
============================================================""".splitlines()
ALGO2 = """\
Invoking script with the following command:

torchrun --nnodes 2 --nproc_per_node 4 --master_addr algo-1 --master_port 7777 --node_rank 1 train.py --epochs 3
[rank5]: Traceback (most recent call last):
[rank5]:   File "/opt/ml/code/train.py", line 70, in <module>
rank 4 step 11 loss 0.80
[rank5]:     main()
[rank6]: waiting for the all-reduce of step 11
[rank5]:   File "/opt/ml/code/train.py", line 48, in main
[rank5]:     batch = collate(items)
[rank5]:   File "/opt/conda/lib/python3.11/site-packages/torch/utils/data/_utils/collate.py", line 277, in collate
[rank5]:     return torch.stack(batch)
[rank5]: TypeError: expected Tensor as element 3 in argument 0, but got NoneType
W1126 10:41:01.101000 31 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 91 closing signal SIGTERM
W1126 10:41:01.102000 31 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 93 closing signal SIGTERM
E1126 10:41:01.554000 31 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) local_rank: 1 (pid: 92) of binary: /opt/conda/bin/python3.11
Traceback (most recent call last):
  File "/opt/conda/bin/torchrun", line 8, in <module>
    sys.exit(main())
  File "/opt/conda/lib/python3.11/site-packages/torch/distributed/launcher/api.py", line 263, in launch_agent
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2026-11-26_10:41:01
  host      : algo-2
  rank      : 4 (local_rank: 0)
  exitcode  : -15 (pid: 91)
  error_file: <N/A>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-11-26_10:41:01
  host      : algo-2
  rank      : 5 (local_rank: 1)
  exitcode  : 1 (pid: 92)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
2026-11-26 10:41:02,001 sagemaker-training-toolkit ERROR    Reporting training FAILURE
ExecuteUserScriptError:
ExitCode 1""".splitlines()
HEADLINE = ("algo-2 (rank 5) failed: TypeError: expected Tensor as element 3 in argument 0, but got NoneType "
            "at train.py:48")


def test_a_failed_two_host_torchrun_job_names_rank_5_as_a_local_run_of_the_same_logs_does(stubbed_sagemaker,
                                                                                           tmp_path):
    stubbed_sagemaker.stubbers["sagemaker"].add_response("describe_training_job", failed("ddp-fail"))
    seed_lines("ddp-fail", {"algo-1": ALGO1, "algo-2": ALGO2})
    cloud = json.loads(CliRunner().invoke(main, ["status", "ddp-fail", "-o", "json"], obj=stubbed_sagemaker).stdout)

    run_dir = _local_run(tmp_path / "ddp-fail", {"algo-1": ALGO1, "algo-2": ALGO2})
    local_shown = CliRunner().invoke(main, ["status", str(run_dir)])
    local = json.loads(CliRunner().invoke(main, ["status", str(run_dir), "-o", "json"]).stdout)

    assert cloud["failure_cause"]["headline"] == HEADLINE
    assert cloud["failure_cause"] == local["failure_cause"]
    assert cloud["failing_host"] == local["failing_host"] == "algo-2"
    assert (cloud["failure_cause"]["host"], cloud["failure_cause"]["rank"]) == ("algo-2", 5)
    rows = dict(re.findall(r"^  (\w+) +(.*)$", local_shown.stdout, re.MULTILINE))
    assert rows["cause"] == HEADLINE


RANK_5_OWN_LINES = [line for line in ALGO2 if line.startswith("[rank5]: ")]


def _last_lines(shown: str) -> tuple[str, list[str]]:
    """`status`'s "last lines of ..." heading and the lines under it (`[algo-N] line`)."""
    heading, _, rest = shown.partition("  last lines of ")
    assert rest, shown
    title, *lines = rest.splitlines()
    return title, [line.removeprefix("    ") for line in lines]


def test_status_of_a_failed_torchrun_job_shows_the_failing_ranks_own_last_lines_not_torchruns_report(
        stubbed_sagemaker, tmp_path):
    """torchrun's `ChildFailedError` block ends the host's log, after the rank's traceback (each line of which
    torch.distributed prefixes `[rank5]:`): the rank's lines are what the cause above them was read from."""
    stubbed_sagemaker.stubbers["sagemaker"].add_response("describe_training_job", failed("ddp-lines"))
    seed_lines("ddp-lines", {"algo-1": ALGO1, "algo-2": ALGO2})
    cloud = CliRunner().invoke(main, ["status", "ddp-lines"], obj=stubbed_sagemaker).stdout
    run_dir = _local_run(tmp_path / "ddp-lines", {"algo-1": ALGO1, "algo-2": ALGO2})
    (run_dir / "result.json").write_text(json.dumps({"failure_cause": {"host": "algo-2", "rank": 5,
                                                                       "exception": HEADLINE.split(": ", 1)[1]}}))
    local = CliRunner().invoke(main, ["status", str(run_dir)]).stdout
    local_json = json.loads(CliRunner().invoke(main, ["status", str(run_dir), "-o", "json"]).stdout)

    for shown in (cloud, local):
        title, lines = _last_lines(shown)
        assert lines == [f"[algo-2] {line}" for line in RANK_5_OWN_LINES]
        assert title == "algo-2 rank 5 (the rank that failed first, its own lines)"
    assert (local_json["failing_rank"], local_json["failing_host_last_lines"]) == (5, RANK_5_OWN_LINES)


def test_status_of_a_failed_mpi_job_shows_the_failing_ranks_lines_from_the_masters_stream(stubbed_sagemaker):
    """mpirun prints every rank's lines on the master (algo-1), tagged with the rank and its host."""
    raised = [f"[1,mpirank:5,algo-2]<stderr>:{line}" for line in (
        "Traceback (most recent call last):", '  File "/opt/ml/code/train.py", line 9, in <module>',
        "ValueError: labels missing")]
    master = ["[1,mpirank:0,algo-1]<stdout>:step 7", *raised, "[1,mpirank:4,algo-2]<stdout>:step 7",
              "--------------------------------------------------------------------------",
              "mpirun.real detected that one or more processes exited with non-zero status, thus causing",
              "the job to be terminated. The first process to do so was:", "",
              "  Process name: [[7462,1],5]", "  Exit code:    1",
              "--------------------------------------------------------------------------"]
    stubbed_sagemaker.stubbers["sagemaker"].add_response("describe_training_job", failed("mpi-lines", mode="mpi"))
    seed_lines("mpi-lines", {"algo-1": master, "algo-2": ["Invoking script with the following command:", "",
                                                    "/opt/conda/bin/python3.11 train.py"]})

    title, lines = _last_lines(CliRunner().invoke(main, ["status", "mpi-lines"], obj=stubbed_sagemaker).stdout)

    assert lines == [f"[algo-1] {line}" for line in raised]
    assert title == "algo-2 rank 5 (the rank that failed first, its own lines)"


def test_an_mpi_ranks_traceback_under_torchs_rank_prefix_too_names_the_rank_and_its_line(stubbed_sagemaker):
    """After init_process_group torch prefixes each line of an uncaught error `[rank6]: `, and mpirun tags that line
    again: `[1,mpirank:6,algo-2]<stderr>:[rank6]: Traceback ...`. Before: no traceback was found inside the two
    prefixes, and status said `the job exited with code 1`, with no host, rank or line."""
    raised = [f"[1,mpirank:6,algo-2]<stderr>:[rank6]: {line}" for line in (
        "Traceback (most recent call last):", '  File "/opt/ml/code/train.py", line 77, in <module>', "    main()",
        '  File "/opt/ml/code/train.py", line 50, in main', "    labels = batch['labels']", "KeyError: 'labels'")]
    master = ["[1,mpirank:0,algo-1]<stdout>:step 7", *raised,
              "--------------------------------------------------------------------------",
              "mpirun.real detected that one or more processes exited with non-zero status, thus causing",
              "the job to be terminated. The first process to do so was:", "",
              "  Process name: [[7462,1],6]", "  Exit code:    1",
              "--------------------------------------------------------------------------"]
    stubbed_sagemaker.stubbers["sagemaker"].add_response("describe_training_job", failed("mpi-prefixed", mode="mpi"))
    seed_lines("mpi-prefixed", {"algo-1": master, "algo-2": ["Invoking script with the following command:"]})

    shown = json.loads(CliRunner().invoke(main, ["status", "mpi-prefixed", "-o", "json"], obj=stubbed_sagemaker).stdout)

    assert shown["failure_cause"]["headline"] == "algo-2 (rank 6) failed: KeyError: 'labels' at train.py:50"
    assert (shown["failing_rank"], shown["failing_host_last_lines"]) == (6, raised)


def test_status_shows_the_hosts_last_lines_where_no_ranks_lines_can_be_told_apart(stubbed_sagemaker):
    """A rank killed by a signal prints no traceback: torchrun's report on its host is all there is."""
    host_lines = ["epoch=1 step=3/90 train_loss=0.9",
                  "E1126 10:41:01.554000 31 torch/distributed/elastic/multiprocessing/api.py:1002] failed "
                  "(exitcode: -9) local_rank: 0 (pid: 92) of binary: /opt/conda/bin/python3.11",
                  "Root Cause (first observed failure):", "[0]:", "  host      : algo-1",
                  "  rank      : 0 (local_rank: 0)", "  exitcode  : -9 (pid: 92)", "  error_file: <N/A>"]
    stubbed_sagemaker.stubbers["sagemaker"].add_response("describe_training_job", failed("ddp-killed"))
    seed_lines("ddp-killed", {"algo-1": host_lines})

    title, lines = _last_lines(CliRunner().invoke(main, ["status", "ddp-killed"], obj=stubbed_sagemaker).stdout)

    assert (title, lines) == ("algo-1 (the host that failed first)", [f"[algo-1] {line}" for line in host_lines])


def test_the_job_handle_and_submit_wait_name_the_source_dir_the_spec_names(stubbed_sagemaker, tmp_path,
                                                                            monkeypatch):
    stubbed_sagemaker.stubbers["sagemaker"].add_response("describe_training_job", failed("ddp-handle"))
    seed_lines("ddp-handle", {"algo-1": ALGO1, "algo-2": ALGO2})
    monkeypatch.chdir(tmp_path)
    (tmp_path / "src").mkdir()

    cause = JobClient("ddp-handle", stubbed_sagemaker, SubmittedFrom(tmp_path / "src")).failure_cause()

    assert cause.headline() == HEADLINE.replace("at train.py:48", "at src/train.py:48")


def _local_run(run_dir: Path, logs: dict[str, list[str]]) -> Path:
    """A local run directory as `smtrain local` leaves a failed run: its marker, status.json, logs/algo-N.log."""
    (run_dir / "logs").mkdir(parents=True)
    (run_dir / RUN_MARKER_FILE).touch()
    for host, lines in logs.items():
        (run_dir / "logs" / f"{host}.log").write_text("\n".join(lines) + "\n")
    status = failed(run_dir.name)
    status = {key: value.isoformat() if isinstance(value, datetime) else value for key, value in status.items()}
    (run_dir / "status.json").write_text(json.dumps(status))
    return run_dir


def cause_of(stubbed_sagemaker, name: str, logs: dict[str, list[str]], **job) -> dict:
    stubbed_sagemaker.stubbers["sagemaker"].add_response("describe_training_job", failed(name, **job))
    seed_lines(name, logs)
    shown = CliRunner().invoke(main, ["status", name, "-o", "json"], obj=stubbed_sagemaker)
    assert shown.exit_code == 0, shown.output
    return json.loads(shown.stdout)["failure_cause"]


def traceback(rank: int, *last: str) -> list[str]:
    return [f"[rank{rank}]: {line}" for line in ["Traceback (most recent call last):",
                                                   '  File "/opt/ml/code/train.py", line 30, in <module>',
                                                   "    step(batch)", *last]]


def test_cuda_out_of_memory(stubbed_sagemaker):
    cause = cause_of(stubbed_sagemaker, "oom-cuda", {"algo-1": traceback(0, (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
        "22.06 GiB of which 1.2 GiB is free."))})
    assert cause["category"] == "cuda_out_of_memory" and cause["rank"] == 0
    assert "lower the per-device batch size" in cause["fix"]


def test_nccl_watchdog_timeout(stubbed_sagemaker):
    cause = cause_of(stubbed_sagemaker, "nccl-timeout", {"algo-2": [
        "[rank1]:[E1126 10:41:01.123] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, "
        "OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600016 milliseconds before timing out.",
        "terminate called after throwing an instance of 'c10::DistBackendError'",
        "  what():  [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE)"]})
    assert cause["category"] == "collective_timeout" and (cause["host"], cause["rank"]) == ("algo-2", 1)
    assert "some rank stopped joining it" in cause["fix"]


def test_an_nccl_system_error_is_a_network_failure_between_the_hosts_not_a_collective_timeout(stubbed_sagemaker):
    """NCCL's `unhandled system error` (a socket it could not connect, on a job in a VPC usually a security group
    that does not let the hosts reach each other). Before: `collective_timeout`, whose fix says to find a stalled
    rank and raise the process group's timeout, neither of which helps a connection that is refused."""
    refused = nccl_error(3, "unhandled system error (run with NCCL_DEBUG=INFO for details)",
                         ("ncclSystemError: System call (e.g. socket, malloc) or external library call failed or "
                          "device error."), "Last error:",
                         "socketStartConnect: Connect to 10.0.142.17<43127> failed : Software caused connection abort")
    cause = cause_of(stubbed_sagemaker, "nccl-system", {
        "algo-1": [*toolkit_start(TORCHRUN_COMMAND.format(node=0)), *refused,
                   *_torchrun_summary("algo-1", (3, 3, 1), []), *toolkit_failure(1, TORCHRUN_COMMAND.format(node=0))],
        "algo-2": toolkit_start(TORCHRUN_COMMAND.format(node=1))})
    assert (cause["host"], cause["rank"], cause["location"]) == ("algo-1", 3, "train.py:40")
    assert cause["category"] == "nccl_system_error"
    assert "security group" in cause["fix"] and "NCCL_DEBUG=INFO" in cause["fix"]
    assert "raise the process group's timeout" not in cause["fix"]


def test_an_argparse_rejection_of_a_hyperparameter(stubbed_sagemaker):
    cause = cause_of(stubbed_sagemaker, "bad-args", {"algo-1": [
        "usage: train.py [-h] [--epochs EPOCHS] [--lr LR]",
        "train.py: error: unrecognized arguments: --learning_rate 0.1"]}, mode="none")
    assert cause["headline"] == "algo-1 (rank 0) failed: train.py: error: unrecognized arguments: --learning_rate 0.1"
    assert cause["category"] == "argument_rejected" and cause["detail"] == [
        "usage: train.py [-h] [--epochs EPOCHS] [--lr LR]"]
    assert "rejects --learning_rate" in cause["fix"]


def test_an_import_error_names_the_images_packages(stubbed_sagemaker):
    cause = cause_of(stubbed_sagemaker, "no-module", {"algo-1": [
        "Traceback (most recent call last):", '  File "/opt/ml/code/train.py", line 3, in <module>',
        "    import wandb", "ModuleNotFoundError: No module named 'wandb'"]}, mode="none")
    shipped = sorted(package.module for package in image_packages("2.3.0").packages)
    assert cause["category"] == "import_error" and cause["location"] == "train.py:3"
    assert cause["fix"].startswith("the PyTorch 2.3.0 image has no `wandb` (it ships ")
    assert ", ".join(shipped) in cause["fix"] and "requirements.txt" in cause["fix"]


def test_an_extension_built_for_another_torch_is_named_as_a_build_mismatch_not_a_missing_module(stubbed_sagemaker):
    """flash-attn from requirements.txt, its wheel built against another PyTorch than the image's: the import finds
    the module and fails on a C++ symbol of torch. Before: a bare `exception`, no fix."""
    so = "/opt/conda/lib/python3.11/site-packages/flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so"
    cause = cause_of(stubbed_sagemaker, "abi-mismatch", {"algo-1": [
        "Traceback (most recent call last):", '  File "/opt/ml/code/train.py", line 5, in <module>',
        "    from flash_attn import flash_attn_func",
        '  File "/opt/conda/lib/python3.11/site-packages/flash_attn/__init__.py", line 3, in <module>',
        "    import flash_attn_2_cuda as flash_attn_cuda",
        f"ImportError: {so}: undefined symbol: _ZN3c105ErrorC2ENS_14SourceLocationENSt7__cxx1112basic_stringIcSt11"
        "char_traitsIcESaIcEEE"]}, mode="none")
    assert (cause["category"], cause["location"]) == ("import_error", "train.py:5")
    assert "`flash_attn_2_cuda`" in cause["fix"] and "PyTorch 2.3.0" in cause["fix"]
    assert "requirements.txt" in cause["fix"]


@pytest.mark.parametrize(("code", "category", "words"), [
    (-9, "oom_killed", "OOM killer"),
    (-11, "signal", "SIGSEGV"),
])
def test_a_rank_killed_by_a_signal(stubbed_sagemaker, code, category, words):
    cause = cause_of(stubbed_sagemaker, f"signal{-code}", {"algo-1": [
        "epoch=1 step=3/90 train_loss=0.9",
        f"E1126 10:41:01.554000 31 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: {code}) "
        "local_rank: 0 (pid: 92) of binary: /opt/conda/bin/python3.11",
        "Root Cause (first observed failure):", "[0]:", "  host      : algo-1", "  rank      : 0 (local_rank: 0)",
        f"  exitcode  : {code} (pid: 92)", "  error_file: <N/A>"]})
    assert cause["category"] == category and words in cause["fix"]
    name = "SIGKILL" if code == -9 else "SIGSEGV"
    assert cause["headline"] == f"algo-1 (rank 0) was killed by signal {-code} ({name})"


def test_the_oom_killer_by_the_toolkits_exit_code_137(stubbed_sagemaker):
    cause = cause_of(stubbed_sagemaker, "oom-137", {"algo-1": [
        "loading 40 GB of features", "ExecuteUserScriptError:", "ExitCode 137",
        'ExtraInfo "OutOfMemory: Process killed by SIGKILL (signal 9)"']}, mode="none")
    assert cause["category"] == "oom_killed" and cause["exit_code"] == 137


def test_the_backends_job_handle_reads_the_same_cause(stubbed_sagemaker):
    stubbed_sagemaker.stubbers["sagemaker"].add_response("describe_training_job", failed("ddp-backend"))
    seed_lines("ddp-backend", {"algo-1": ALGO1, "algo-2": ALGO2})
    cause = BackendJob(SageMakerBackend(stubbed_sagemaker), "ddp-backend").failure_cause()
    assert cause.headline() == HEADLINE


def test_the_last_line_of_a_script_the_oom_killer_ended_is_its_own_not_the_toolkits_report(stubbed_sagemaker):
    """The toolkit reports the exit after the script's output (`ExitCode 137`, `ErrorMessage ""`, `Command "..."`).
    Before: `last line: Command "/opt/conda/bin/python3.11 train.py --epochs 3"`, the toolkit's, which says nothing
    of where the script was; now the script's own last line, the shell's `Killed` left out as before."""
    cause = cause_of(stubbed_sagemaker, "oom-last-line", {"algo-1": [
        *toolkit_start(PYTHON), *steps(20), "Killed", *toolkit_failure(137)]}, mode="none",
        reason=failure_reason(137))
    assert (cause["headline"], cause["category"]) == ("algo-1 (rank 0) was killed by signal 9 (SIGKILL)",
                                                      "oom_killed")
    assert cause["detail"] == [f"last line: {steps(20)[-1]}"]


def test_a_requirements_install_failure(stubbed_sagemaker):
    cause = cause_of(stubbed_sagemaker, "pip-fail", {"algo-1": [
        "/opt/conda/bin/python3.11 -m pip install -r requirements.txt",
        "ERROR: Could not find a version that satisfies the requirement torchmetrics==99.0 (from versions: 1.0.0)",
        "ERROR: No matching distribution found for torchmetrics==99.0"]}, mode="none",
        reason="InstallRequirementsError:\nExitCode 1\nErrorMessage \"\"")
    assert cause["category"] == "requirements_install"
    assert "torchmetrics==99.0" in cause["exception"] and "requirements.txt" in cause["fix"]


def test_max_runtime_exceeded_from_the_jobs_description(stubbed_sagemaker):
    stubbed_sagemaker.stubbers["sagemaker"].add_response("describe_training_job", failed(
        "too-long", status="Stopped", secondary="MaxRuntimeExceeded", reason=""))
    cause = JobClient("too-long", stubbed_sagemaker).failure_cause()  # no log read: the description says it
    assert cause.category == "max_runtime" and "max_run_seconds=3600" in cause.exception
    assert "raise max_run_seconds" in cause.fix


def test_spot_capacity_from_the_jobs_description(stubbed_sagemaker):
    stubbed_sagemaker.stubbers["sagemaker"].add_response("describe_training_job", failed(
        "no-spot", status="Stopped", secondary="MaxWaitTimeExceeded", reason="", EnableManagedSpotTraining=True))
    cause = JobClient("no-spot", stubbed_sagemaker).failure_cause()
    assert cause.category == "spot_capacity" and "spot.max_wait_seconds" in cause.fix


# torchrun, 2 hosts x 4: rank 3 raised on algo-1, whose agent stopped its host's ranks; algo-2's ranks waited in
# their next all-reduce (gloo, no watchdog) until SageMaker stopped the job at MaxRuntimeInSeconds.
RAISED_THEN_HUNG = {
    "algo-1": [*toolkit_start(TORCHRUN_COMMAND.format(node=0)), *steps(30),
               *traceback(3, "    x = batch['pixel_values']", "KeyError: 'pixel_values'")],
    "algo-2": [*toolkit_start(TORCHRUN_COMMAND.format(node=1)), *steps(30)],
}


def test_a_rank_that_raised_while_the_others_hung_until_max_run_is_the_cause_not_the_limit(stubbed_sagemaker):
    """Before, the cause was `MaxRuntimeExceeded` with the fix `raise max_run_seconds`: a higher limit would only
    have billed the hung ranks longer."""
    cause = cause_of(stubbed_sagemaker, "raised-hung", RAISED_THEN_HUNG, status="Stopped",
                     secondary="MaxRuntimeExceeded", reason="")
    assert cause["headline"] == "algo-1 (rank 3) failed: KeyError: 'pixel_values' at train.py:30"
    waited = "then: the other ranks waited for it until MaxRuntimeExceeded (max_run_seconds=3600) stopped the job"
    assert cause["detail"] == [waited]
    assert "max_run_seconds" not in cause["fix"]

    stubbed_sagemaker.stubbers["sagemaker"].add_response("describe_training_job", failed(
        "raised-hung", status="Stopped", secondary="MaxRuntimeExceeded", reason=""))
    stubbed_sagemaker.sent.clear()
    handle = JobClient("raised-hung", stubbed_sagemaker).failure_cause()  # as submit --wait asks, at the end
    assert handle.headline() == cause["headline"]
    assert stubbed_sagemaker.sent == ["cloudwatch-logs.DescribeLogStreams"] + ["cloudwatch-logs.GetLogEvents"] * 2


def test_a_job_stopped_at_max_run_without_an_error_in_its_logs_is_the_limit(stubbed_sagemaker):
    hung = {host: lines[:-6] if host == "algo-1" else lines for host, lines in RAISED_THEN_HUNG.items()}
    cause = cause_of(stubbed_sagemaker, "slow", hung, status="Stopped", secondary="MaxRuntimeExceeded", reason="")
    assert cause["category"] == "max_runtime" and "raise max_run_seconds" in cause["fix"]


@pytest.mark.parametrize(("reason", "category", "words"), [
    ("ClientError: Data download failed:NoSuchKey (404): The specified key does not exist.", "data_download",
     "no S3 object is under an input channel's URI"),
    ("ClientError: Data download failed:Failed to download data. AccessDenied (403): Access Denied", "data_download",
     "allow it s3:GetObject and s3:ListBucket"),
    (("ClientError: Data download failed:Could not download s3://my-bucket/data/train/part-0001.parquet: "
      "insufficient disk space"), "data_download", "raise instance.volume_size_gb"),
    (("CapacityError: Unable to provision requested ML compute capacity. Please retry using a different ML "
      "instance type."), "capacity", "instance.preferences"),
    (("ResourceLimitExceeded: The account-level service limit 'ml.p4d.24xlarge for training job usage' is 2 "
      "Instances, with current utilization of 2 Instances and a request delta of 2 Instances. Please use AWS Service "
      "Quotas to request an increase for this quota."), "quota", "Service Quotas"),
    ("InternalServerError: We encountered an internal error. Please try again.", "service_error", "max_retry_attempts"),
    ("ClientError: Cannot pull algorithm container. Either the image does not exist or its permissions are incorrect.",
     "image_pull", "ecr:BatchGetImage"),
])
def test_a_job_that_failed_before_its_hosts_wrote_a_line_is_named_by_its_failure_reason(stubbed_sagemaker, reason,
                                                                                        category, words):
    """No stream exists: before, status showed the FailureReason with no cause or fix, `failure_cause` was null in
    `-o json` and Job.failure_cause() None; now SageMaker's own words are the cause, with the fix, and no log is
    read for them."""
    cause = cause_of(stubbed_sagemaker, f"early-{category.replace('_', '-')}", {}, reason=reason)
    assert (cause["category"], cause["host"], cause["rank"]) == (category, None, None)
    assert cause["headline"] == f"the job failed: {reason}" and words in cause["fix"]

    stubbed_sagemaker.stubbers["sagemaker"].add_response("describe_training_job", failed("early", reason=reason))
    stubbed_sagemaker.sent.clear()
    assert JobClient("early", stubbed_sagemaker).failure_cause().category == category
    assert stubbed_sagemaker.sent == []


@pytest.mark.parametrize("error", [
    TORCH_SAVE_DISK_FULL,
    ["Traceback (most recent call last):", '  File "/opt/ml/code/train.py", line 120, in <module>',
     '    shutil.copy(tmp, f"/opt/ml/checkpoints/step_{step}.pt")', "OSError: [Errno 28] No space left on device"],
])
def test_a_checkpoint_written_to_a_full_volume(stubbed_sagemaker, error):
    """Before: category `exception`, no fix."""
    cause = cause_of(stubbed_sagemaker, "disk-full", {"algo-1": [*toolkit_start(PYTHON), *steps(100), *error,
                                                                 *toolkit_failure(1)]}, mode="none")
    assert (cause["category"], cause["location"]) == ("disk_full", "train.py:120")
    assert cause["headline"] == f"algo-1 (rank 0) failed: {error[-1]} at train.py:120"
    assert "raise instance.volume_size_gb" in cause["fix"]


def test_a_full_disk_on_an_instance_whose_volume_is_local_nvme_is_not_told_to_raise_volume_size_gb(
        stubbed_sagemaker):
    """An ml.g5.12xlarge keeps /opt/ml on its NVMe instance store, whose size SageMaker fixes: VolumeSizeInGB
    changes nothing there. Before: `raise instance.volume_size_gb`, a resubmit that fails the same way."""
    full = ["Traceback (most recent call last):", '  File "/opt/ml/code/train.py", line 120, in <module>',
            '    torch.save(state, f"/opt/ml/checkpoints/step_{step}.pt")',
            "OSError: [Errno 28] No space left on device: '/opt/ml/checkpoints/step_9000.pt'"]
    logs = {"algo-1": [*toolkit_start(PYTHON), *steps(100), *full, *toolkit_failure(1)]}
    nvme = cause_of(stubbed_sagemaker, "disk-full-nvme", logs, mode="none", ResourceConfig=GPU_INSTANCE)
    assert (nvme["category"], nvme["location"]) == ("disk_full", "train.py:120")
    assert "volume_size_gb" in nvme["fix"] and "raise instance.volume_size_gb" not in nvme["fix"]
    assert "ml.g5.12xlarge" in nvme["fix"] and "local NVMe" in nvme["fix"] and "save_total_limit" in nvme["fix"]

    ebs = cause_of(stubbed_sagemaker, "disk-full-ebs", logs, mode="none")  # an ml.c5.2xlarge: an EBS volume
    assert "raise instance.volume_size_gb" in ebs["fix"]


def _torchrun_summary(host: str, root: tuple[int, int, int], others: list[tuple[int, int, int]]) -> list[str]:
    """torchrun's ChildFailedError report: each (rank, local rank, exit code) it names, the first as the root."""
    def entry(number: int, rank: int, local: int, code: int) -> list[str]:
        return [f"[{number}]:", f"  host      : {host}", f"  rank      : {rank} (local_rank: {local})",
                f"  exitcode  : {code} (pid: {90 + local})", "  error_file: <N/A>"]
    failures = [line for number, item in enumerate(others, 1) for line in entry(number, *item)]
    return ["torch.distributed.elastic.multiprocessing.errors.ChildFailedError:", "=" * 60, "train.py FAILED",
            "-" * 60, *(["Failures:", *failures, "-" * 60] if others else []),
            "Root Cause (first observed failure):", *entry(0, *root), "=" * 60]


def test_a_rank_the_oom_killer_ended_leads_over_the_nccl_errors_of_the_ranks_that_lost_it(stubbed_sagemaker):
    """Rank 5 (algo-2) was killed by SIGKILL without a word; algo-1's ranks 0 and 1 then failed in NCCL with
    `remote process exited`. Before: `algo-1 (rank 0) failed: ... NCCL error ... remote process exited` with the
    collective-timeout fix (raise the timeout); now the killed rank, and a peer's loss is never a timeout."""
    peer_lost = [*NCCL_PEER_LOST, *[line.replace("[rank0]", "[rank1]") for line in NCCL_PEER_LOST]]
    logs = {"algo-1": [*toolkit_start(TORCHRUN_COMMAND.format(node=0)), *steps(20), *peer_lost,
                       *_torchrun_summary("algo-1", (0, 0, 1), [(1, 1, 1), (2, 2, -15), (3, 3, -15)]),
                       *toolkit_failure(1, TORCHRUN_COMMAND.format(node=0))],
            "algo-2": [*toolkit_start(TORCHRUN_COMMAND.format(node=1)), *steps(20),
                       *_torchrun_summary("algo-2", (5, 1, -9), [(4, 0, -15), (6, 2, -15), (7, 3, -15)]),
                       *toolkit_failure(1, TORCHRUN_COMMAND.format(node=1))]}
    cause = cause_of(stubbed_sagemaker, "oom-killed-rank", logs)
    assert cause["headline"] == "algo-2 (rank 5) was killed by signal 9 (SIGKILL)"
    assert cause["category"] == "oom_killed"

    alone = cause_of(stubbed_sagemaker, "peer-lost", {"algo-1": logs["algo-1"]})  # algo-2's stream not there
    assert (alone["rank"], alone["category"]) == (0, "peer_lost") and "timeout" not in alone["fix"]


@pytest.mark.parametrize(("exit_code", "message", "headline", "category"), [
    (137, "", "the job was killed by signal 9 (SIGKILL)", "oom_killed"),
    (1, ("Traceback (most recent call last)\n File \"/opt/ml/code/train.py\", line 3, in <module>\n import wandb\n "
         "ModuleNotFoundError: No module named 'wandb'\n"),
     "the job failed: ModuleNotFoundError: No module named 'wandb'", "import_error"),
    # the error as the script's last output, without a line break: before, the cause ended in the quote that
    # closes ErrorMessage (`ValueError: lr must be positive"`)
    (1, "ValueError: lr must be positive", "the job failed: ValueError: lr must be positive", "exception"),
])
def test_a_failed_job_whose_streams_expired_is_named_by_the_toolkits_failure_reason(stubbed_sagemaker, exit_code,
                                                                                    message, headline, category):
    """The log group's retention deleted the streams (or they were never written): before, no cause and no fix;
    now the toolkit's `ExitCode` and `ErrorMessage`, which SageMaker keeps in the FailureReason."""
    reason = failure_reason(exit_code).replace('ErrorMessage ""', f'ErrorMessage "{message}"')
    cause = cause_of(stubbed_sagemaker, f"expired-{exit_code}", {}, mode="none", reason=reason)
    assert (cause["headline"], cause["category"], cause["exit_code"]) == (headline, category, exit_code)


def test_a_failure_reason_cut_inside_its_error_message_still_names_the_error(stubbed_sagemaker):
    """SageMaker keeps 1024 characters of the reason: a long ErrorMessage loses its closing quote and the
    command after it. Before, nothing of it was read."""
    reason = failure_reason(1).replace('ErrorMessage ""', 'ErrorMessage "Traceback (most recent call last)\n'
                                                          ' ValueError: lr must be positive\n warnings that fol')
    reason = reason.partition("warnings that fol")[0] + "warnings that fol"
    cause = cause_of(stubbed_sagemaker, "cut-reason", {}, mode="none", reason=reason)
    assert cause["headline"] == "the job failed: ValueError: lr must be positive"


def _watchdog_job(stalled: int, stalled_exit: int) -> dict[str, list[str]]:
    """2 hosts x 4 ranks: every rank but `stalled` entered ALLREDUCE #42 and its watchdog took it down after 30
    minutes (exit -6); torchrun then stopped the rest of its host, `stalled` among them unless it died first."""
    logs = {}
    for node, host in enumerate(("algo-1", "algo-2")):
        ranks = range(node * 4, node * 4 + 4)
        timeouts = [line for rank in ranks if rank != stalled for line in nccl_watchdog_timeout(rank, 1800000 + rank)]
        exits = [(rank, rank % 4, stalled_exit if rank == stalled else -6) for rank in ranks]
        root = next(item for item in exits if item[2] == -6)
        logs[host] = [*toolkit_start(TORCHRUN_COMMAND.format(node=node)), *steps(20), *timeouts,
                      *_torchrun_summary(host, root, [item for item in exits if item != root]),
                      *toolkit_failure(1, TORCHRUN_COMMAND.format(node=node))]
    return logs


def test_an_nccl_watchdog_timeout_names_the_rank_that_never_joined_the_collective(stubbed_sagemaker):
    """Rank 3 (algo-1) never entered ALLREDUCE #42; the seven others timed out in it. Before: `algo-1 (rank 0)
    failed: [E1126 11:11:01.026415540 ProcessGroupNCCL.cpp:629] [Rank 0] Watchdog caught ...`, the lowest rank that
    waited, with a log time that differs on every run; now the rank they waited for and the collective."""
    cause = cause_of(stubbed_sagemaker, "nccl-straggler", _watchdog_job(stalled=3, stalled_exit=-15))
    assert cause["headline"] == (
        "algo-1 (rank 3) failed: Watchdog caught collective operation timeout: ALLREDUCE (SeqNum=42) ran for 1800000 "
        "milliseconds on ranks 0-2, 4-7; rank 3 reported no timeout: it never joined it")
    assert cause["category"] == "collective_timeout" and "waited in ALLREDUCE for rank 3" in cause["fix"]


def _gloo_timeout(rank: int) -> list[str]:
    """One rank's timeout in a gloo group (a GPU job's group for CPU tensors: `new_group(backend="gloo")`)."""
    return traceback(rank, "    work.wait()", "RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/"
                               "unbound_buffer.cc:78] Timed out waiting 1800000ms for recv operation to complete")


def test_a_torchrun_job_on_8_gpu_hosts_names_the_rank_on_host_2_that_never_joined(stubbed_sagemaker):
    """2 x ml.p4d.24xlarge under torchrun: 8 ranks a host (one per GPU). Rank 11 (algo-2) never joined a gloo
    collective and printed nothing; the 15 others timed out in it. gloo's timeout names no rank, so the rank table
    says who was missing. Before: the table counted 1 rank a host (ranks 0 and 1), so no rank of it was silent and
    the cause was rank 0, a rank that waited; now the instance type's 8 GPUs make 16 ranks, and rank 11 on algo-2
    is named."""
    logs = {host: [*steps(20), *[line for rank in range(node * 8, node * 8 + 8) if rank != 11
                                 for line in _gloo_timeout(rank)]]
            for node, host in enumerate(("algo-1", "algo-2"))}
    cause = cause_of(stubbed_sagemaker, "gloo-p4d", logs,
                     ResourceConfig={"InstanceType": "ml.p4d.24xlarge", "InstanceCount": 2, "VolumeSizeInGB": 30})
    assert (cause["host"], cause["rank"]) == ("algo-2", 11)
    assert cause["headline"].endswith("on ranks 0-10, 12-15; rank 11 reported no timeout: it never joined it")


def test_a_gloo_timeout_blames_no_rank_of_a_host_whose_stream_was_not_read(stubbed_sagemaker):
    """The same 2 x ml.p4d.24xlarge job, with only algo-1's stream read (algo-2's was not written or has expired):
    its 8 ranks timed out in the gloo collective. Before: the rank table's ranks 8-15 of algo-2 counted as silent,
    so `algo-2 (rank 8) failed: ... ranks 8-15 reported no timeout`, a rank whose log simply was not read; now, as
    for NCCL's watchdog, only the ranks of hosts whose lines were read count, and the timeout is named as the
    ranks that reported it, with no rank blamed."""
    logs = {"algo-1": [*steps(20), *[line for rank in range(8) for line in _gloo_timeout(rank)]]}
    cause = cause_of(stubbed_sagemaker, "gloo-p4d-one-stream", logs,
                     ResourceConfig={"InstanceType": "ml.p4d.24xlarge", "InstanceCount": 2, "VolumeSizeInGB": 30})
    assert (cause["host"], cause["rank"], cause["category"]) == ("algo-1", 0, "collective_timeout")
    assert cause["headline"] == ("algo-1 (rank 0) failed: gloo: Timed out waiting 1800000ms for recv operation to "
                                 "complete on ranks 0-7 at train.py:30")


def test_a_rank_killed_while_the_others_waited_in_a_collective_is_the_cause_with_the_timeout_under_it(
        stubbed_sagemaker):
    """Rank 6 (algo-2) was killed by SIGKILL; the others' watchdogs fired. Before: `algo-1 (rank 0) failed: ...
    Watchdog caught ...`; now the killed rank, the OOM killer's fix, and the collective it left under it."""
    cause = cause_of(stubbed_sagemaker, "nccl-killed", _watchdog_job(stalled=6, stalled_exit=-9))
    assert cause["headline"] == "algo-2 (rank 6) was killed by signal 9 (SIGKILL)"
    assert cause["category"] == "oom_killed"
    assert cause["detail"] == [("then: Watchdog caught collective operation timeout: ALLREDUCE (SeqNum=42) ran for "
                                "1800000 milliseconds on ranks 0-5, 7; rank 6 reported no timeout: it never joined it")]


def test_torchs_desync_report_names_the_lagging_rank(stubbed_sagemaker):
    """With TORCH_NCCL_DESYNC_DEBUG=1 torch names the ranks that never joined; only algo-2's stream is left."""
    desync = ("[rank4]: \t - To our best knowledge, ranks [1] are the lagging ranks that caused this timeout. They "
              "never joined any collectives")
    lines = [*toolkit_start(TORCHRUN_COMMAND.format(node=1)), *nccl_watchdog_timeout(4, 1800004), desync]
    cause = cause_of(stubbed_sagemaker, "nccl-desync", {"algo-2": lines})
    assert (cause["host"], cause["rank"]) == ("algo-1", 1)
    assert cause["exception"].endswith("on rank 4; torch's desync report names rank 1 as never joining it")


@pytest.mark.parametrize(("reason", "words"), [
    ("ClientError: Artifact upload failed:Insufficient disk space", "raise instance.volume_size_gb"),
    ("ClientError: Artifact upload failed:AccessDenied (403): Access Denied", "s3:PutObject on output_path"),
    (("ClientError: Artifact upload failed:Please ensure that the subnet's route table has a route to an S3 VPC "
      "endpoint or a NAT device, and both the security groups and the subnet's network ACL allow outbound traffic to "
      "S3"), "S3 VPC endpoint or a NAT gateway"),
])
def test_a_job_whose_artifacts_could_not_be_uploaded_after_the_script_completed(stubbed_sagemaker, reason, words):
    """The script ended well; SageMaker then failed to pack or upload model.tar.gz. Before: no cause, no fix (the
    logs hold no error); now SageMaker's words with the fix, and no log is read for them."""
    logs = {"algo-1": [*toolkit_start(PYTHON), *steps(30), "saved /opt/ml/model/model.safetensors",
                       "2026-11-26 10:41:02,000 sagemaker-training-toolkit INFO     Reporting training SUCCESS"]}
    cause = cause_of(stubbed_sagemaker, "upload-failed", logs, mode="none", reason=reason)
    assert (cause["category"], cause["host"], cause["headline"]) == ("artifact_upload", None, f"the job failed: {reason}")
    assert cause["fix"].startswith("the script completed") and words in cause["fix"]

    stubbed_sagemaker.stubbers["sagemaker"].add_response("describe_training_job", failed("upload", reason=reason))
    stubbed_sagemaker.sent.clear()
    assert JobClient("upload", stubbed_sagemaker).failure_cause().category == "artifact_upload"
    assert stubbed_sagemaker.sent == []


PIP_NOT_FOUND = [("ERROR: Could not find a version that satisfies the requirement torchmetrics==99.0 (from versions: "
                  "1.0.0)"), "ERROR: No matching distribution found for torchmetrics==99.0"]
PIP_COMMAND = "/opt/conda/bin/python3.11 -m pip install -r requirements.txt"


@pytest.mark.parametrize("mode", ["none", "torch_distributed", "mpi"])
def test_a_requirements_install_that_failed_on_each_host_names_the_host_and_pip_not_a_rank(stubbed_sagemaker, mode):
    """The toolkit runs pip on every host before any rank exists. Before: `algo-1 (rank 0) failed: ERROR: ...` in
    mode none, as if the script had raised; now the host and the install, `rank` null and `launcher` `pip install`."""
    before_the_command = toolkit_start(PYTHON, installs=PIP_NOT_FOUND)[:-5]  # the toolkit never invoked it
    host = [*before_the_command, *toolkit_failure(1, PIP_COMMAND, "InstallRequirementsError")]

    cause = cause_of(stubbed_sagemaker, f"pip-{mode.replace('_', '-')}", {"algo-1": host, "algo-2": host},
                     mode=mode, reason=failure_reason(1, PIP_COMMAND, "InstallRequirementsError"))
    assert cause["headline"] == ("algo-1 (pip install) failed: ERROR: No matching distribution found for "
                                 "torchmetrics==99.0 at requirements.txt")  # the source dir is not here: no line
    assert (cause["rank"], cause["launcher"], cause["category"]) == (None, "pip install", "requirements_install")
    assert cause["location"] == "requirements.txt"


def test_a_failed_install_of_a_job_this_process_submitted_names_the_requirements_line(stubbed_sagemaker, tmp_path,
                                                                                      monkeypatch):
    """pip's output in CloudWatch is the text a local run reads: where this process submitted the job (`submit
    --wait`, the Job it returned), its source dir is here, and the cause points at the line to fix, as a local
    run's does. Before: no location at all."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "requirements.txt").write_text("numpy\nTorchMetrics[image]==99.0\n")
    host = [*toolkit_start(PYTHON, installs=PIP_NOT_FOUND)[:-5], *toolkit_failure(1, PIP_COMMAND,
                                                                                  "InstallRequirementsError")]
    stubbed_sagemaker.stubbers["sagemaker"].add_response("describe_training_job", failed(
        "pip-handle", reason=failure_reason(1, PIP_COMMAND, "InstallRequirementsError")))
    seed_lines("pip-handle", {"algo-1": host, "algo-2": host})

    cause = JobClient("pip-handle", stubbed_sagemaker, SubmittedFrom(tmp_path / "src")).failure_cause()

    assert cause.headline() == ("algo-1 (pip install) failed: ERROR: No matching distribution found for "
                                "torchmetrics==99.0 at src/requirements.txt:2")
    assert (cause.location, cause.launcher) == ("src/requirements.txt:2", "pip install")


# Python 3.13 colours a traceback where FORCE_COLOR or PYTHON_COLORS=1 is set, a terminal or not (traceback.py's
# _colorize: the file, line and function magenta, the exception's name bold magenta).
COLOURED = ["Traceback (most recent call last):",
            '  File \x1b[35m"/opt/ml/code/train.py"\x1b[0m, line \x1b[35m48\x1b[0m, in \x1b[35mmain\x1b[0m',
            "    \x1b[31mbatch = collate\x1b[0m\x1b[1;31m(items)\x1b[0m",
            "\x1b[1;35mKeyError\x1b[0m: \x1b[35m'pixel_values'\x1b[0m"]


def test_a_coloured_traceback_names_the_error_and_the_line_as_a_plain_one_does(stubbed_sagemaker):
    """Before: `algo-1 (rank 0) failed: ESC[1;35mKeyError ESC[0m: ...`, escape sequences and all, and no location
    (the coloured frame was not read; with a coloured `Traceback` header too, `exited with code 1`). Now the same
    cause as without colour, from the streams and from the FailureReason's ErrorMessage alike."""
    plain_headline = "algo-1 (rank 0) failed: KeyError: 'pixel_values' at train.py:48"
    cause = cause_of(stubbed_sagemaker, "coloured", {"algo-1": [*toolkit_start(PYTHON), *steps(3), *COLOURED,
                                                                *toolkit_failure(1)]}, mode="none")
    assert (cause["headline"], cause["location"]) == (plain_headline, "train.py:48")

    message = "\n ".join(["Traceback (most recent call last)", *(line.strip() for line in COLOURED[1:])])
    reason = failure_reason(1).replace('ErrorMessage ""', f'ErrorMessage "{message}\n"')  # as the toolkit quotes it
    expired = cause_of(stubbed_sagemaker, "coloured-expired", {}, mode="none", reason=reason)
    assert expired["headline"] == "the job failed: KeyError: 'pixel_values'"


@pytest.mark.parametrize(("reason", "category", "words"), [
    pytest.param("ClientError: SageMaker was unable to assume the role "
                 "'arn:aws:iam::379899735384:role/SageMakerRole'", "execution_role", "service-role/NAME",
                 id="https://github.com/aws/sagemaker-python-sdk/issues/35"),
    pytest.param("ClientError: TrainingHostAgent Initialization failed:InvalidInputException: SageMaker is unable to "
                 "perform: sts:AssumeRole on the role. Check if you have a trust relationship for "
                 "'sagemaker.amazonaws.com' to assume the role.", "execution_role",
                 "trust policy allow sts:AssumeRole to the service principal sagemaker.amazonaws.com",
                 id="https://github.com/astronomer/docs/pull/1695"),
    # a processing job's reason there: SageMaker's agent pulls a training job's image with the same words
    pytest.param("ClientError: API error (404): manifest for 757901089955.dkr.ecr.us-west-2.amazonaws.com/"
                 "tfrecord-processing:20210610131649 not found: manifest unknown: Requested image not found",
                 "image_pull", "image_uri exists in the job's region",
                 id="https://github.com/aws-samples/amazon-sagemaker-tensorflow-object-detection-api/issues/14"),
])
def test_failure_reasons_users_met_before_the_script_are_named_with_their_fix(stubbed_sagemaker, reason, category,
                                                                              words):
    """FailureReasons quoted in the threads the ids name. Before: no cause and no fix (a role SageMaker cannot
    assume, an image tag ECR does not have); now SageMaker's words with the fix, and no log read for them."""
    cause = cause_of(stubbed_sagemaker, f"met-{category.replace('_', '-')}", {}, mode="none", reason=reason)
    assert (cause["category"], cause["headline"]) == (category, f"the job failed: {reason}")
    assert words in cause["fix"]

    stubbed_sagemaker.stubbers["sagemaker"].add_response("describe_training_job", failed("met", reason=reason))
    stubbed_sagemaker.sent.clear()
    assert JobClient("met", stubbed_sagemaker).failure_cause().category == category
    assert stubbed_sagemaker.sent == []


DOUBLED_KEY = ("s3://amazon-sagemaker-506250256483-us-east-1-46bx6qaqethoyv/shared//train-Qwen3-4B-Instruct-2507-lora-"
               "lmi/train-Qwen3-4B-Instruct-2507-lora-lmi-20260515182120/input/code/requirements.txt")


def test_a_key_with_a_doubled_slash_is_named_with_the_key_meant(stubbed_sagemaker):
    """aws-samples/generative-ai-on-amazon-sagemaker#242: a `default_bucket_prefix` of `shared/` joined with `/`.
    Before: `check the spec's inputs (their URIs, region and the role's access to them)`, which names neither the
    `//` nor where it is; now the key SageMaker refused and the one meant."""
    reason = ("ClientError: Data download failed:Failed to download data. S3 key: " + DOUBLED_KEY
              + " has an illegal char sub-sequence '//' in it")

    cause = cause_of(stubbed_sagemaker, "doubled-slash", {}, mode="none", reason=reason)

    assert (cause["category"], cause["headline"]) == ("data_download", f"the job failed: {reason}")
    assert cause["fix"].startswith(f"SageMaker refuses '//' in an S3 key, and {DOUBLED_KEY} has one")
    assert "as in s3://amazon-sagemaker-506250256483-us-east-1-46bx6qaqethoyv/shared/train-Qwen3" in cause["fix"]


def test_a_torchrun_jobs_failure_reason_names_the_rank_whose_error_it_quotes(stubbed_sagemaker):
    """The streams expired; the reason the toolkit left quotes rank 5's error under torch's `[rank5]:` prefix, then
    torchrun's report, and SageMaker cut it. Before: `the job exited with code 1` (the prefixed line was not read as
    an error); now the rank and its error, as the streams would have said it."""
    reason = toolkit_failure_reason(ALGO2, 1, TORCHRUN_COMMAND.format(node=1))
    assert len(reason) == 1024 and 'Command "' not in reason

    cause = cause_of(stubbed_sagemaker, "torchrun-expired", {}, reason=reason)

    assert cause["headline"] == ("the job (rank 5) failed: TypeError: expected Tensor as element 3 in argument 0, "
                                 "but got NoneType")
    assert (cause["host"], cause["rank"], cause["exit_code"]) == (None, 5, 1)


def test_an_mpi_jobs_failure_reason_names_the_rank_whose_tagged_error_it_quotes(stubbed_sagemaker):
    """The streams expired; the toolkit's ErrorMessage quotes mpirun's output, each line under its tag (and torch's
    `[rank6]:` under that). Before: `the job exited with code 1`, with the exit-code fix, though the reason names
    the error and the rank."""
    printed = [f"[1,mpirank:6,algo-2]<stderr>:[rank6]: {line}" for line in (
        "Traceback (most recent call last):", '  File "/opt/ml/code/train.py", line 50, in main',
        "    labels = batch['labels']", "KeyError: 'labels'")]
    reason = toolkit_failure_reason(printed, 1, "mpirun --host algo-1:4,algo-2:4 -np 8 python train.py")

    cause = cause_of(stubbed_sagemaker, "mpi-expired", {}, mode="mpi", reason=reason)

    assert cause["headline"] == "the job (rank 6) failed: KeyError: 'labels'"
    assert (cause["rank"], cause["exit_code"], cause["category"]) == (6, 1, "exception")


# huggingface_hub's retry warning (utils/_http.py: `'{err}' thrown while requesting {method} {url}`) names an
# error class, so the toolkit's ErrorMessage starts there and holds everything the script printed after it.
HUB_RETRY = ["'(ProtocolError('Connection aborted.', ConnectionResetError(104, 'Connection reset by peer')), "
             "'(Request ID: 2b1f0c3e-7a51-4d2f-9d0c-1c9e2f5a6b7d)')' thrown while requesting HEAD "
             "https://huggingface.co/meta-llama/Llama-3.2-1B/resolve/main/config.json",
             "Retrying in 1s [Retry 1/5]."]
LATE_IMPORT = ["Traceback (most recent call last):", '  File "/opt/ml/code/train.py", line 88, in <module>',
               "    from transformers import LlamaForSequenceClassification",
               "ImportError: cannot import name 'LlamaForSequenceClassification' from 'transformers' "
               "(/opt/conda/lib/python3.11/site-packages/transformers/__init__.py)"]


def _printed_until_the_cut_in(words: str) -> list[str]:
    """A script's lines (a retry warning, progress, the late import's traceback) with a progress bar just long enough
    that SageMaker's 1024 characters end at `words` in the ImportError."""
    printed = [*steps(3), *HUB_RETRY, *steps(8), *LATE_IMPORT]
    whole = toolkit_failure_reason(printed, kept=1 << 20)
    short = FAILURE_REASON_LIMIT - whole.index(words) - len(words)
    return [*printed[:-len(LATE_IMPORT)], "Map: 100%|" + "#" * (short - len(" Map: 100%|\n")), *LATE_IMPORT]


def test_a_failure_reason_cut_inside_the_errors_line_says_so_and_takes_no_fix_from_the_cut_word(stubbed_sagemaker):
    """SageMaker's 1024 characters end inside `from 'transformers'`. Before: the reason was read up to its last
    quote, a frame's `File "/opt/ml/code/train.py"`, so the error was lost (`the job exited with code 1`); read to
    its end without care, `from 'transfor` would have named a package `transfor` to install. Now the error as far
    as it goes, marked cut, and no fix taken from the cut word."""
    reason = toolkit_failure_reason(_printed_until_the_cut_in("from 'transfor"))
    assert len(reason) == 1024 and reason.endswith("from 'transfor")

    cause = cause_of(stubbed_sagemaker, "cut-import", {}, mode="none", reason=reason)

    assert cause["headline"] == ("the job failed: ImportError: cannot import name 'LlamaForSequenceClassification' "
                                 "from 'transfor…")
    assert cause["detail"] == ["cut: SageMaker keeps the first 1024 characters of a FailureReason, and they end "
                               "inside this error's line"]
    assert "transfor`" not in (cause["fix"] or "")


def test_a_cut_failure_reason_gives_way_to_the_cause_in_the_logs(stubbed_sagemaker):
    """Where the streams hold the error, they are the cause, whatever the cut reason quotes."""
    script = _printed_until_the_cut_in("from 'transfor")
    printed = [*toolkit_start(PYTHON), *script, *toolkit_failure(1)]
    reason = toolkit_failure_reason(script)

    cause = cause_of(stubbed_sagemaker, "cut-with-logs", {"algo-1": printed}, mode="none", reason=reason)

    assert cause["headline"] == ("algo-1 (rank 0) failed: " + LATE_IMPORT[-1] + " at train.py:88")
    assert cause["category"] == "import_error" and cause["detail"] == []


@pytest.mark.parametrize(("printed", "mode", "exception", "category", "detail"), [
    pytest.param(DATALOADER_WORKER_KILLED, "torch_distributed",
                 "RuntimeError: DataLoader worker (pid(s) 4567) exited unexpectedly", "oom_killed",
                 ["caused by: RuntimeError: DataLoader worker (pid 4567) is killed by signal: Killed."],
                 id="raise-from"),
    pytest.param(TORCH_SAVE_DISK_FULL, "none",
                 "RuntimeError: [enforce fail at inline_container.cc:595] . unexpected pos 1641891200 vs 1641891088",
                 "disk_full", [], id="during-handling"),
    pytest.param(TRANSFORMERS_CONFIG_NOT_FOUND, "none",
                 "OSError: Can't load config for 'model/final_model'. Make sure that:", "exception", [],
                 id="during-handling-of-a-bare-error"),
])
def test_a_chained_exception_reads_the_same_from_the_streams_and_from_the_failure_reason(stubbed_sagemaker, printed,
                                                                                         mode, exception, category,
                                                                                         detail):
    """Both name the chain's final exception, the one the script died of (why: `_classified_by_chain`), classified
    by the ones before it where it says nothing of its own. Before: the streams named the final exception and the
    FailureReason, read where the streams expired, the first: the worker killed instead of the DataLoader's error
    the user saw, the first of torch.save's two errors, and transformers' bare `OSError` with nothing to act on."""
    command = TORCHRUN_COMMAND.format(node=0) if mode == "torch_distributed" else PYTHON
    reason = toolkit_failure_reason(printed, 1, command)
    host = [*toolkit_start(command), *steps(2), *printed, *toolkit_failure(1, command)]

    from_logs = cause_of(stubbed_sagemaker, f"chain-logs-{mode.replace('_', '-')}", {"algo-1": host}, mode=mode,
                         reason=reason)
    from_reason = cause_of(stubbed_sagemaker, f"chain-reason-{mode.replace('_', '-')}", {}, mode=mode,
                           reason=reason)

    assert from_logs["exception"] == exception and from_logs["host"] == "algo-1"
    assert from_reason["exception"] == exception.removesuffix(":")  # the toolkit strips each line's end colon
    for cause in (from_logs, from_reason):
        assert (cause["category"], cause["detail"]) == (category, detail)
    assert from_reason["fix"] == from_logs["fix"]
    # the reason names the rank only where torch's `[rankN]:` prefix does
    assert (from_logs["rank"], from_reason["rank"]) == (0, 0 if mode == "torch_distributed" else None)


def test_a_container_that_exited_139_without_a_report_is_named_as_a_segfault(stubbed_sagemaker):
    """aws/sagemaker-python-sdk#134: after 18 hours, `AlgorithmError: Exit Code: 139` and nothing in the logs, SageMaker's
    own words for a container that exited without the toolkit's report. Before: no cause at all; now the signal
    (139 = 128 + 11) and the fix for a crash in native code, as the toolkit's `ExitCode 139` gets."""
    cause = cause_of(stubbed_sagemaker, "exit-139", {}, mode="none", reason="AlgorithmError: Exit Code: 139")

    assert cause["headline"] == "the job was killed by signal 11 (SIGSEGV)"
    assert (cause["category"], cause["exit_code"]) == ("signal", 139)
    assert "a crash in native code" in cause["fix"]


SITE = "/opt/conda/lib/python3.11/site-packages"
NUMPY2_REFUSAL = [
    "A module that was compiled using NumPy 1.x cannot be run in",
    "NumPy 2.1.3 as it may crash. To support both 1.x and 2.x",
    "versions of NumPy, modules must be compiled with NumPy 2.0.",
    "Some module may need to rebuild instead e.g. with 'pybind11>=2.12'.", "",
    "If you are a user of the module, the easiest solution will be to",
    "downgrade to 'numpy<2' or try to upgrade the affected module.",
    "We expect that some modules will need time to support NumPy 2.", ""]
PANDAS_IMPORT = ['  File "/opt/ml/code/train.py", line 4, in <module>', "    import pandas as pd",
                 f'  File "{SITE}/pandas/__init__.py", line 26, in <module>', "    from pandas.compat import (",
                 f'  File "{SITE}/pandas/compat/pyarrow.py", line 8, in <module>', "    import pyarrow as pa",
                 f'  File "{SITE}/pyarrow/__init__.py", line 65, in <module>', "    import pyarrow.lib as _lib"]


def test_a_module_built_against_numpy_1_under_numpy_2_is_named_with_the_pin_that_mends_it(stubbed_sagemaker):
    """pyarrow's wheel was built against NumPy 1.x; a requirement pulled in numpy 2.1.3. NumPy prints its refusal
    with the import's stack, pyarrow's import fails with `_ARRAY_API not found`, then `numpy.core.multiarray failed
    to import`. Before: a bare `exception`, no fix; now an import error naming pyarrow, `numpy<2` and the upgrade."""
    refusal = [*NUMPY2_REFUSAL, "Traceback (most recent call last):" + PANDAS_IMPORT[0], *PANDAS_IMPORT[1:],
               "AttributeError: _ARRAY_API not found"]
    failure = ["Traceback (most recent call last):", *PANDAS_IMPORT, '  File "pyarrow/lib.pyx", line 36, in init '
               "pyarrow.lib", "ImportError: numpy.core.multiarray failed to import"]
    cause = cause_of(stubbed_sagemaker, "numpy2", {"algo-1": [*toolkit_start(PYTHON), *refusal, *failure,
                                                               *toolkit_failure(1)]}, mode="none")
    assert (cause["category"], cause["location"]) == ("import_error", "train.py:4")
    assert cause["headline"] == "algo-1 (rank 0) failed: AttributeError: _ARRAY_API not found at train.py:4"
    assert "`pyarrow` was compiled against NumPy 1.x" in cause["fix"]
    assert "pin `numpy<2` in requirements.txt" in cause["fix"] and "upgrade pyarrow" in cause["fix"]


def test_an_nccl_timeout_names_the_rank_that_printed_nothing_from_the_rank_table(stubbed_sagemaker):
    """2 x ml.g5.12xlarge under torchrun, 4 ranks a host: rank 4 (algo-2) stalled before ALLREDUCE #42 and printed
    nothing, and no launcher's report names it; the seven others timed out in it. Before: `algo-1 (rank 0) failed:
    ... on ranks 0-3, 5-7`, a rank that waited, and rank 4 unnamed; now, as for gloo's timeout, the rank table
    says rank 4 ran on a host whose lines were read and reported none."""
    logs = {host: [*toolkit_start(TORCHRUN_COMMAND.format(node=node)), *steps(20),
                   *[line for rank in range(node * 4, node * 4 + 4) if rank != 4
                     for line in nccl_watchdog_timeout(rank, 1800000 + rank)],
                   *toolkit_failure(1, TORCHRUN_COMMAND.format(node=node))]
            for node, host in enumerate(("algo-1", "algo-2"))}
    cause = cause_of(stubbed_sagemaker, "nccl-silent", logs, ResourceConfig=GPU_INSTANCE)
    assert (cause["host"], cause["rank"]) == ("algo-2", 4)
    assert cause["headline"].endswith("on ranks 0-3, 5-7; rank 4 reported no timeout: it never joined it")
    assert "waited in ALLREDUCE for rank 4" in cause["fix"]

    algo1_alone = cause_of(stubbed_sagemaker, "nccl-silent-one-stream", {"algo-1": logs["algo-1"]},
                           ResourceConfig=GPU_INSTANCE)  # algo-2's stream not read: its ranks are not named
    assert algo1_alone["headline"].endswith("on ranks 0-3")


@pytest.mark.parametrize(("reason", "words"), [
    pytest.param(("ClientError: Data download failed:Could not download s3://my-bucket/data/train/part-0001.parquet: "
                  "insufficient disk space"), "input_mode: FastFile, or Pipe", id="input-download"),
    pytest.param("ClientError: Artifact upload failed:Insufficient disk space", "save less there", id="artifact-upload"),
])
def test_sagemakers_own_disk_space_failures_on_local_nvme_are_not_told_to_raise_volume_size_gb(stubbed_sagemaker,
                                                                                                reason, words):
    """The input download before the script and the packing of model.tar.gz after it, on an ml.g5.12xlarge, whose
    /opt/ml is its NVMe instance store. Before: `raise instance.volume_size_gb`, which SageMaker ignores there, so
    the resubmitted job fails the same way; now what does change it, and more instance storage."""
    cause = cause_of(stubbed_sagemaker, "sm-disk-nvme", {}, mode="none", reason=reason, ResourceConfig=GPU_INSTANCE)
    assert cause["headline"] == f"the job failed: {reason}"
    assert "raise instance.volume_size_gb" not in cause["fix"] and "changes nothing there" in cause["fix"]
    assert "ml.g5.12xlarge" in cause["fix"] and words in cause["fix"] and "more instance storage" in cause["fix"]

    stubbed_sagemaker.stubbers["sagemaker"].add_response(
        "describe_training_job", failed("sm-disk", reason=reason, ResourceConfig=GPU_INSTANCE))
    assert "raise instance.volume_size_gb" not in JobClient("sm-disk", stubbed_sagemaker).failure_cause().fix


KEY = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
FSX = {"ChannelName": "train", "DataSource": {"FileSystemDataSource": {
    "FileSystemId": "fs-0a1b2c3d4e5f67890", "FileSystemAccessMode": "ro", "FileSystemType": "FSxLustre",
    "DirectoryPath": "/fsx/train"}}}


@pytest.mark.parametrize(("reason", "job", "category", "words"), [
    pytest.param(("ClientError: Data download failed:Could not download s3://my-bucket/data/train/part-0001.parquet: "
                  'Connect timeout on endpoint URL: "https://my-bucket.s3.us-east-1.amazonaws.com/data/train/'
                  'part-0001.parquet"'), {}, "data_download", "an S3 VPC endpoint or a NAT gateway",
                 id="no-route-to-s3"),
    pytest.param(f"ClientError: Failed to attach the instance's volume: KMS key {KEY} is not accessible: AccessDenied",
                 {"ResourceConfig": {"InstanceType": "ml.c5.2xlarge", "InstanceCount": 1, "VolumeSizeInGB": 30,
                                     "VolumeKmsKeyId": KEY}},
                 "kms_key", f"volume_kms_key {KEY}", id="kms-refused"),
    pytest.param("ClientError: Cannot pull algorithm container. Either the image does not exist or its permissions are "
                 "incorrect.",
                 {"AlgorithmSpecification": {"TrainingInputMode": "File", "TrainingImage": (
                     "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.3.0-gpu-py311")}},
                 "image_pull", "the image is in us-west-2's ECR", id="image-in-another-region"),
    pytest.param("ClientError: Failed to mount the file system fs-0a1b2c3d4e5f67890 on the instance.",
                 {"InputDataConfig": [FSX]}, "file_system_mount", "FSxLustre fs-0a1b2c3d4e5f67890:/fsx/train",
                 id="fsx-mount"),
])
def test_client_errors_of_the_jobs_setup_are_named_with_what_in_the_job_to_change(stubbed_sagemaker, reason, job,
                                                                                  category, words):
    """SageMaker's ClientErrors about the job's setup, before any host wrote a line. Before: a download without a
    route to S3 got `check the spec's inputs`, a KMS key, an FSx mount: no cause and no fix, an image in another
    region a list of every possibility; now each its cause and a fix naming what in the job to change."""
    cause = cause_of(stubbed_sagemaker, f"setup-{category.replace('_', '-')}", {}, mode="none", reason=reason, **job)
    assert (cause["category"], cause["headline"]) == (category, f"the job failed: {reason}")
    assert words in cause["fix"]

    stubbed_sagemaker.stubbers["sagemaker"].add_response("describe_training_job", failed("setup", reason=reason, **job))
    stubbed_sagemaker.sent.clear()
    assert JobClient("setup", stubbed_sagemaker).failure_cause().category == category
    assert stubbed_sagemaker.sent == []


def test_an_image_in_the_jobs_own_region_keeps_the_checks_of_an_image_that_cannot_be_pulled(stubbed_sagemaker):
    """The region is no cause where image and job share it: the fix stays the role's and the tag's checks."""
    reason = ("ClientError: Cannot pull algorithm container. Either the image does not exist or its permissions are "
              "incorrect.")
    image = {"TrainingInputMode": "File",
             "TrainingImage": "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training:2.3.0-gpu-py311"}
    cause = cause_of(stubbed_sagemaker, "same-region-pull", {}, mode="none", reason=reason,
                     AlgorithmSpecification=image)
    assert "ecr:BatchGetImage" in cause["fix"] and "the image is in" not in cause["fix"]
