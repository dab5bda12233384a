"""A user error raised in a notebook cell (IPython, so Jupyter and SageMaker Studio) reads as the CLI prints it."""

from __future__ import annotations

import subprocess
import sys

CELL = '''
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance(colors="nocolor")
shell.run_cell("import orchestrator")
shell.run_cell("orchestrator.plan({'name': 'tiny', 'entry_point': 'train.py', 'instnce': {'type': 'ml.c5.xlarge'}})")
shell.run_cell("raise ValueError('a developer error keeps its traceback')")
'''


def test_a_user_error_in_a_notebook_is_its_message_and_fix_without_a_traceback(tmp_path):
    """A SpecError in a cell showed a traceback through api.py and loader.py above the message; the CLI's
    promise ("one message with the fix, never a traceback") now holds in a notebook too."""
    shown = subprocess.run([sys.executable, "-c", CELL], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                           env={"PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path), "HOME": str(tmp_path)})

    user_error, developer_error = shown.stdout.split("-" * 75, 1)
    assert user_error.splitlines() == [
        "InvalidSpec: 1 problem in the job spec:",
        "  <spec>: instnce: Extra inputs are not permitted",
        "    fix: did you mean `instance`?",
    ]
    assert "ValueError                                Traceback (most recent call last)" in developer_error
