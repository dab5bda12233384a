"""No function outside click commands takes more than 6 parameters (house style: pass a context object).

The functions that predated the rule were given context objects; none is left over it.
"""

from __future__ import annotations

import ast

from package_trees import package_trees

LIMIT = 6


def _parameter_counts() -> dict[str, int]:
    """Every function's parameters (self and cls not counted; *args and **kwargs counted), click commands left
    out: their parameters are the command's options."""
    counts = {}
    for module, tree in package_trees().items():
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if any(".command" in ast.unparse(item) or ".group" in ast.unparse(item)
                   for item in node.decorator_list):
                continue
            arguments = node.args
            names = [item.arg for item in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)
                     if item.arg not in ("self", "cls")]
            names += [item.arg for item in (arguments.vararg, arguments.kwarg) if item is not None]
            key = f"{module}:{node.name}"
            counts[key] = max(counts.get(key, 0), len(names))
    return counts


def test_no_function_outside_click_commands_takes_more_than_six_parameters():
    over = {key: count for key, count in _parameter_counts().items() if count > LIMIT}
    assert not over, f"more than {LIMIT} parameters: {over}; pass a context object (a frozen dataclass) instead"

