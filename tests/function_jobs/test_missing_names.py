"""A notebook function reading what only IPython gives the notebook is refused before its job starts, naming the
name and the fix (function_jobs/missing_names.py), in a real IPython shell: its builtins and namespace are the
notebook's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CELLS = '''\
import orchestrator
from orchestrator.errors import SpecError

job = orchestrator.remote(instance_type="ml.c5.xlarge")

def shows(x):
    display(x)

def shell(x):
    !echo hi

def history(x):
    return Out[1] + _

def leaves(x):
    exit()

for function in (shows, shell, history, leaves):
    try:
        job(function).plan(1)
        print(f"{function.__name__}: planned")
    except SpecError as error:
        print(f"{function.__name__}: {error.message} | {error.fix}")

from IPython.display import display as shown

def imported(x):
    shown(x)

print(f"imported: {type(job(imported).plan(1)).__name__}")
'''


def _in_ipython(tmp_path: Path) -> dict[str, str]:
    """What each function's plan said in an IPython shell: function name -> its refusal and fix, or `planned`."""
    (tmp_path / "cells.ipy").write_text(CELLS)
    environment = {**os.environ, "PYTHONPATH": str(REPO), "HOME": str(tmp_path), "NO_COLOR": "1"}
    done = subprocess.run([sys.executable, "-m", "IPython", "--colors=NoColor", "--no-banner", "cells.ipy"],
                          cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=300)
    said = dict(line.split(": ", 1) for line in done.stdout.splitlines() if ": " in line)
    assert set(said) >= {"shows", "shell", "history", "leaves", "imported"}, done.stdout + done.stderr
    return said


def test_ipython_s_builtins_shell_and_history_are_refused_naming_them_and_an_imported_display_travels(tmp_path):
    """Before, `display` (an IPython builtin: cloudpickle takes no builtin along) planned and the job failed with
    NameError; `get_ipython` (what a `!command` line calls) and `exit` were refused as `cannot pickle
    'sqlite3.Connection' object`, told to create such an object inside the function; `Out` and `_` took the
    notebook's outputs along."""
    said = _in_ipython(tmp_path)

    assert said["shows"].startswith("the function shows cannot travel to the job: `shows` uses `display`, which "
                                    "IPython gives this notebook and the job does not have | ")
    assert "print(...)" in said["shows"] and "from IPython.display import display" in said["shows"]
    assert "uses `get_ipython`" in said["shell"] and "subprocess.run" in said["shell"]
    assert "!command" in said["shell"] and "sqlite3" not in said["shell"]
    assert "uses `Out`, `_`, which IPython" in said["history"] and "weights = Out[3]" in said["history"]
    assert "uses `exit`" in said["leaves"] and "return from the function" in said["leaves"]
    assert said["imported"] == "Plan"
