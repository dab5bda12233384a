"""Python source parsed one thread at a time, in a process that may plan and run several jobs at once.

Under CPython 3.11, two threads parsing at once can fail with `SystemError: AST constructor recursion depth
mismatch`: the converter to `ast` nodes keeps its recursion depth per interpreter, and a garbage collection inside
it can hand the GIL to another thread that parses too (pytest-dev/pytest#10763 met it; tests/python_source shows
it). A notebook starting two function jobs side by side met it: the first run's thread read its script's imports
while the caller planned the second, and the first failed in 0.01 s ("smtrain stopped: SystemError ...").
"""

from __future__ import annotations

import ast
import threading

_ONE_AT_A_TIME = threading.Lock()


def parse(source: str, filename: str = "<unknown>", mode: str = "exec") -> ast.Module | ast.Expression:
    """`ast.parse(source, filename, mode)`, never while another of smtrain's threads parses."""
    with _ONE_AT_A_TIME:
        return ast.parse(source, filename=filename, mode=mode)
