"""The names a function pickled by value reads that the job will not have, found before it starts.

cloudpickle takes along the globals a notebook function reads as they exist, and none of the builtins: a global
the notebook has not defined yet, or a name only IPython gives a notebook, is missing in the job, which fails
there (NameError), on SageMaker after minutes of start-up. IPython's are its builtins (`display`, and
`get_ipython`, which a `%magic` or `!command` line in the function calls), its shell's objects in the notebook's
namespace (`get_ipython`, `exit`), which cannot be pickled, and its history (`In`, `Out`, `_`, `_3`), which would
make the job depend on the cells run last.
"""

from __future__ import annotations

import builtins
import dis
import re
import types
from typing import Any

DEFINE_FIRST = ("run the cell that defines it before planning or running the job, or define it inside the function: "
                "a function defined in a notebook takes along the globals it uses as they are when the job is made")
_HISTORY = re.compile(r"In|Out|_{1,3}|_i{1,3}|_i?\d+|_[ido]h")  # IPython's In/Out history and its shortcuts
_HISTORY_FIX = ("the notebook's history does not travel: assign the value to a name of your own in a cell "
                "(`weights = Out[3]`) and use that name, or pass it to the function as an argument")
_FIXES = {
    "display": "print it instead (`print(...)`: the job's log shows it), or import it inside the function "
               '(`from IPython.display import display`) with requirements=["ipython"]',
    "get_ipython": "a job has no IPython shell: keep `%magic` and `!command` lines (they call get_ipython()) out of "
                   "the function; run a command with subprocess.run([...]) and install packages with "
                   "requirements=[...]",
    "exit": "return from the function (what it returns is job.result()), or raise an exception to fail the job",
    "__IPYTHON__": "a job never runs under IPython: leave out what depends on it",
}
_FIXES["quit"] = _FIXES["exit"]


class MissingInTheJob(Exception):
    """A function pickled by value reads a name the job will not have; `fix` says what to do instead."""

    def __init__(self, message: str, fix: str) -> None:
        super().__init__(message)
        self.fix = fix


def check_names(function: types.FunctionType) -> None:
    """Refuses a by-value function (or a helper it takes along) reading a global the notebook does not define
    (yet), or one only IPython gives the notebook.

    Raises:
        MissingInTheJob: naming the function, the names and the fix.
    """
    read = _globals_read(function)
    namespace = function.__globals__
    undefined = sorted(read - namespace.keys() - vars(builtins).keys())
    if undefined:
        raise MissingInTheJob(f"`{function.__qualname__}` uses {_listed(undefined)}, which this notebook does not "
                              "define (yet): the job would fail with NameError", fix=DEFINE_FIRST)
    from_ipython = sorted(name for name in read if _from_ipython(name, namespace))
    if from_ipython:
        first = from_ipython[0]
        raise MissingInTheJob(
            f"`{function.__qualname__}` uses {_listed(from_ipython)}, which IPython gives this notebook and the job "
            "does not have", fix=_FIXES.get(first, _HISTORY_FIX))


def _globals_read(function: types.FunctionType) -> set[str]:
    """The global names the code of `function` (and of the functions it defines) reads, leaving out those it
    assigns itself (`global x; x = ...`)."""
    read, assigned = set(), set()
    waiting = [function.__code__]
    while waiting:
        code = waiting.pop()
        for instruction in dis.get_instructions(code):
            if instruction.opname == "LOAD_GLOBAL":
                read.add(instruction.argval)
            elif instruction.opname in ("STORE_GLOBAL", "DELETE_GLOBAL"):
                assigned.add(instruction.argval)
        waiting += [constant for constant in code.co_consts if isinstance(constant, types.CodeType)]
    return read - assigned


def _from_ipython(name: str, namespace: dict[str, Any]) -> bool:
    """True for a builtin IPython added (`display`), an object of this IPython session in the namespace under
    IPython's name for it (its shell's `get_ipython`, its `exit`: not a function imported from IPython, which
    travels by reference), or a history name in a namespace IPython keeps (it always holds `_ih`)."""
    if name not in namespace:
        value = vars(builtins).get(name)
        return name == "__IPYTHON__" or _module_of(value).startswith("IPython")
    value = namespace[name]
    if isinstance(value, (types.FunctionType, type)):
        return False
    return ((name in _FIXES and _module_of(value).startswith("IPython"))
            or ("_ih" in namespace and bool(_HISTORY.fullmatch(name))))


def _module_of(value: Any) -> str:
    return str(getattr(value, "__module__", None) or type(value).__module__)


def _listed(names: list[str]) -> str:
    return ", ".join(f"`{name}`" for name in names)
