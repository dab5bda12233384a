"""The variables the PyTorch toolkit writes over a job's Environment, read from the installed toolkits' source:
orchestrator/contract.py's PYTORCH_TOOLKIT_* and MPIRUN_NCCL_DEBUG, which validate's warning and the emulator use."""

from __future__ import annotations

import ast
import inspect
import textwrap

import pytest

from orchestrator.contract import MPIRUN_NCCL_DEBUG, PYTORCH_TOOLKIT_VALUES, PYTORCH_TOOLKIT_VARIABLES

training = pytest.importorskip("sagemaker_pytorch_container.training")


def _function(function) -> ast.FunctionDef:
    return ast.parse(textwrap.dedent(inspect.getsource(function))).body[0]


def _environ_assignments(function) -> dict[str, ast.expr]:
    """`os.environ['NAME'] = value` statements of a function, by name."""
    return {node.targets[0].slice.value: node.value for node in ast.walk(_function(function))
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Subscript)
            and ast.unparse(node.targets[0].value) == "os.environ"}


def test_the_variables_and_fixed_values_are_the_ones_the_toolkit_assigns():
    assigned = {**_environ_assignments(training._set_distributed_environment),
                **_environ_assignments(training._set_nccl_environment)}
    assert set(assigned) == PYTORCH_TOOLKIT_VARIABLES
    fixed = {name: value.value if isinstance(value, ast.Constant) else getattr(training, value.id)
             for name, value in assigned.items()
             if isinstance(value, ast.Constant) or isinstance(value, ast.Name) and value.id.isupper()}
    assert fixed == PYTORCH_TOOLKIT_VALUES


def test_train_sets_them_in_every_mode_before_it_picks_the_launcher():
    """Called in train()'s own body, under no condition: every mode, host count and instance type."""
    calls = {ast.unparse(statement.value.func) for statement in _function(training.train).body
             if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)}
    assert {"_set_nccl_environment", "_set_distributed_environment"} <= calls


@pytest.mark.parametrize("module", ["mpi", "smdataparallel"])
def test_mpirun_gives_every_rank_the_default_nccl_debug(module):
    launcher = pytest.importorskip(f"sagemaker_training.{module}")
    assert vars(launcher._parse_custom_mpi_options("")[0]) == {"NCCL_DEBUG": MPIRUN_NCCL_DEBUG}
    assert '"NCCL_DEBUG=%s" % overridden_known_options.NCCL_DEBUG' in inspect.getsource(launcher)
