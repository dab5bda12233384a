"""A rank's C++/CUDA compile is said on the console at its start and again every half minute it lasts, told from the
rank's child processes; a DataLoader worker is no compile, and torch.compile's short bursts are not each a line."""

from __future__ import annotations

from orchestrator.emulator.supervising.compiling import REPEAT_SECONDS, CompileNotices
from orchestrator.emulator.supervising.stacks import RankProcess

RANK_0 = RankProcess(pid=100, host="algo-1", rank=0)
RANK_1 = RankProcess(pid=200, host="algo-2", rank=1)
JIT_BUILD = ["ninja", "c++", "cc1plus"]


def _said_each_second(notices: CompileNotices, children: dict, seconds: float, start: float = 0.0) -> list[str]:
    said = [notices.observe(children, start + second) for second in range(int(seconds) + 1)]
    return [text for text in said if text]


def test_a_jit_extension_build_is_said_at_its_start_then_every_half_minute():
    notices = CompileNotices(kept_for_next_run=True)

    said = _said_each_second(notices, {RANK_0: ["python", *JIT_BUILD]}, 2 * REPEAT_SECONDS + 5)

    assert said == [
        "algo-1 rank 0: compiling a C++/CUDA extension (ninja, c++, cc1plus), which writes nothing until done; "
        "the next run reuses it from smtrain's build cache",
        "algo-1 rank 0: compiling a C++/CUDA extension (ninja, c++, cc1plus) for 30 s; the next run reuses it "
        "from smtrain's build cache",
        "algo-1 rank 0: compiling a C++/CUDA extension (ninja, c++, cc1plus) for 1 min 0 s; the next run reuses it "
        "from smtrain's build cache",
    ]


def test_a_data_loader_worker_is_no_compile():
    assert _said_each_second(CompileNotices(kept_for_next_run=True), {RANK_0: ["python", "pt_data_worker"]}, 40) == []


def test_a_later_compile_is_said_only_once_it_lasts():
    """torch.compile compiles each graph's C++ in a burst of its own."""
    notices = CompileNotices(kept_for_next_run=True)
    first = _said_each_second(notices, {RANK_0: ["g++", "cc1plus"]}, 2)
    notices.observe({RANK_0: ["python"]}, 3)

    short = _said_each_second(notices, {RANK_0: ["g++", "cc1plus"]}, 5, start=10)
    notices.observe({}, 16)
    long = _said_each_second(notices, {RANK_0: ["g++", "cc1plus"]}, REPEAT_SECONDS, start=20)

    assert first == ["algo-1 rank 0: compiling C++/CUDA code (g++, cc1plus), which writes nothing until done"]
    assert short == []
    assert long == ["algo-1 rank 0: compiling C++/CUDA code (g++, cc1plus) for 30 s"]


def test_ranks_compiling_together_are_said_in_one_notice_and_a_cache_the_job_moved_is_not_promised():
    notices = CompileNotices(kept_for_next_run=False)

    said = notices.observe({RANK_0: JIT_BUILD, RANK_1: ["ninja", "nvcc", "cicc"]}, 0)

    assert said == ("algo-1 rank 0, algo-2 rank 1: compiling a C++/CUDA extension (ninja, nvcc, cicc, c++, cc1plus), "
                    "which writes nothing until done")
