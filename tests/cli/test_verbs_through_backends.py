"""No CLI verb branches on the backend: `cli/jobs.py` asks `backends.resolve` for (backend, id) and calls the
backend, and `cli/tune.py`'s status, list and stop ask `backends.tuning` the same way; they never import the
executors or the cloud's job and tuning modules, never name a backend class, and never compare anything with a
backend's name. Read from the source's syntax tree, like the mode-table tests."""

from __future__ import annotations

import ast
from pathlib import Path

import orchestrator

VERB_MODULES = ("cli/jobs.py",)
"""The modules whose commands answer for one job or list them: status, logs, metrics, stop, watch, list, submit."""
TUNING_VERBS = ("status", "list_command", "stop")
"""`cli/tune.py`'s commands that answer for one search or list them (plan, submit, local start one)."""
FORBIDDEN_MODULES = ("orchestrator.emulator", "orchestrator.cloud.jobs", "orchestrator.cloud.submission",
                     "orchestrator.cloud.logs", "orchestrator.cloud.tuning", "orchestrator.cloud.sdk",
                     "orchestrator.backends.local", "orchestrator.backends.sagemaker", "orchestrator.backends.runs")
"""Where a verb would go around its backend: the executors, the SageMaker client, the run-directory guesses."""
FORBIDDEN_NAMES = frozenset({"LocalBackend", "SageMakerBackend", "JobClient", "find_run", "local_runs",
                             "LocalTuning", "SageMakerTuning", "TuningClient", "list_tunings"})
BACKEND_NAMES = frozenset({"local", "sagemaker"})


def findings(source: str) -> list[str]:
    """Every place `source` imports a forbidden module, names a backend class or compares with a backend's name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            modules = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        else:
            modules = []
        found += [f"line {node.lineno}: imports {module}" for module in modules
                  if module.startswith(FORBIDDEN_MODULES)]
        if isinstance(node, (ast.ImportFrom, ast.Import)):
            found += [f"line {node.lineno}: imports {alias.name}" for alias in node.names
                      if alias.name in FORBIDDEN_NAMES]
        elif isinstance(node, ast.Name) and node.id in FORBIDDEN_NAMES:
            found.append(f"line {node.lineno}: names {node.id}")
        elif isinstance(node, ast.Compare):
            constants = [item.value for item in (node.left, *node.comparators) if isinstance(item, ast.Constant)]
            found += [f"line {node.lineno}: compares with {value!r}" for value in constants if value in BACKEND_NAMES]
    return found


def test_no_cli_verb_branches_on_the_backend():
    root = Path(orchestrator.__file__).parent
    for module in VERB_MODULES:
        assert findings((root / module).read_text()) == [], module


def test_no_tuning_verb_branches_on_the_backend():
    source = (Path(orchestrator.__file__).parent / "cli/tune.py").read_text()
    verbs = {node.name: node for node in ast.parse(source).body if isinstance(node, ast.FunctionDef)}
    assert set(TUNING_VERBS) <= set(verbs)
    for name in TUNING_VERBS:
        assert findings(ast.unparse(verbs[name])) == [], name


def test_the_check_sees_a_tuning_verb_that_goes_around_its_backend():
    """What `tune status` looked like before the tuning backend: SageMaker's client, by hand."""
    around = (
        "def status(ctx, name, region):\n"
        "    from orchestrator.cloud.tuning import Tuning\n"
        "    return Tuning(name, ctx.obj).status()\n"
    )

    assert findings(around) == ["line 2: imports orchestrator.cloud.tuning",
                                "line 2: imports orchestrator.cloud.tuning.Tuning"]


def test_the_check_sees_a_verb_that_goes_around_its_backend():
    """What `status` looked like before the resolver: it guessed the place and picked the backend by hand."""
    around = (
        "from orchestrator.backends.runs import find_run\n"
        "def status(name):\n"
        "    run_dir = find_run(name)\n"
        "    if run_dir is not None:\n"
        "        from orchestrator.backends.local import LocalBackend\n"
        "        return LocalBackend().describe(str(run_dir))\n"
        "    from orchestrator.cloud.jobs import Job\n"
        "    backend = pick(name)\n"
        "    if backend.name != 'local':\n"
        "        return Job(name, None).status()\n"
    )

    assert set(findings(around)) == {
        "line 1: imports orchestrator.backends.runs", "line 1: imports orchestrator.backends.runs.find_run",
        "line 1: imports find_run", "line 3: names find_run",
        "line 5: imports orchestrator.backends.local", "line 5: imports orchestrator.backends.local.LocalBackend",
        "line 5: imports LocalBackend", "line 6: names LocalBackend",
        "line 7: imports orchestrator.cloud.jobs", "line 7: imports orchestrator.cloud.jobs.Job",
        "line 9: compares with 'local'"}
