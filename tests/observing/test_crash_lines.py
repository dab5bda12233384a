"""A rank that died of a signal, as the shell that ran it and Python's faulthandler leave it in the log: the cause
shows the rank's own last line and, from faulthandler's dump, the line of the user's code it crashed in."""

from __future__ import annotations

import pytest

from orchestrator.observing.root_cause import PROCESS, Launcher, SourcePaths, read_cause

MODE_NONE = Launcher(PROCESS, ("algo-1", "algo-2"))

# algo-2 of a local run in mode none (PYTHONFAULTHANDLER=1): `ctypes.string_at(0)` at line 6 of segv.py, run
# through /bin/sh (dash), which says how its child died.
SEGFAULT = """\
Invoking script with the following command:
/usr/bin/python3 -- segv.py
about to crash
Fatal Python error: Segmentation fault

Current thread 0x00007f134ee26240 (most recent call first):
  File "/usr/lib/python3.11/ctypes/__init__.py", line 519 in string_at
  File "/opt/ml/code/segv.py", line 6 in <module>

Extension modules: numpy.core._multiarray_umath, torch._C (total: 2)
Segmentation fault""".splitlines()


def _crash_of_rank_1(lines: list[str], exit_code: int):
    return read_cause({"algo-1": ["step 1"], "algo-2": lines}, MODE_NONE,
                      exit_codes={"algo-1": 143, "algo-2": exit_code}, source=SourcePaths(shown="src"))


def test_a_segfault_faulthandler_dumped_is_located_at_the_users_line_with_the_line_before_it():
    """Before: `last line: Segmentation fault` (the shell's notice, which the headline already says), no location."""
    cause = _crash_of_rank_1(SEGFAULT, 139)
    assert cause.headline() == "algo-2 (rank 1) was killed by signal 11 (SIGSEGV) at src/segv.py:6"
    assert cause.detail == ("last line: about to crash",) and cause.category == "signal"


@pytest.mark.parametrize(("notice", "exit_code"), [
    ("Killed", 137),
    ("Segmentation fault (core dumped)", 139),
    ("Aborted (core dumped)", 134),
    ("sh: line 1:  4312 Killed                  python train.py", 137),
])
def test_the_shells_notice_of_how_a_rank_died_is_never_its_last_line(notice, exit_code):
    """A rank killed through a shell (mode none's, the toolkit's): the shell's `Killed` came after its own lines."""
    cause = _crash_of_rank_1(["loading shard 3", notice], exit_code)
    assert cause.detail == ("last line: loading shard 3",), cause.detail
    assert cause.location is None


def test_a_rank_that_printed_only_the_shells_notice_has_no_last_line():
    cause = _crash_of_rank_1(["Killed"], 137)
    assert cause.text().splitlines()[0] == "algo-2 (rank 1) was killed by signal 9 (SIGKILL)"
    assert cause.detail == () and cause.category == "oom_killed"


def test_a_line_that_only_looks_like_a_notice_is_kept_where_the_rank_exited_by_itself():
    cause = _crash_of_rank_1(["Killed"], 3)
    assert cause.detail == ("last line: Killed",)


def test_a_line_of_the_ranks_own_that_starts_with_the_signals_name_stays_its_last_line():
    cause = _crash_of_rank_1(["Killed 3 stale workers"], 137)
    assert cause.detail == ("last line: Killed 3 stale workers",)
