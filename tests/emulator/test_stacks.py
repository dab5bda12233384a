"""Reading stacks: py-spy's and faulthandler's formats, the collective a rank waits in, the script's own frame,
and the lines of one rank in an mpirun-tagged log. Pure text, as the two dumpers print it."""

from __future__ import annotations

from orchestrator.emulator.supervising.stacks import RankProcess, RankStack, _stack_of
from orchestrator.emulator.supervising.stall import HangReport

PY_SPY_WAITING = """Process 23312: /work/main/.venv/bin/python hang_script.py
Python v3.11.7 (/root/.pyenv/versions/3.11.7/bin/python3.11)

Thread 23312 (idle): "MainThread"
    all_reduce (torch/distributed/distributed_c10d.py:3252)
    _exception_logger.<locals>.wrapper (torch/distributed/c10d_logger.py:83)
    main (hang_script.py:32)
    <module> (hang_script.py:36)
"""
FAULTHANDLER_ELSEWHERE = """Fatal Python error: Aborted

Current thread 0x00007f29086aeb80 (most recent call first):
  File "/run/algo-2/code/hang_script.py", line 17 in load_next_batch_forever
  File "/run/algo-2/code/hang_script.py", line 31 in main
  File "/run/algo-2/code/hang_script.py", line 36 in <module>

Extension modules: torch._C (total: 1)
"""
FAULTHANDLER_IN_BACKWARD = """Fatal Python error: Aborted

Current thread 0x00007f (most recent call first):
  File "/venv/lib/python3.11/site-packages/torch/autograd/graph.py", line 829 in _engine_run_backward
  File "/venv/lib/python3.11/site-packages/torch/nn/parallel/distributed.py", line 1650 in _post_forward
  File "/opt/ml/code/trainers.py", line 210 in _step
"""

RANK_0 = RankProcess(11, "algo-1", 0)
RANK_1 = RankProcess(12, "algo-2", 1)


def test_py_spy_stack_of_a_rank_in_a_collective():
    stack = RankStack(RANK_0, PY_SPY_WAITING, "py-spy")

    assert [str(frame) for frame in stack.frames][:3] == [
        "all_reduce (distributed_c10d.py:3252)", "_exception_logger.<locals>.wrapper (c10d_logger.py:83)",
        "main (hang_script.py:32)"]
    assert stack.collective == "all_reduce"
    assert stack.where == "main (hang_script.py:32)"


def test_faulthandler_stack_of_a_rank_elsewhere_and_of_one_in_ddp():
    elsewhere = RankStack(RANK_1, FAULTHANDLER_ELSEWHERE, "faulthandler")
    in_ddp = RankStack(RANK_0, FAULTHANDLER_IN_BACKWARD, "faulthandler")

    assert elsewhere.collective is None
    assert elsewhere.where == "load_next_batch_forever (hang_script.py:17)"
    assert in_ddp.collective == "_post_forward" and in_ddp.where == "_step (trainers.py:210)"
    assert RankStack(RANK_1, "", "none").where == "no Python frame could be read"


def test_hang_report_names_the_waiting_ranks_and_the_one_they_wait_for():
    report = HangReport(301.0, (RankStack(RANK_0, PY_SPY_WAITING, "py-spy"),
                                RankStack(RANK_1, FAULTHANDLER_ELSEWHERE, "faulthandler")))

    assert report.summary() == (
        "Hung: no rank wrote a line or advanced a step for 5 min 1 s; waiting in a collective: rank 0 (algo-1) in "
        "all_reduce called at main (hang_script.py:32); not in a collective (the ranks above wait for it): "
        "rank 1 (algo-2) at load_next_batch_forever (hang_script.py:17)")
    assert "--- rank 1 (algo-2), pid 12, stack from faulthandler ---\nFatal Python error" in report.text()
    assert HangReport(5.0, ()).summary().endswith("no training process was left to inspect")


def test_faulthandler_lines_of_one_mpi_rank_are_picked_from_the_tagged_log():
    log = "\n".join([
        "[1,mpirank:0,algo-1]<stdout>:epoch=1 step=3/9 train_loss=0.5 samples_per_sec=1.0",
        "[1,mpirank:1,algo-1]<stderr>:Fatal Python error: Aborted",
        "[1,mpirank:0,algo-1]<stderr>:Fatal Python error: Aborted",
        "[1,mpirank:1,algo-1]<stderr>:  File \"/c/train.py\", line 5 in wait_for_data",
        ("[1,mpirank:0,algo-1]<stderr>:  File \"/v/site-packages/torch/distributed/distributed_c10d.py\", line 9 in "
         "barrier"),
        "[1,0]<stderr>:  File \"/c/train.py\", line 7 in main",
    ])

    rank_0 = _stack_of(RankProcess(5, "algo-1", 0), log)

    assert rank_0.splitlines() == ["Fatal Python error: Aborted",
                                   '  File "/v/site-packages/torch/distributed/distributed_c10d.py", line 9 in barrier',
                                   '  File "/c/train.py", line 7 in main']
    assert RankStack(RankProcess(5, "algo-1", 0), rank_0, "faulthandler").collective == "barrier"
    assert "wait_for_data" in _stack_of(RankProcess(6, "algo-1", 1), log)


PY_SPY_WAITING_FOR_A_CHILD = """Thread 16004 (idle): "MainThread"
    Popen._try_wait (subprocess.py:2004)
    Popen.wait (subprocess.py:1264)
    run (subprocess.py:550)
    _run_ninja_build (torch/utils/cpp_extension.py:2100)
    compile_ops (train.py:12)
    <module> (train.py:40)
"""


def test_the_scripts_own_frame_skips_the_standard_library_that_py_spy_names_by_file_alone():
    stack = RankStack(RANK_0, PY_SPY_WAITING_FOR_A_CHILD, "py-spy")

    assert stack.where == "compile_ops (train.py:12)"


PY_SPY_WAITING_FOR_A_BUILD_LOCK = """Thread 7 (idle): "MainThread"
    FileBaton.wait (torch/utils/file_baton.py:42)
    _jit_compile (torch/utils/cpp_extension.py:2050)
    load_inline (torch/utils/cpp_extension.py:1900)
    <module> (train.py:8)
"""


def test_a_rank_waiting_for_a_jit_build_lock_is_told_how_to_free_it():
    report = HangReport(300.0, (RankStack(RANK_0, PY_SPY_WAITING_FOR_A_BUILD_LOCK, "py-spy"),))

    assert report.summary().endswith(
        "; rank 0 (algo-1) waits for torch's JIT build lock, which a compile stopped mid-way leaves: delete the "
        "`lock` file in the extension's folder under TORCH_EXTENSIONS_DIR, or leave that variable to smtrain, which "
        "removes such locks")
    assert "not in a collective: rank 0 (algo-1) at <module> (train.py:8)" in report.summary()
