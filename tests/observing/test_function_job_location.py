"""A function job's traceback passes through smtrain's runner, which sits in the code directory: the location is
the user's own frame below it (a notebook cell's, as the notebook named it), never the runner's line."""

from __future__ import annotations

from orchestrator.contract import FUNCTION_RUNNER
from orchestrator.observing.root_cause import PROCESS, Launcher, SourcePaths, read_cause

CODE = "/runs/fails/algo-1/code"
SOURCE = SourcePaths((CODE,), "cache/remote/8103c321")


def _cause(*frames: str):
    lines = ["Traceback (most recent call last):",
             f'  File "{CODE}/{FUNCTION_RUNNER}", line 52, in main',
             '    outcome["value"] = function(*args, **kwargs)',
             *frames,
             "ZeroDivisionError: division by zero"]
    return read_cause({"algo-1": lines}, Launcher(PROCESS, ("algo-1",)), exit_codes={"algo-1": 1}, source=SOURCE)


def test_a_cell_function_s_failure_is_located_in_its_cell_never_in_the_runner():
    ipython = _cause('  File "<ipython-input-3-5f1c2e>", line 7, in fails', '  File "<ipython-input-3-5f1c2e>", '
                     "line 3, in helper")
    ipykernel = _cause('  File "/tmp/ipykernel_812/2930471.py", line 3, in fails')

    assert ipython.exception == "ZeroDivisionError: division by zero"
    assert ipython.location == "<ipython-input-3-5f1c2e>:3"
    assert ipykernel.location == "/tmp/ipykernel_812/2930471.py:3"
    assert ipython.headline() == ("algo-1 (rank 0) failed: ZeroDivisionError: division by zero at "
                                  "<ipython-input-3-5f1c2e>:3")


def test_a_library_the_function_called_is_skipped_for_the_cell_and_a_module_shipped_by_reference_is_the_code_s():
    through_a_library = _cause('  File "/tmp/ipykernel_812/2930471.py", line 4, in fails',
                               '  File "/opt/conda/lib/python3.11/json/__init__.py", line 346, in loads',
                               '  File "/opt/conda/lib/python3.11/site-packages/numpy/core/_methods.py", line 9, in f')
    by_reference = _cause(f'  File "{CODE}/functions.py", line 8, in where_am_i')
    before_the_call = _cause()

    assert through_a_library.location == "/tmp/ipykernel_812/2930471.py:4"
    assert by_reference.location == "cache/remote/8103c321/functions.py:8"
    assert before_the_call.location is None  # only the runner's frame: no line of the user's
