"""The entry point of a function job: runs the shipped function on this rank and keeps what it returned or raised.

It runs inside the training container, on every rank the mode launches (python, torchrun, mpirun), so it uses
the standard library and cloudpickle only (the job's requirements.txt pins the notebook's cloudpickle). The
function and its arguments come in the code directory; the outcome goes to this rank's file under
$SM_OUTPUT_DATA_DIR/smtrain-remote/, which SageMaker uploads in output.tar.gz. A failure is also printed and
exits 1, so the job fails as any script's would and its logs show the traceback.
"""

import json
import linecache
import os
import pickle
import socket
import sys
import traceback
from typing import Any, Callable

HERE = os.path.dirname(os.path.abspath(__file__))
SHIPPED = os.path.join(HERE, "smtrain_remote")
RESULTS = "smtrain-remote"


def rank() -> int:
    """The global rank as the launcher gives it; in mode none, one process per host, the host's index."""
    for name in ("RANK", "OMPI_COMM_WORLD_RANK"):
        if os.environ.get(name, "").isdigit():
            return int(os.environ[name])
    hosts = json.loads(os.environ.get("SM_HOSTS", "[]"))
    current = os.environ.get("SM_CURRENT_HOST", "")
    return hosts.index(current) if current in hosts else 0


def host() -> str:
    """This rank's host: its hostname where that is one of the job's hosts (under mpirun every rank inherits the
    master's SM_CURRENT_HOST), else SM_CURRENT_HOST."""
    name = socket.gethostname()
    return name if name in json.loads(os.environ.get("SM_HOSTS", "[]")) else os.environ.get("SM_CURRENT_HOST", name)


def main() -> int:
    _import_from_the_code_directory()
    import cloudpickle  # noqa: F401  (pickle.load needs its reconstructors for by-value functions)

    with open(os.path.join(SHIPPED, "function.pkl"), "rb") as file:
        function = pickle.load(file)
    with open(os.path.join(SHIPPED, "arguments.pkl"), "rb") as file:
        args, kwargs = pickle.load(file)
    _know_shipped_lines()
    me = rank()
    outcome = {"rank": me, "host": host()}
    try:
        outcome["value"] = _called(function, args, kwargs)
        code = 0
    except BaseException as error:  # noqa: BLE001 (every failure, SystemExit included, goes back to the caller)
        text = traceback.format_exc()
        sys.stderr.write(text)
        outcome["traceback"] = text
        outcome["error"] = error
        code = 1
    _keep(me, outcome)
    return code


def _called(function: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    """What the function returns; None when it ends with `sys.exit(0)` or `sys.exit()`, as a training script that
    exits 0 succeeds: code brought from a script often ends so. Another exit status fails the job."""
    try:
        return function(*args, **kwargs)
    except SystemExit as error:
        if error.code in (None, 0):
            return None
        raise


def _import_from_the_code_directory() -> None:
    """The user's modules import from the code directory, and from its folders that hold those that came from
    several folders of the notebook's machine, as the notebook imported them."""
    with open(os.path.join(SHIPPED, "import_folders.json")) as file:
        folders = json.load(file)
    sys.path[:0] = [HERE, *(os.path.join(HERE, folder) for folder in folders)]


def _know_shipped_lines() -> None:
    """Gives linecache the lines of the code that travelled by value (its file, a notebook cell, is not here), so
    the traceback shows them; no modification time, so linecache never checks a file for them."""
    with open(os.path.join(SHIPPED, "lines.json")) as file:
        for filename, lines in json.load(file).items():
            linecache.cache[filename] = (sum(map(len, lines)), None, lines, filename)


def _keep(me: int, outcome: dict) -> None:
    """Writes this rank's outcome: its rank, host and traceback as plain data, and the value or exception pickled
    apart, so that a caller who cannot rebuild it (an exception whose __init__ wants other arguments, a class of
    a package only the image has) still reads the rest."""
    import cloudpickle

    folder = os.path.join(os.environ.get("SM_OUTPUT_DATA_DIR", "/opt/ml/output/data"), RESULTS)
    os.makedirs(folder, exist_ok=True)
    raised = "error" in outcome
    kept = {key: value for key, value in outcome.items() if key not in ("value", "error")}
    inner = outcome["error"] if raised else outcome["value"]
    kept["raised"] = raised
    kept["described"] = f"{type(inner).__name__}: {inner}" if raised else type(inner).__name__
    try:
        kept["pickled"] = cloudpickle.dumps(inner)
    except Exception as error:  # noqa: BLE001 (a value or exception that cannot travel still says what it was)
        if raised:
            kept["pickled"] = cloudpickle.dumps(RuntimeError(kept["described"]))
        else:
            kept["unpicklable"] = f"rank {me} returned a {type(inner).__name__} that cannot be pickled ({error})"
    with open(os.path.join(folder, f"rank-{me:05d}.pkl"), "wb") as file:
        file.write(pickle.dumps(kept))


if __name__ == "__main__":
    sys.exit(main())
