"""Where a failure is in the user's code when Python names it without the usual traceback: a syntax error in the
script it was asked to run (one `File "...", line N` frame, no `Traceback` header), and the relative path
(`File "train.py"`) mpirun and mpi4py give the script they run as argv names it, on SageMaker as locally."""

from __future__ import annotations

import pytest

from orchestrator.observing.root_cause import MPI, PROCESS, TORCHRUN, Launcher, SourcePaths, read_cause

# torchrun on algo-1 of a local run whose train.py has `    step = 0 +` on line 22 (recorded, shortened).
SYNTAX_ERROR_UNDER_TORCHRUN = """\
Invoking script with the following command:

/usr/bin/torchrun --nnodes 2 --nproc_per_node 1 --master_addr 127.0.0.1 --master_port 55487 --node_rank 0 train.py

  File "/runs/syn/algo-1/code/train.py", line 22
    step = 0 +
              ^
SyntaxError: invalid syntax
E1127 12:15:31.142000 3 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) local_rank: 0 (pid: 6) of binary: /usr/bin/python
Traceback (most recent call last):
  File "/usr/bin/torchrun", line 6, in <module>
    sys.exit(main())
  File "/usr/lib/python3.11/site-packages/torch/distributed/launcher/api.py", line 383, in launch_agent
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  host      : algo-1
  rank      : 0 (local_rank: 0)
  exitcode  : 1 (pid: 6)
""".splitlines()

# mode none: the script itself on algo-1 (an IndentationError, the same shape).
INDENTATION_ERROR = """\
  File "/opt/ml/code/train.py", line 7
    return x
IndentationError: unexpected indent
""".splitlines()

# mpirun on algo-1 (mode mpi, 2 hosts x 1): rank 1 raised; mpi4py ran argv[0] as given, `train.py` (recorded).
MPI_RELATIVE_FRAME = """\
[1,mpirank:0,algo-1]<stdout>: rank 0 total 1
[1,mpirank:1,algo-2]<stderr>: Traceback (most recent call last):
[1,mpirank:1,algo-2]<stderr>:   File "<frozen runpy>", line 198, in _run_module_as_main
[1,mpirank:1,algo-2]<stderr>:   File "/usr/lib/python3.11/site-packages/mpi4py/run.py", line 53, in run_command_line
[1,mpirank:1,algo-2]<stderr>:     run_path(sys.argv[0], run_name="__main__")
[1,mpirank:1,algo-2]<stderr>:   File "<frozen runpy>", line 88, in _run_code
[1,mpirank:1,algo-2]<stderr>:   File "train.py", line 10, in <module>
[1,mpirank:1,algo-2]<stderr>:     raise RuntimeError("shard checksum mismatch")
[1,mpirank:1,algo-2]<stderr>: RuntimeError: shard checksum mismatch
[1,mpirank:1,algo-2]<stderr>: MPI_ABORT was invoked on rank 1 in communicator MPI_COMM_WORLD
""".splitlines()

HOSTS = ("algo-1", "algo-2")


def test_root_cause_syntax_error_in_the_script_is_located():
    source = SourcePaths(("/runs/syn/algo-1/code", "/runs/syn/algo-2/code"), shown="syn")
    cause = read_cause({"algo-1": SYNTAX_ERROR_UNDER_TORCHRUN}, Launcher(TORCHRUN, HOSTS), exit_codes={"algo-1": 1},
                       source=source)
    assert cause.headline() == "algo-1 (rank 0) failed: SyntaxError: invalid syntax at syn/train.py:22"
    assert (cause.rank, cause.location) == (0, "syn/train.py:22")


def test_root_cause_indentation_error_in_mode_none_is_located():
    cause = read_cause({"algo-1": INDENTATION_ERROR}, Launcher(PROCESS, HOSTS), exit_codes={"algo-1": 1})
    assert (cause.exception, cause.location) == ("IndentationError: unexpected indent", "train.py:7")


def test_root_cause_frame_lines_without_an_error_are_no_error():
    lines = ['  File "/opt/ml/code/train.py", line 7', "    x = 1", "step 3 loss 0.2"]
    cause = read_cause({"algo-1": lines}, Launcher(PROCESS, HOSTS), exit_codes={"algo-1": 1})
    assert cause.exception is None and cause.location is None


@pytest.mark.parametrize("source, where", [(SourcePaths(), "train.py:10"),
                                           (SourcePaths(("/runs/mpi/algo-1/code",), shown="mpi"), "mpi/train.py:10")])
def test_root_cause_relative_frame_is_the_code_directorys(source, where):
    cause = read_cause({"algo-1": MPI_RELATIVE_FRAME}, Launcher(MPI, HOSTS), exit_codes={"algo-1": 1}, source=source)
    assert cause.headline() == f"algo-2 (rank 1) failed: RuntimeError: shard checksum mismatch at {where}"


@pytest.mark.parametrize("path, shown", [("train.py", "src/train.py"), ("./lib/model.py", "src/lib/model.py"),
                                         ("../site-packages/x.py", None), ("<frozen runpy>", None),
                                         ("/usr/lib/python3.11/runpy.py", None),
                                         ("/opt/ml/code/train.py", "src/train.py")])
def test_source_paths_user_path_resolves_relative_paths_against_the_code(path, shown):
    assert SourcePaths(shown="src").user_path(path) == shown
