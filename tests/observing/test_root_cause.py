"""The root cause a failed job leads with, read from its hosts' output by the one reader of local runs and
SageMaker jobs: C++'s std::terminate (no Python traceback), torch.distributed's `[rankN]:` prefixes, peers that
only lost the failing rank, argparse's rejection, and each classified cause with its fix."""

from __future__ import annotations

import pytest
from recorded_sagemaker_logs import (DATALOADER_WORKER_KILLED, NCCL_OUT_OF_MEMORY, NCCL_PEER_LOST,
                                     nccl_watchdog_timeout)

from orchestrator.observing.root_cause import MPI, PROCESS, TORCHRUN, Launcher, SourcePaths, read_cause

# What torchrun printed when rank 2 aborted at exit in gloo's teardown race (a CI run, shortened).
TORCHRUN_ABORT = """\
{"rank": 2, "world_size": 4, "final_loss": 4.3167924880981445}
terminate called without an active exception
W1122 21:05:14.093000 30668 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process 30674 closing signal SIGTERM
E1122 21:05:14.105000 30668 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: -6) local_rank: 0 (pid: 30672) of binary: /usr/bin/python
Traceback (most recent call last):
  File "/usr/lib/python3.11/site-packages/torch/distributed/launcher/api.py", line 383, in launch_agent
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
=========================================================
train.py FAILED
---------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-11-22_21:05:14
  host      : algo-2
  rank      : 2 (local_rank: 0)
  exitcode  : -6 (pid: 30672)
""".splitlines()

NCCL_WATCHDOG = """\
step 12 loss 0.41
terminate called after throwing an instance of 'c10::DistBackendError'
  what():  [Rank 1] Watchdog caught collective operation timeout:  WorkNCCL(SeqNum=7, OpType=ALLREDUCE)
""".splitlines()


def test_a_torchrun_rank_aborted_by_terminate_is_named_with_the_terminate_line():
    cause = read_cause({"algo-2": TORCHRUN_ABORT}, _torchrun(["algo-1", "algo-2"], 2), exit_codes={"algo-2": 1})
    assert cause.headline() == "algo-2 (rank 2) failed: terminate called without an active exception"


def test_an_uncaught_cpp_exception_is_named_with_its_what():
    cause = read_cause({"algo-2": NCCL_WATCHDOG}, _one_process(["algo-1", "algo-2"]), exit_codes={"algo-2": 134})
    assert cause.headline() == ("algo-2 (rank 1) failed: terminate called after throwing an instance of "
                                "'c10::DistBackendError' (what(): [Rank 1] Watchdog caught collective operation "
                                "timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE))")


def test_a_python_traceback_printed_first_still_leads():
    lines = ["Traceback (most recent call last):", '  File "train.py", line 3, in <module>',
             "ValueError: bad shape", "terminate called without an active exception"]
    cause = read_cause({"algo-1": lines}, _one_process(["algo-1"]), exit_codes={"algo-1": 1})
    assert cause.headline() == "algo-1 (rank 0) failed: ValueError: bad shape at train.py:3"


# torchrun on algo-1 when rank 1 (on algo-2) raised: rank 0 reports its peer's closed socket, prefixed [rank0]:.
RANK0_CONSEQUENCE = """\
[rank0]: Traceback (most recent call last):
[rank0]:   File "/runs/job/algo-1/code/train.py", line 11, in <module>
[rank0]:     dist.barrier()
[rank0]: RuntimeError: [../gloo/transport/tcp/pair.cc:537] Read error [127.0.0.1]:34014: Connection reset by peer.
E1124 10:41:01.543000 23094 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) local_rank: 0
Traceback (most recent call last):
  File "/venv/bin/torchrun", line 6, in <module>
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
Root Cause (first observed failure):
[0]:
  rank      : 0 (local_rank: 0)
""".splitlines()
RANK1_FAILURE = """\
[rank1]: Traceback (most recent call last):
[rank1]:   File "/runs/job/algo-2/code/train.py", line 30, in <module>
[rank1]:     main()
[rank1]:   File "/runs/job/algo-2/code/train.py", line 10, in main
[rank1]:     raise ValueError(f"bad labels on rank {rank}")
[rank1]: ValueError: bad labels on rank 1
E1124 10:41:01.554000 23093 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) local_rank: 0
Traceback (most recent call last):
  File "/venv/bin/torchrun", line 6, in <module>
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
""".splitlines()


def test_torch_distributed_wrapped_errors_name_the_rank_its_exception_and_the_users_file():
    source = SourcePaths(("/runs/job/algo-1/code", "/runs/job/algo-2/code"), shown="src")
    cause = read_cause({"algo-2": RANK1_FAILURE}, _torchrun(["algo-1", "algo-2"], 1), source=source)
    assert cause.headline() == "algo-2 (rank 1) failed: ValueError: bad labels on rank 1 at src/train.py:10"
    assert cause.category == "exception"


def test_a_peer_lost_error_leads_only_where_nothing_else_was_said():
    cause = read_cause({"algo-1": RANK0_CONSEQUENCE}, _torchrun(["algo-1", "algo-2"], 1))
    assert cause.rank == 0 and "Connection reset by peer" in cause.exception
    both = read_cause({"algo-1": RANK0_CONSEQUENCE, "algo-2": RANK1_FAILURE}, _torchrun(["algo-1", "algo-2"], 1))
    assert both.headline() == "algo-2 (rank 1) failed: ValueError: bad labels on rank 1"  # not /opt/ml/code: no at


def test_within_one_output_the_failing_ranks_error_leads_over_a_consequence_printed_first():
    lines = RANK0_CONSEQUENCE[:4] + RANK1_FAILURE[:6]
    cause = read_cause({"algo-1": lines}, _torchrun(["algo-1"], 2))
    assert cause.headline() == "algo-1 (rank 1) failed: ValueError: bad labels on rank 1"


def _torchrun(group_hosts: list[str], per_host: int) -> Launcher:
    return Launcher(TORCHRUN, tuple(group_hosts), per_host)


def _one_process(group_hosts: list[str]) -> Launcher:
    """Mode none: each host runs the script once, as the rank of its place in the host list."""
    return Launcher(PROCESS, tuple(group_hosts))


# torchrun's host when its worker rejected an argument before init_process_group: no `[rankN]:` prefix, so the rank
# comes from torchrun's summary (a local run, shortened).
TORCHRUN_ARGPARSE = """\
usage: strict_args.py [-h] [--epochs EPOCHS]
strict_args.py: error: unrecognized arguments: --learning_rate 0.1
E1126 14:06:33.312000 8031 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 2) local_rank: 0 (pid: 8099) of binary: /usr/bin/python
Traceback (most recent call last):
  File "/venv/bin/torchrun", line 6, in <module>
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
Root Cause (first observed failure):
[0]:
  host      : localhost
  rank      : 1 (local_rank: 0)
  exitcode  : 2 (pid: 8099)
""".splitlines()


def test_torchruns_own_child_failed_error_never_hides_the_workers_argparse_error():
    cause = read_cause({"algo-2": TORCHRUN_ARGPARSE}, _torchrun(["algo-1", "algo-2"], 1))
    assert cause.headline() == ("algo-2 (rank 1) failed: strict_args.py: error: unrecognized arguments: "
                                "--learning_rate 0.1")
    assert cause.detail == ("usage: strict_args.py [-h] [--epochs EPOCHS]",) and cause.exit_code == 2
    assert cause.category == "argument_rejected"


def test_the_fix_names_only_the_rejected_options_not_those_a_parser_lists_after_them():
    """smtrain's train.py appends `; train.py takes --trainer, --model, ...` to argparse's message; masking a
    secret-looking option's value keeps the `;`."""
    lines = ["train.py: error: unrecognized arguments: --api-key **** --lrr 1; train.py takes --trainer, --lr"]
    cause = read_cause({"algo-1": lines}, _one_process(["algo-1"]))
    assert cause.category == "argument_rejected"
    assert cause.fix.startswith("the script's argument parser rejects --api-key, --lrr: name the hyperparameter")


def test_the_same_error_on_every_rank_names_the_lowest_rank_whatever_the_order_or_host_that_exited_first():
    """Which launcher exits first, and whose lines come first, varies from run to run: the reason does not."""
    algo1 = ["usage: t.py [-h]", "t.py: error: unrecognized arguments: --lr 1"]
    algo2 = ["usage: t.py [-h]", "t.py: error: unrecognized arguments: --lr 1"]
    hosts = ["algo-1", "algo-2"]
    causes = {read_cause(logs, _one_process(hosts), exit_codes=codes).headline()
              for logs in ({"algo-1": algo1, "algo-2": algo2}, {"algo-2": algo2, "algo-1": algo1})
              for codes in ({"algo-1": 2, "algo-2": 2}, {"algo-2": 2, "algo-1": -15}, {"algo-1": 2, "algo-2": -15})}
    assert causes == {"algo-1 (rank 0) failed: t.py: error: unrecognized arguments: --lr 1"}


def test_a_rank_stopped_before_it_printed_yields_to_the_rank_that_failed():
    cause = read_cause({"algo-1": ["step 3"], "algo-2": ["Traceback (most recent call last):",
                                                         '  File "/opt/ml/code/train.py", line 9, in <module>',
                                                         "TypeError: bad batch"]},
                       _one_process(["algo-1", "algo-2"]), exit_codes={"algo-1": -15, "algo-2": 1},
                       source=SourcePaths(shown="src"))
    assert cause.headline() == "algo-2 (rank 1) failed: TypeError: bad batch at src/train.py:9"


def test_a_system_exit_message_is_the_failing_ranks_last_line():
    cause = read_cause({"algo-1": ["loading data", "no training data in /opt/ml/input/data/train"]},
                       _one_process(["algo-1"]), exit_codes={"algo-1": 1})
    assert cause.text().splitlines()[:2] == ["algo-1 (rank 0) exited with code 1",
                                             "last line: no training data in /opt/ml/input/data/train"]


def test_a_rank_that_ended_itself_without_an_error_shows_its_last_line():
    """Before: only `exited with code 3`: the last line was shown for exit code 1 alone."""
    cause = read_cause({"algo-1": ["step 1 loss 2.3", "checkpoint written"]}, _one_process(["algo-1"]),
                       exit_codes={"algo-1": 3})
    assert cause.text().splitlines()[:2] == ["algo-1 (rank 0) exited with code 3", "last line: checkpoint written"]


def test_a_bare_exit_code_says_what_ends_a_process_that_way_and_where_to_read():
    """Before, category `exit` had no fix at all: a rank that ended itself silently left nothing to go on."""
    cause = read_cause({"algo-1": ["step 1 loss 2.3"]}, _one_process(["algo-1"]), exit_codes={"algo-1": 3})
    assert cause.category == "exit"
    assert cause.fix.startswith("the process ended itself with exit code 3, without a Python error: `sys.exit(3)`")
    assert "`os._exit(3)` in it or in a library it calls" in cause.fix
    assert cause.fix.endswith("(`smtrain logs JOB --host algo-N --tail 50`)")


def test_a_segfault_reads_the_same_through_a_shell_and_under_torchrun():
    """Mode none's shell reports a crash as 128 + the signal (139), torchrun as -11; before, the first read
    `exited with code 139`, the second `was killed by signal 11 (SIGSEGV)`."""
    said = ["step 1 loss 2.3"]
    through_shell = read_cause({"algo-1": said}, _one_process(["algo-1"]), exit_codes={"algo-1": 139})
    torchrun = [line.replace("-6", "-11") for line in TORCHRUN_ABORT[2:]]
    under_torchrun = read_cause({"algo-2": [f"[rank2]:{said[0]}", *torchrun]}, _torchrun(["algo-1", "algo-2"], 2),
                                exit_codes={"algo-2": 1})
    assert through_shell.headline() == "algo-1 (rank 0) was killed by signal 11 (SIGSEGV)"
    assert under_torchrun.headline() == "algo-2 (rank 2) was killed by signal 11 (SIGSEGV)"
    assert through_shell.category == under_torchrun.category == "signal"


def test_a_signal_without_a_name_in_a_table_reads_the_same_as_an_exit_code_and_a_returncode():
    """The names came from a table of ten signals: another (a real-time one) read `killed by signal 35 (signal)`
    and its fix `died of signal 35`; a kill through a shell (128 + N) and as Python's returncode (-N) agree."""
    said = ["step 1 loss 2.3"]
    causes = [read_cause({"algo-1": said}, _one_process(["algo-1"]), exit_codes={"algo-1": code})
              for code in (128 + 35, -35)]
    assert {cause.headline() for cause in causes} == {"algo-1 (rank 0) was killed by signal 35 (Real-time signal 1)"}
    assert {cause.category for cause in causes} == {"signal"}
    assert causes[0].fix == causes[1].fix and "died of Real-time signal 1 without a Python error" in causes[0].fix
    killed = [read_cause({"algo-1": said}, _one_process(["algo-1"]), exit_codes={"algo-1": code}) for code in (137, -9)]
    assert {cause.headline() for cause in killed} == {"algo-1 (rank 0) was killed by signal 9 (SIGKILL)"}


def test_an_exit_code_above_every_signal_is_a_plain_exit_in_the_ranking_too():
    """Exit 200 names no signal (128 + 72): its headline said a plain exit, while the ranking took it for a fatal
    signal and put it before the first host's own exit."""
    cause = read_cause({"algo-1": [], "algo-2": []}, _one_process(["algo-1", "algo-2"]),
                       exit_codes={"algo-1": 3, "algo-2": 200})
    assert cause.headline() == "algo-1 (rank 0) exited with code 3"


def test_mpi_ranks_are_named_by_their_tags_and_placed_on_their_hosts():
    lines = ["[1,0]<stdout>:step 1", "[1,3]<stderr>:Traceback (most recent call last):",
             '[1,3]<stderr>:  File "/opt/ml/code/train.py", line 5, in <module>', "[1,3]<stderr>:KeyError: 'label'",
             "[1,0]<stderr>:RuntimeError: Connection reset by peer"]
    cause = read_cause({"algo-1": lines}, Launcher(MPI, ("algo-1", "algo-2"), 2))
    assert cause.headline() == "algo-2 (rank 3) failed: KeyError: 'label' at train.py:5"


# Open MPI's notice of rank 1 (on algo-2) killed by SIGKILL, as each launcher printed it here: Open MPI 5.0.11's
# mpirun runs prterun, whose help text breaks the line; Open MPI 4.1.4's mpirun and orterun name themselves; the
# DLCs' mpirun is a wrapper of mpirun.real.
SIGKILL_NOTICES = {
    "Open MPI 5 prterun": ["prterun noticed that process rank 1 with PID 22 on node algo-2 exited on",
                           "signal 9 (Killed)."],
    "Open MPI 4 mpirun": ["mpirun noticed that process rank 1 with PID 0 on node algo-2 exited on signal 9 (Killed)."],
    "Open MPI 4 orterun": ["orterun noticed that process rank 1 with PID 0 on node algo-2 exited on signal 9 "
                           "(Killed)."],
    "the DLCs' mpirun.real": ["mpirun.real noticed that process rank 1 with PID 0 on node algo-2 exited on signal 9 "
                              "(Killed)."],
}


@pytest.mark.parametrize("notice", SIGKILL_NOTICES.values(), ids=SIGKILL_NOTICES.keys())
def test_a_rank_killed_under_every_open_mpi_launcher_is_named_with_its_host_and_signal(notice):
    """Before, Open MPI 5's broken line named no rank: the reason blamed algo-1, where mpirun runs."""
    dashes = "-" * 74
    lines = ["[1,mpirank:0,algo-1]<stdout>: rank 0 started", "[1,mpirank:1,algo-2]<stdout>: rank 1 started",
             dashes, *notice, dashes]
    cause = read_cause({"algo-1": lines}, Launcher(MPI, ("algo-1", "algo-2"), 1), exit_codes={"algo-1": 137})
    assert cause.headline() == "algo-2 (rank 1) was killed by signal 9 (SIGKILL)"
    assert (cause.host, cause.rank, cause.category) == ("algo-2", 1, "oom_killed")
    assert "OOM killer" in cause.fix


# A 2-host `mpi` job whose rank 1 (algo-2) SIGKILLed itself in an allreduce loop, as Open MPI 5.0.11's mpirun
# printed it here on loopback; which of its two endings a run gets is a race: rank 0's TCP layer notices the closed
# socket and aborts before (`calling "abort"`, mpirun exits 14) or after mpirun reports the signal. Open MPI 4's
# TCP layer says `readv failed` (ompi issue #9218, peridigm issue #98: recv and readv).
_SOCKET_CLOSED = [f"[1,mpirank:0,algo-1]<stderr>: [algo-1:00000] *** {line}" for line in (
    "An error occurred in Socket closed", "reported by process [2009071617,0]", "on a NULL communicator",
    "Unknown error", "MPI_ERRORS_ARE_FATAL (processes in this communicator will now abort,",
    "   and MPI will try to terminate your MPI job as well)")]
_DASHES = "-" * 74
_STARTED = ["[1,mpirank:0,algo-1]<stdout>: rank 0 started", "[1,mpirank:1,algo-2]<stdout>: rank 1 started"]
_LOST_SOCKET = "algo-1 (rank 0) failed: lost its connection to another rank (Open MPI: {}): another rank died first"
PEER_DIED_ENDINGS = {
    "Open MPI 5, the socket first": (
        [*_STARTED, *_SOCKET_CLOSED, _DASHES,
         "prterun has exited due to process rank 0 with PID 0 on node algo-1 calling",
         '"abort". This may have caused other processes in the application to be',
         "terminated by signals sent by prterun (as reported here).", _DASHES], 14,
        ("algo-1", 0, "peer_lost", _LOST_SOCKET.format("Socket closed"))),
    "Open MPI 5, the signal first": (
        [*_STARTED, *_SOCKET_CLOSED, _DASHES,
         "prterun noticed that process rank 1 with PID 22 on node algo-2 exited on", "signal 9 (Killed).", _DASHES],
        137, ("algo-2", 1, "oom_killed", "algo-2 (rank 1) was killed by signal 9 (SIGKILL)")),
    "Open MPI 4, readv": (
        ["[1,0]<stdout>:step 7", "[1,1]<stdout>:step 7", "[1,0]<stderr>:[algo-1][[20066,1],0][btl_tcp_frag.c:241:"
         "mca_btl_tcp_frag_recv] mca_btl_tcp_frag_recv: readv failed: Connection reset by peer (104)"], 1,
        ("algo-1", 0, "peer_lost", _LOST_SOCKET.format("Connection reset by peer"))),
    "Open MPI 4, recv": (
        ["[1,0]<stdout>:step 7", "[1,0]<stderr>:[algo-1][[11356,1],0][btl_tcp.c:559:mca_btl_tcp_recv_blocking] "
         "recv(36) failed: Connection reset by peer (104)"], 1,
        ("algo-1", 0, "peer_lost", _LOST_SOCKET.format("Connection reset by peer"))),
}


@pytest.mark.parametrize(("lines", "exit_code", "named"), PEER_DIED_ENDINGS.values(), ids=PEER_DIED_ENDINGS.keys())
def test_a_rank_whose_peer_died_under_open_mpi_names_it_or_the_rank_that_lost_its_connection(lines, exit_code, named):
    """Before, where Open MPI's TCP layer noticed first, the reason read `algo-1 exited with code 14`: no rank, no
    hint. The rank that died is named where a line says so, else the rank that lost its connection, with where to
    look; the rank's notice leads over the closed socket it caused, whichever was printed first."""
    cause = read_cause({"algo-1": lines}, Launcher(MPI, ("algo-1", "algo-2"), 1), exit_codes={"algo-1": exit_code})
    assert (cause.host, cause.rank, cause.category, cause.headline()) == named
    assert "OOM killer" in cause.fix
    if cause.category == "peer_lost":
        assert "look for the first rank that stopped in the log" in cause.fix


# What the MPI hooks recorded of that job's ranks, every time: rank 1 killed by SIGKILL, rank 0's abort (exit 14).
_RECORDED_ENDS = {("algo-1", 0): 14, ("algo-2", 1): -9}


@pytest.mark.parametrize("ending", ["Open MPI 5, the socket first", "Open MPI 5, the signal first"])
def test_a_local_mpi_run_names_the_rank_that_died_whichever_ending_open_mpi_printed(ending):
    """Before, the race above decided a local run's reason too: about half of the runs blamed rank 0's lost
    connection. With each rank's recorded ending, both endings name rank 1 and its signal, as its notice does."""
    lines, exit_code, _ = PEER_DIED_ENDINGS[ending]
    cause = read_cause({"algo-1": lines, "algo-2": []}, Launcher(MPI, ("algo-1", "algo-2"), 1),
                       exit_codes={"algo-1": exit_code, "algo-2": 0}, rank_exits=_RECORDED_ENDS)
    assert (cause.host, cause.rank, cause.category, cause.headline()) == (
        "algo-2", 1, "oom_killed", "algo-2 (rank 1) was killed by signal 9 (SIGKILL)")
    assert cause.detail == ("last line: rank 1 started",)


# A 2-host `mpi` job whose rank 1 left with `os._exit(3)` in an allreduce loop, printing nothing, as a local run
# (Open MPI 5) logged and recorded it on every run: rank 0 aborted on the closed socket (exit 14) or mpirun stopped
# it first (SIGTERM).
SILENT_EXIT_ENDINGS = {
    "rank 0 aborted": ([*_STARTED[:1], *_SOCKET_CLOSED, _DASHES,
                        "prterun has exited due to process rank 0 with PID 0 on node algo-1 calling",
                        '"abort". This may have caused other processes in the application to be',
                        "terminated by signals sent by prterun (as reported here).", _DASHES], 14),
    "rank 0 stopped": (_STARTED[:1], -15),
}


@pytest.mark.parametrize(("lines", "rank0_end"), SILENT_EXIT_ENDINGS.values(), ids=SILENT_EXIT_ENDINGS.keys())
def test_a_rank_that_exited_without_a_word_leads_over_the_peer_that_lost_its_connection(lines, rank0_end):
    """Before: `algo-1 (rank 0) failed: lost its connection to another rank`, the consequence, where rank 0's abort
    won, and rank 0's SIGTERM by its lower rank where it did not; rank 1's exit is the one of its own."""
    cause = read_cause({"algo-1": lines, "algo-2": []}, Launcher(MPI, ("algo-1", "algo-2"), 1),
                       exit_codes={"algo-1": 14, "algo-2": 0}, rank_exits={("algo-1", 0): rank0_end,
                                                                           ("algo-2", 1): 3})
    assert (cause.host, cause.rank, cause.headline()) == ("algo-2", 1, "algo-2 (rank 1) exited with code 3")


# The same failure under torchrun (mode torch_distributed over gloo, one rank a host), shortened from a local run:
# rank 0 lost its connection to rank 1, whose `os._exit(3)` only torchrun's summary on algo-2 reports.
TORCHRUN_GLOO_PEER_GONE = """\
[rank0]: Traceback (most recent call last):
[rank0]:   File "/opt/ml/code/silent.py", line 8, in <module>
[rank0]:     dist.all_reduce(torch.ones(1))
[rank0]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by \
peer [127.0.0.1]:62092. This is typically caused by a remote worker crashing.
E1128 11:23:00.702000 3 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) local_rank: 0 \
(pid: 14) of binary: /usr/bin/python""".splitlines()
TORCHRUN_SILENT_EXIT = """\
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
Root Cause (first observed failure):
[0]:
  time      : 2026-11-28_11:22:59
  host      : localhost
  rank      : 1 (local_rank: 0)
  exitcode  : 3 (pid: 13)
  error_file: <N/A>""".splitlines()


def test_under_torchrun_a_rank_that_exited_without_a_word_leads_over_the_peer_that_lost_it():
    """Before: `algo-1 (rank 0) failed: RuntimeError: ... Connection closed by peer`, on every run."""
    cause = read_cause({"algo-1": TORCHRUN_GLOO_PEER_GONE, "algo-2": TORCHRUN_SILENT_EXIT},
                       _torchrun(["algo-1", "algo-2"], 1), exit_codes={"algo-1": 1, "algo-2": 1})
    assert cause.headline() == "algo-2 (rank 1) exited with code 3"


def test_a_rank_the_launcher_stopped_is_no_cause_for_its_last_line():
    """mpirun stops rank 0 with SIGTERM once rank 1 was killed: its last line (`rank 0 started`) is no last word
    of a failure, which would lead as the lowest rank's over rank 1's."""
    lines = [*_STARTED, _DASHES, *SIGKILL_NOTICES["Open MPI 5 prterun"], _DASHES]
    cause = read_cause({"algo-1": lines}, Launcher(MPI, ("algo-1", "algo-2"), 1), exit_codes={"algo-1": 137},
                       rank_exits={("algo-1", 0): -15, ("algo-2", 1): -9})
    assert cause.headline() == "algo-2 (rank 1) was killed by signal 9 (SIGKILL)"


def test_a_recorded_ending_never_outranks_a_ranks_own_error():
    """mpi4py aborts on an uncaught exception, and the launcher then stops the other ranks: the traceback leads
    over every recorded ending (the aborting rank's exit code, the others' SIGTERM)."""
    lines = ["[1,mpirank:1,algo-2]<stderr>: Traceback (most recent call last):",
             '[1,mpirank:1,algo-2]<stderr>:   File "train.py", line 9, in <module>',
             "[1,mpirank:1,algo-2]<stderr>: ValueError: bad batch"]
    cause = read_cause({"algo-1": lines}, Launcher(MPI, ("algo-1", "algo-2"), 1), exit_codes={"algo-1": 1},
                       rank_exits={("algo-1", 0): -15, ("algo-2", 1): 1})
    assert cause.headline() == "algo-2 (rank 1) failed: ValueError: bad batch at train.py:9"


@pytest.mark.parametrize(("exit_code", "said", "not_said"), [
    (-9, "killed by SIGKILL (signal 9)", "exit 137"),
    (137, "exit 137 is a launcher's or shell's 128 + 9", "(signal 9)"),
])
def test_the_oom_killers_fix_says_how_the_process_ended_as_its_exit_code_reports_it(exit_code, said, not_said):
    """A rank killed by signal 9 did not exit 137: only a launcher or shell that ran it reports 128 + 9."""
    cause = read_cause({"algo-1": ["step 3"]}, Launcher(PROCESS, ("algo-1",)), exit_codes={"algo-1": exit_code})
    assert cause.category == "oom_killed"
    assert said in cause.fix and not_said not in cause.fix


# Open MPI 4's mpirun (SageMaker's images) on algo-1 when algo-2's daemon died with its rank, which said nothing.
ORTE_LOST_ALGO_2 = """\
[1,0]<stdout>:step 7
[1,1]<stdout>:step 7
--------------------------------------------------------------------------
ORTE has lost communication with a remote daemon.

  HNP daemon   : [[7462,0],0] on node algo-1
  Remote daemon: [[7462,0],1] on node algo-2

This is usually due to either a failure of the TCP network
connection to the node, or possibly an internal failure of
the daemon itself. We cannot recover from this failure, and
therefore will terminate the job.
--------------------------------------------------------------------------""".splitlines()


def test_a_host_whose_open_mpi_daemon_died_is_named_unless_a_rank_raised_first():
    launcher = Launcher(MPI, ("algo-1", "algo-2"), 1)
    cause = read_cause({"algo-1": ORTE_LOST_ALGO_2}, launcher, exit_codes={"algo-1": 205})
    assert (cause.host, cause.rank, cause.category) == ("algo-2", None, "host_lost")
    assert cause.headline() == "algo-2 (Open MPI daemon) failed: ORTE has lost communication with a remote daemon"
    raised = ["[1,0]<stderr>:Traceback (most recent call last):",
              '[1,0]<stderr>:  File "/opt/ml/code/train.py", line 9, in <module>', "[1,0]<stderr>:ValueError: bad"]
    cause = read_cause({"algo-1": [*raised, *ORTE_LOST_ALGO_2]}, launcher, exit_codes={"algo-1": 205})
    assert cause.headline() == "algo-1 (rank 0) failed: ValueError: bad at train.py:9"


def test_a_warning_that_mentions_a_watchdog_is_not_the_ranks_error():
    lines = ["[rank0]:[W1126 10:41:01.123 ProcessGroupNCCL.cpp:1250] Warning: the watchdog will abort on timeout",
             "[rank0]: Traceback (most recent call last):",
             '[rank0]:   File "/opt/ml/code/train.py", line 4, in <module>',
             "[rank0]: ValueError: no labels"]
    cause = read_cause({"algo-1": lines}, _torchrun(["algo-1"], 1))
    assert cause.headline() == "algo-1 (rank 0) failed: ValueError: no labels at train.py:4"


def test_a_dataloader_worker_the_oom_killer_ended_is_classified_by_the_exception_it_was_raised_from():
    """Before: category `exception`, no fix, for both the wrapper and (older torch) the worker's own error."""
    cause = read_cause({"algo-1": DATALOADER_WORKER_KILLED}, _torchrun(["algo-1"], 4))
    assert cause.headline() == ("algo-1 (rank 0) failed: RuntimeError: DataLoader worker (pid(s) 4567) exited "
                                "unexpectedly at train.py:60")
    assert cause.detail == ("caused by: RuntimeError: DataLoader worker (pid 4567) is killed by signal: Killed.",)
    assert cause.category == "oom_killed" and "num_workers" in cause.fix
    alone = read_cause({"algo-1": DATALOADER_WORKER_KILLED[:6]}, _torchrun(["algo-1"], 4))
    assert (alone.category, alone.detail) == ("oom_killed", ())


def test_an_out_of_memory_nccl_reports_in_the_last_lines_of_its_message_is_the_ranks_own_error():
    """Before: algo-1 (rank 0)'s lost peer, the lowest rank of two NCCL errors, with the collective-timeout fix."""
    cause = read_cause({"algo-1": NCCL_PEER_LOST, "algo-2": NCCL_OUT_OF_MEMORY}, _torchrun(["algo-1", "algo-2"], 4))
    assert (cause.host, cause.rank, cause.category) == ("algo-2", 5, "cuda_out_of_memory")
    said = "ncclUnhandledCudaError: Call to CUDA function failed. Last error: Cuda failure 'out of memory'"
    assert cause.detail == (f"message: {said}",)
    assert "lower the per-device batch size" in cause.fix


# A DataLoader worker raised: the main process reraises it wrapped, with the worker's traceback in its message (a local
# run's log, torch 2.13, shortened).
TORCH = "/opt/conda/lib/python3.11/site-packages/torch"
DATALOADER_WORKER = f"""\
batch torch.Size([2, 2])
Traceback (most recent call last):
  File "/opt/ml/code/dl.py", line 15, in <module>
    for batch in DataLoader(Shards(), num_workers=1, batch_size=2):
  File "{TORCH}/utils/data/dataloader.py", line 1567, in _process_data
    data.reraise()
  File "{TORCH}/_utils.py", line 794, in reraise
    raise exception
ValueError: Caught ValueError in DataLoader worker process 0.
Original Traceback (most recent call last):
  File "{TORCH}/utils/data/_utils/worker.py", line 374, in _worker_loop
    data = fetcher.fetch(index)  # type: ignore[possibly-undefined]
  File "{TORCH}/utils/data/_utils/fetch.py", line 54, in <listcomp>
    data = [self.dataset[idx] for idx in possibly_batched_index]
            ~~~~~~~~~~~~^^^^^
  File "/opt/ml/code/dl.py", line 11, in __getitem__
    raise ValueError(f"corrupt record {{index}}")
ValueError: corrupt record 3
""".splitlines()


def test_an_error_raised_in_a_dataloader_worker_is_the_workers_own_at_its_line():
    """Before: `algo-1 (rank 0) failed: ValueError: Caught ValueError in DataLoader worker process 0. at
    src/dl.py:15`, the wrapper at the loop; now the worker's error where the user's code raised it."""
    cause = read_cause({"algo-1": DATALOADER_WORKER}, _one_process(["algo-1"]), exit_codes={"algo-1": 1},
                       source=SourcePaths(shown="src"))
    assert cause.headline() == "algo-1 (rank 0) failed: ValueError: corrupt record 3 at src/dl.py:11"
    assert cause.detail == ("reraised as: ValueError: Caught ValueError in DataLoader worker process 0.",)


# Mode none over gloo, recorded from a local run: rank 1 never joined the second all_reduce, and rank 0's gloo
# timed out waiting for it (`init_process_group(timeout=...)`); smtrain then stopped rank 1 with SIGTERM.
GLOO_TIMEOUT = """\
[rank0]: Traceback (most recent call last):
[rank0]:   File "/opt/ml/code/train.py", line 12, in <module>
[rank0]:     dist.all_reduce(torch.ones(1))
[rank0]:   File "/usr/local/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", line 3252, in all_reduce
[rank0]:     work.wait()
[rank0]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out \
waiting 5000ms for recv operation to complete""".splitlines()


def test_a_gloo_collective_that_timed_out_names_the_rank_that_never_joined_it():
    """Before: `exception` with no fix, as if rank 0's own code were at fault; then rank 0, the rank that waited.
    gloo's timeout names no rank: the rank table's rank that reported none is the one the others waited for."""
    cause = read_cause({"algo-1": GLOO_TIMEOUT, "algo-2": ["rank 1 loading forever"]},
                       _one_process(["algo-1", "algo-2"]), exit_codes={"algo-1": 1, "algo-2": 143},
                       source=SourcePaths(shown="src"))
    assert cause.headline() == ("algo-2 (rank 1) failed: gloo: Timed out waiting 5000ms for recv operation to "
                                "complete on rank 0; rank 1 reported no timeout: it never joined it")
    assert cause.category == "collective_timeout" and "waited in a collective for rank 1" in cause.fix


def test_a_gloo_timeout_names_a_rank_of_the_rank_table_whose_host_printed_nothing():
    """A rank that never printed and whose end no launcher reported is still in the rank table: 2 ranks a host."""
    lines = [line.replace("[rank0]", f"[rank{rank}]") for rank in (0, 1, 3) for line in GLOO_TIMEOUT]
    cause = read_cause({"algo-1": lines[:12], "algo-2": lines[12:]}, _torchrun(["algo-1", "algo-2"], 2))
    assert (cause.host, cause.rank, cause.category) == ("algo-2", 2, "collective_timeout")
    assert cause.exception.endswith("on ranks 0-1, 3; rank 2 reported no timeout: it never joined it")


@pytest.mark.parametrize("timeout", [
    pytest.param(GLOO_TIMEOUT, id="gloo"),
    pytest.param(nccl_watchdog_timeout(0, 5001), id="nccl"),
])
def test_a_collective_timeout_names_the_rank_of_a_host_whose_log_was_read_and_held_nothing(timeout):
    """A local run under torchrun, one rank a host: rank 1 stalled before the collective and smtrain stopped it
    before algo-2's log got a line (the agent's too may say nothing). Its log was read: an empty log is still one,
    so rank 1 is the one rank 0 waited for. Before: NCCL's named rank 0, the rank that waited, as if algo-2's log
    were not there."""
    cause = read_cause({"algo-1": timeout, "algo-2": []}, _torchrun(["algo-1", "algo-2"], 1))
    assert (cause.host, cause.rank, cause.category) == ("algo-2", 1, "collective_timeout")
    assert cause.exception.endswith("on rank 0; rank 1 reported no timeout: it never joined it")


def test_a_gloo_timeout_yields_to_the_error_of_the_rank_it_waited_for():
    """Before: both ranked as errors of their own, so rank 0's timeout led over rank 1's error by its lower rank."""
    failed = ["Traceback (most recent call last):", '  File "/opt/ml/code/train.py", line 30, in <module>',
              "ValueError: corrupt shard 7"]
    cause = read_cause({"algo-1": GLOO_TIMEOUT, "algo-2": failed}, _one_process(["algo-1", "algo-2"]),
                       exit_codes={"algo-1": 1, "algo-2": 1}, source=SourcePaths(shown="src"))
    assert cause.headline() == "algo-2 (rank 1) failed: ValueError: corrupt shard 7 at src/train.py:30"


@pytest.mark.parametrize("error", [
    "ValueError: Error initializing torch.distributed using env:// rendezvous: environment variable RANK expected, "
    "but not set",
    "KeyError: 'LOCAL_RANK'",
])
def test_a_torchrun_variable_read_outside_torchrun_says_which_mode_sets_it_and_how_else_to_get_the_rank(error):
    """Before: a bare `exception` with no fix, where validate's own fix for torch_distributed on a CPU instance
    (mode none) leads a torchrun script straight into it."""
    lines = ["Traceback (most recent call last):", '  File "/opt/ml/code/train.py", line 27, in <module>', error]
    cause = read_cause({"algo-1": lines, "algo-2": lines}, _one_process(["algo-1", "algo-2"]),
                       exit_codes={"algo-1": 1, "algo-2": 1}, source=SourcePaths(shown="src"))

    assert cause.category == "launcher_variable", cause
    assert "set by torchrun, not by SageMaker" in cause.fix and "mode: torch_distributed" in cause.fix
    assert "json.loads(SM_HOSTS).index(SM_CURRENT_HOST)" in cause.fix and "OMPI_COMM_WORLD_RANK" in cause.fix


def test_lightnings_world_size_mismatch_says_num_nodes_is_the_instance_count():
    """Lightning's `Trainer(num_nodes=...)` left at its default of 1 on a 2-host job: Lightning names the product and
    the world size but not where the number of nodes comes from on SageMaker. Before: a bare `exception`, no fix."""
    lines = ["Traceback (most recent call last):", '  File "/opt/ml/code/train.py", line 57, in <module>',
             "ValueError: You set `devices=1` and `num_nodes=1` in Lightning, but the product (1 * 1) does not match "
             "the world size (2)."]
    cause = read_cause({"algo-1": lines, "algo-2": lines}, _torchrun(["algo-1", "algo-2"], 1),
                       exit_codes={"algo-1": 1, "algo-2": 1}, source=SourcePaths(shown="src"))

    assert cause.headline().endswith("does not match the world size (2). at src/train.py:57")
    assert cause.category == "world_size_mismatch", cause
    assert "num_nodes=instance.count" in cause.fix and "len(json.loads(os.environ['SM_HOSTS']))" in cause.fix
    assert "devices='auto'" in cause.fix


@pytest.mark.parametrize(("error", "said"), [
    ("KeyError: 'SM_CHANNEL_TEST'", "SM_CHANNEL_TEST is set only for a channel named test: add `test: s3://...` "
                                    "under `inputs:`"),
    ("KeyError: 'SM_HP_WARMUP-STEPS'", "SM_HP_WARMUP-STEPS is set only for a hyperparameter the job is given: add "
                                       "`warmup-steps` under `hyperparameters:`"),
    ("KeyError: 'SM_MASTER_ADDR'", "SageMaker's training toolkit does not set SM_MASTER_ADDR"),
])
def test_a_sagemaker_variable_the_job_does_not_set_says_what_sets_it(error, said):
    """Before: a bare `exception` with no fix, though the spec decides which SM_CHANNEL_ and SM_HP_ variables exist."""
    lines = ["Traceback (most recent call last):", '  File "/opt/ml/code/train.py", line 3, in <module>', error]
    cause = read_cause({"algo-1": lines}, _one_process(["algo-1"]), exit_codes={"algo-1": 1},
                       source=SourcePaths(shown="src"))

    assert cause.category == "sagemaker_variable" and said in cause.fix, cause


def test_a_rejected_option_the_usage_spells_otherwise_is_named_as_the_script_takes_it():
    """Before: only `hyphens and underscores differ`, leaving the reader to find `--batch-size` in a wrapped usage."""
    lines = ["usage: train.py [-h] [--epochs EPOCHS] [--lr LR] [--batch-size BATCH_SIZE]",
             "                [--hidden HIDDEN] [--checkpoint-dir CHECKPOINT_DIR]",
             "train.py: error: unrecognized arguments: --batch_size 64 --hiden 8 --seed 1"]
    cause = read_cause({"algo-1": lines}, _one_process(["algo-1"]), exit_codes={"algo-1": 2})

    assert cause.category == "argument_rejected"
    assert cause.fix.endswith("; the script spells --batch_size as --batch-size (hyperparameter batch-size), --hiden "
                              "as --hidden (hyperparameter hidden)"), cause.fix


def test_a_client_without_a_region_says_the_container_sets_aws_region_not_the_one_boto3_reads(monkeypatch):
    """botocore's own NoRegionError, as a script's traceback prints it: SageMaker sets AWS_REGION in the container,
    boto3 reads AWS_DEFAULT_REGION, so `boto3.client("sagemaker")` fails there though it ran on a laptop with a
    profile region. Before: a bare `exception`, with no fix."""
    import traceback

    import boto3
    from botocore.exceptions import NoRegionError

    for name in ("AWS_DEFAULT_REGION", "AWS_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    with pytest.raises(NoRegionError) as raised:
        boto3.Session().client("sagemaker")
    lines = ["Traceback (most recent call last):", '  File "/opt/ml/code/train.py", line 5, in <module>',
             *traceback.format_exception_only(raised.value)]

    cause = read_cause({"algo-1": lines}, _one_process(["algo-1"]), exit_codes={"algo-1": 1},
                       source=SourcePaths(shown="src"))

    assert cause.exception == "botocore.exceptions.NoRegionError: You must specify a region."
    assert cause.category == "no_region"
    assert 'boto3.client(..., region_name=os.environ["AWS_REGION"])' in cause.fix
    assert "set `AWS_DEFAULT_REGION: <region>` under `environment:` in the spec" in cause.fix
