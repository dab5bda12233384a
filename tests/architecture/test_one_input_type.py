"""One input type below the API: a JobSpec built in Python is wrapped into a LoadedSpec once, at the API's edge
(`orchestrator/api.py`), so planning, resolving, the emulator and the backends take a LoadedSpec (or a Plan) and
never branch on which of the two they were given."""

from __future__ import annotations

import ast
from pathlib import Path

from package_trees import package_trees

EDGE = Path("api.py")
SPEC_TYPES = {"JobSpec", "LoadedSpec"}


def _modules_below_the_edge() -> dict[Path, ast.Module]:
    return {module: tree for module, tree in package_trees().items() if module != EDGE}


def _names(node: ast.AST) -> set[str]:
    """The type names an annotation or expression mentions (`spec.model.JobSpec` counts as JobSpec)."""
    found = {item.id for item in ast.walk(node) if isinstance(item, ast.Name)}
    found |= {item.attr for item in ast.walk(node) if isinstance(item, ast.Attribute)}
    if isinstance(node, ast.Constant) and isinstance(node.value, str):  # a quoted annotation
        found |= {word for word in SPEC_TYPES if word in node.value}
    return found


def _annotations(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.expr]:
    arguments = function.args
    every = (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg)
    return [node for node in (*(item.annotation for item in every if item is not None), function.returns)
            if node is not None]


def test_no_function_below_the_api_takes_a_jobspec_or_a_loadedspec():
    both = []
    for module, tree in _modules_below_the_edge().items():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                both += [f"{module}:{node.lineno} {node.name}: {ast.unparse(annotation)}"
                         for annotation in _annotations(node) if SPEC_TYPES <= _names(annotation)]
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.BinOp):
                if SPEC_TYPES <= _names(node.value):  # an alias such as SpecLike = JobSpec | LoadedSpec
                    both.append(f"{module}:{node.lineno} alias {ast.unparse(node)}")
    assert not both, "take a LoadedSpec (orchestrator/api.py wraps a JobSpec with LoadedSpec.of):\n" + "\n".join(both)


def test_nothing_below_the_api_asks_which_spec_type_it_was_given():
    asked = [f"{module}:{node.lineno} {ast.unparse(node)}"
             for module, tree in _modules_below_the_edge().items() for node in ast.walk(tree)
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance"
             and len(node.args) == 2 and _names(node.args[1]) & SPEC_TYPES]
    assert not asked, "below the API a spec is always a LoadedSpec:\n" + "\n".join(asked)


def test_only_the_api_wraps_a_jobspec():
    wrapping = [f"{module}:{node.lineno}" for module, tree in _modules_below_the_edge().items()
                for node in ast.walk(tree)
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "of"
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "LoadedSpec"]
    assert not wrapping, f"LoadedSpec.of is the API's edge; called below it at {wrapping}"
    edge = package_trees()[EDGE]
    assert any(isinstance(node, ast.Call) and ast.unparse(node.func) == "LoadedSpec.of" for node in ast.walk(edge))
