"""Reading stacks: py-spy's and faulthandler's formats, the collective a rank waits in, the script's own frame,
and the lines of one rank in an mpirun-tagged log. Pure text, as the two dumpers print it."""

from __future__ import annotations

from pathlib import Path

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


# `smtrain local` of a GPU-instance spec: the CPU stand-in for CUDA wraps each collective (py-spy's text of a rank
# blocked in `dist.barrier()` at train.py:32, recorded from such a run).
PY_SPY_BARRIER_UNDER_THE_STANDIN = """Process 26551: /work/main/.venv/bin/python -u train.py
Python v3.11.7 (/root/.pyenv/versions/3.11.7/bin/python3.11)

Thread 6 (active): "MainThread"
    barrier (torch/distributed/distributed_c10d.py:5356)
    _exception_logger.<locals>.wrapper (torch/distributed/c10d_logger.py:83)
    _explained.<locals>.explained (orchestrator/emulator/gpu_standin/smtrain_gpu_standin/collectives.py:159)
    main (train.py:32)
    <module> (train.py:37)
"""
FAULTHANDLER_BARRIER_UNDER_THE_STANDIN = """Fatal Python error: Aborted

Current thread 0x00007f29086aeb80 (most recent call first):
  File "/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", line 5356 in barrier
  File "/src/smtrain/orchestrator/emulator/gpu_standin/smtrain_gpu_standin/collectives.py", line 159 in explained
  File "/run/algo-1/code/train.py", line 32 in main
"""
PY_SPY_STANDIN_ON_ITS_OWN_PATH = """Thread 6 (idle): "MainThread"
    all_reduce (torch/distributed/distributed_c10d.py:3252)
    _explained.<locals>.explained (smtrain_gpu_standin/collectives.py:159)
    allreduce (smdistributed/dataparallel/torch/distributed.py:40)
    step (train.py:20)
"""


def test_the_gpu_standins_collective_wrapper_is_not_the_scripts_line():
    under_py_spy = RankStack(RANK_0, PY_SPY_BARRIER_UNDER_THE_STANDIN, "py-spy")
    under_faulthandler = RankStack(RANK_0, FAULTHANDLER_BARRIER_UNDER_THE_STANDIN, "faulthandler")

    assert (under_py_spy.collective, under_py_spy.where) == ("barrier", "main (train.py:32)")
    assert (under_faulthandler.collective, under_faulthandler.where) == ("barrier", "main (train.py:32)")
    assert RankStack(RANK_0, PY_SPY_STANDIN_ON_ITS_OWN_PATH, "py-spy").where == "step (train.py:20)"
    report = HangReport(15.0, (under_py_spy, RankStack(RANK_1, FAULTHANDLER_ELSEWHERE, "faulthandler")))
    assert "waiting in a collective: rank 0 (algo-1) in barrier called at main (train.py:32);" in report.summary()


# DDP's gradient all-reduce runs from a C++ autograd hook: a rank blocked in it shows only autograd's frames
# (py-spy's text recorded from a DDP run whose rank 1 sleeps before its backward).
PY_SPY_IN_DDP_BACKWARD = """Process 27371: /work/main/.venv/bin/python -u train.py
Python v3.11.7 (/root/.pyenv/versions/3.11.7/bin/python3.11)

Thread 6 (active): "MainThread"
    _engine_run_backward (torch/autograd/graph.py:979)
    backward (torch/autograd/__init__.py:395)
    Tensor.backward (torch/_tensor.py:623)
    main (train.py:27)
    <module> (train.py:36)
"""
PY_SPY_ASLEEP_IN_THE_STEP = """Thread 5 (active): "MainThread"
    check (train.py:12)
    main (train.py:26)
    <module> (train.py:36)
"""
FAULTHANDLER_IN_BACKWARD_OF_OLD_TORCH = """Fatal Python error: Aborted

Current thread 0x00007f (most recent call first):
  File "/venv/lib/python3.10/site-packages/torch/autograd/__init__.py", line 200 in backward
  File "/venv/lib/python3.10/site-packages/torch/_tensor.py", line 487 in backward
  File "/opt/ml/code/train.py", line 27 in main
"""
# A backward that waits in the script's own autograd Function (a lock, a queue) waits there, not in a collective;
# so does a main thread asleep while another thread's backward is in the script's hook.
PY_SPY_IN_A_CUSTOM_BACKWARD = """Thread 6 (idle): "MainThread"
    WaitForData.backward (train.py:14)
    apply (torch/autograd/function.py:307)
    _engine_run_backward (torch/autograd/graph.py:979)
    Tensor.backward (torch/_tensor.py:623)
    main (train.py:27)

Thread 9 (idle): "Thread-1 (load)"
    wait (threading.py:331)
    load (train.py:40)
"""


def test_a_rank_idle_in_autograds_engine_waits_in_ddps_gradient_all_reduce():
    in_backward = RankStack(RANK_0, PY_SPY_IN_DDP_BACKWARD, "py-spy")
    asleep = RankStack(RANK_1, PY_SPY_ASLEEP_IN_THE_STEP, "py-spy")

    assert in_backward.collective == "backward's gradient all-reduce"
    assert in_backward.where == "main (train.py:27)"
    assert RankStack(RANK_0, FAULTHANDLER_IN_BACKWARD_OF_OLD_TORCH, "faulthandler").collective == (
        "backward's gradient all-reduce")
    assert RankStack(RANK_0, PY_SPY_IN_A_CUSTOM_BACKWARD, "py-spy").collective is None
    assert HangReport(16.0, (in_backward, asleep)).summary() == (
        "Hung: no rank wrote a line or advanced a step for 16 s; waiting in a collective: rank 0 (algo-1) in "
        "backward's gradient all-reduce called at main (train.py:27); not in a collective (the ranks above wait "
        "for it): rank 1 (algo-2) at check (train.py:12)")


def test_frames_are_read_per_thread_innermost_first():
    stack = RankStack(RANK_0, PY_SPY_IN_A_CUSTOM_BACKWARD, "py-spy")

    assert [[frame.function for frame in thread][:1] for thread in stack.threads] == [
        ["WaitForData.backward"], ["wait"]]
    assert len(stack.frames) == 7


def test_a_hangs_cause_is_the_rank_the_others_wait_for(tmp_path):
    stacks_file = tmp_path / "stacks.txt"
    in_backward = RankStack(RANK_0, PY_SPY_IN_DDP_BACKWARD, "py-spy")
    asleep = RankStack(RANK_1, PY_SPY_ASLEEP_IN_THE_STEP, "py-spy")

    cause = HangReport(16.0, (in_backward, asleep)).cause(stacks_file)

    assert (cause.host, cause.rank, cause.category, cause.exit_code) == ("algo-2", 1, "hung", None)
    assert cause.headline() == cause.exception == (
        "Hung: rank 1 (algo-2) is not in a collective, at check (train.py:12); the others wait for it: "
        "rank 0 (algo-1) in backward's gradient all-reduce called at main (train.py:27)")
    assert cause.fix.startswith("find why rank 1 (algo-2) never reaches the collective")
    assert cause.fix.endswith(f"every rank's stack is in {stacks_file}")
    assert type(cause).from_dict(cause.to_dict()).headline() == cause.headline()


PY_SPY_WAITING_FOR_DATA = """Thread 3 (active): "MainThread"
    _PollLikeSelector.select (selectors.py:415)
    Queue.get (multiprocessing/queues.py:113)
    _MultiProcessingDataLoaderIter._try_get_data (torch/utils/data/dataloader.py:1291)
    _BaseDataLoaderIter.__next__ (torch/utils/data/dataloader.py:725)
    main (train.py:17)
"""
PY_SPY_WORKER_IN_GETITEM = """Thread 3169 (idle): "MainThread"
    Shards.__getitem__ (train.py:12)
    _MapDatasetFetcher.fetch (torch/utils/data/_utils/fetch.py:54)
    _worker_loop (torch/utils/data/_utils/worker.py:374)
"""


def test_a_rank_waiting_for_its_dataloader_is_shown_with_where_its_worker_blocks(tmp_path):
    """Before: `rank 0 (algo-1) at main (train.py:17)`, the loop, and nothing of the worker that blocks."""
    worker = RankStack(RankProcess(3169, "algo-1", 0), PY_SPY_WORKER_IN_GETITEM, "py-spy")
    waits = RankStack(RANK_0, PY_SPY_WAITING_FOR_DATA, "py-spy", workers=(worker,))
    report = HangReport(11.0, (waits,))

    assert waits.waits_for_data and not RankStack(RANK_0, PY_SPY_WAITING, "py-spy").waits_for_data
    assert report.summary().endswith("not in a collective: rank 0 (algo-1) at main (train.py:17), waiting for its "
                                     "DataLoader worker (pid 3169) at Shards.__getitem__ (train.py:12)")
    assert report.cause(tmp_path / "stacks.txt").headline() == (
        "Hung: no rank is in a collective, and every one is idle: rank 0 (algo-1) at main (train.py:17), waiting "
        "for its DataLoader worker (pid 3169) at Shards.__getitem__ (train.py:12)")
    assert ("--- DataLoader worker of rank 0 (algo-1), pid 3169, stack from py-spy ---\n"
            'Thread 3169 (idle): "MainThread"') in report.text()


def test_a_hang_without_a_rank_to_blame_says_why_and_names_none():
    stacks_file = Path("stacks.txt")
    both_wait = (RankStack(RANK_0, PY_SPY_WAITING, "py-spy"),
                 RankStack(RANK_1, PY_SPY_BARRIER_UNDER_THE_STANDIN, "py-spy"))
    waiting = HangReport(9.0, both_wait).cause(stacks_file)
    idle = HangReport(9.0, (RankStack(RANK_0, PY_SPY_ASLEEP_IN_THE_STEP, "py-spy"),)).cause(stacks_file)

    assert (waiting.host, waiting.rank) == (idle.host, idle.rank) == (None, None)
    assert waiting.headline().startswith("Hung: every rank waits in a collective: rank 0 (algo-1) in ")
    assert "same ones in the same order" in waiting.fix
    assert idle.headline() == ("Hung: no rank is in a collective, and every one is idle: rank 0 (algo-1) at "
                               "check (train.py:12)")
    nobody = HangReport(5.0, ()).cause(stacks_file)
    assert nobody.headline() == "Hung: no training process was left to inspect"
