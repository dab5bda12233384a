"""A failed job's logs read back for the error that started the failure (observing/cause_window.py): a window grown
only by lines no error could be among (a warnings flood) is not read line by line, and the screen that says so
passes every form of a rank's own error the reader knows."""

from __future__ import annotations

import pytest
from long_failures import HEADLINE, cause_at_the_end_of, rank_3_fails_then, warnings_flood
from recorded_pip import DECISIVE

from orchestrator.emulator import local_run
from orchestrator.observing.root_cause import (
    PROCESS,
    Launcher,
    may_hold_own_error,
    own_error,
    read_cause,
)

# One line of each error of a rank's own the reader knows, as the rank prints it last.
OWN_ERRORS = {
    "exception": ["Traceback (most recent call last):", '  File "/opt/ml/code/train.py", line 3, in <module>',
                  "ValueError: shard 7 has 0 samples"],
    "exception without a traceback": ["KeyError: 'label'"],
    "system exit": ["SystemExit: no data in /opt/ml/input/data/train"],
    "argparse": ["usage: train.py [-h] [--lr LR]", "train.py: error: argument --lr: invalid float value: 'x'"],
    "syntax error": ['  File "/opt/ml/code/train.py", line 4', "    def f(:", "          ^",
                     "SyntaxError: invalid syntax"],
    "C++ terminate": ["terminate called after throwing an instance of 'c10::Error'", "  what():  CUDA error"],
    "CUDA out of memory": ["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"],
    "pip": [DECISIVE],
}


@pytest.mark.parametrize("name", OWN_ERRORS)
def test_every_own_error_the_reader_knows_passes_the_screen(name):
    lines = OWN_ERRORS[name]
    cause = read_cause({"algo-1": lines}, Launcher(PROCESS, ("algo-1",)), exit_codes={"algo-1": 1})

    assert own_error(cause), cause
    assert may_hold_own_error(lines)


def test_a_warnings_flood_does_not_pass_the_screen():
    assert not may_hold_own_error(warnings_flood(200))


def test_a_window_grown_only_by_warnings_is_not_read_line_by_line(tmp_path, monkeypatch):
    """20,000 lines of warnings between rank 3's traceback and the end of algo-1's log: the windows of 2,000 and
    8,000 lines hold none of its error, the one of 32,000 does. Before, the reader read each window whole, and the
    last one twice: four reads; now the first, then the one the screen lets through: two, and the same cause."""
    reads = []
    monkeypatch.setattr(local_run, "read_cause", lambda *args, **kwargs: reads.append(1) or read_cause(*args, **kwargs))

    cause = cause_at_the_end_of(tmp_path, rank_3_fails_then(20_000))

    assert cause.headline() == HEADLINE
    assert len(reads) == 2
