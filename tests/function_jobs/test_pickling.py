"""What cannot travel to a function job is refused before anything is written, naming it (function_jobs/pickling.py)."""

from __future__ import annotations

import functools
import json
import os
import pickle
import socket
import sqlite3
import threading
import tracemalloc

import numpy as np
import pytest

import orchestrator
from orchestrator.errors import SpecError
from orchestrator.function_jobs import pickling
from orchestrator.function_jobs.pickling import pickled_arguments, pickled_function, shipped_lines
from orchestrator.planning.packaging import DEFAULT_MAX_BYTES

SMALL_LIMIT = 10_000_000


def _takes(*args, **kwargs):
    return len(args) + len(kwargs)


@pytest.fixture
def small_limit(monkeypatch) -> int:
    """A 10 MB limit on what travels in a function job's code tarball instead of 105 MB: a test going over it
    pickles and gzips a tenth of the data (3 to 5 CPU-s each at the real limit). The refusal of arguments over the
    real limit keeps it (test_arguments_larger_than_a_code_tarball_holds_are_refused_with_their_size_...)."""
    monkeypatch.setattr(pickling, "DEFAULT_MAX_BYTES", SMALL_LIMIT)
    return SMALL_LIMIT


def _cache_entries(tmp_path):
    remote = tmp_path / "cache" / "remote"
    return sorted(remote.iterdir()) if remote.is_dir() else []


@pytest.mark.parametrize(("args", "kwargs", "named"), [
    ((1, threading.Lock()), {}, "positional argument 1 (a lock)"),
    ((), {"rows": (n for n in range(3))}, "keyword argument 'rows' (a generator)"),
])
def test_an_argument_that_cannot_be_pickled_is_named_and_nothing_is_written(args, kwargs, named, tmp_path):
    job = orchestrator.remote(instance_type="ml.c5.xlarge")(_takes)

    with pytest.raises(SpecError) as error:
        job.run(*args, backend="local", **kwargs)

    assert error.value.message.startswith(f"{named} cannot travel to the job: TypeError: cannot pickle")
    assert "inside the function" in error.value.fix and "inputs=" in error.value.fix
    assert _cache_entries(tmp_path) == [] and not (tmp_path / "runs").exists()


def test_a_function_that_takes_along_an_unpicklable_global_is_refused_with_the_fix(tmp_path):
    lock = threading.Lock()

    def locked():
        with lock:
            return 1

    with pytest.raises(SpecError) as error:
        orchestrator.remote(instance_type="ml.c5.xlarge")(locked).run(backend="local")

    assert "function" in error.value.message and "locked cannot travel" in error.value.message
    assert "cannot pickle '_thread.lock'" in error.value.message and "module file" in error.value.fix
    assert _cache_entries(tmp_path) == []


CELL_TAKING_ALONG_A_LOCK = """
import functools, threading

lock = threading.Lock()

def helper():
    with lock:
        return 1

def calls_helper():
    return helper()

def serialised(function):
    @functools.wraps(function)
    def wrapper(*args):
        with lock:
            return function(*args)
    return wrapper

@serialised
def step(lr):
    return lr
"""


@pytest.mark.parametrize(("name", "args", "holder"), [
    ("calls_helper", (), "a global of `helper`"),
    ("step", (0.1,), "a global of `serialised.<locals>.wrapper`"),  # the functools.wraps wrapper, not `step`
])
def test_the_value_that_cannot_travel_is_named_with_the_function_that_holds_it(name, args, holder, cell_function,
                                                                                tmp_path):
    """Before, only `cannot pickle '_thread.lock' object` for the decorated function: which of the values it,
    its helpers or its decorator's wrapper take along was the user's to find, and the fix named none of them."""
    function = cell_function(CELL_TAKING_ALONG_A_LOCK, name, "<ipython-input-5-lock>")

    with pytest.raises(SpecError) as error:
        orchestrator.remote(instance_type="ml.c5.xlarge")(function).plan(*args)

    assert error.value.message == (f"the function {name} cannot travel to the job: `lock` (a lock), {holder}, "
                                   "cannot be pickled: TypeError: cannot pickle '_thread.lock' object")
    assert f"create `lock` inside `{holder.split('`')[1]}`" in error.value.fix
    assert _cache_entries(tmp_path) == []


def _train(lock, lr=0.1, client=None):
    return lr


class _Trainer:
    """A callable object as a notebook makes one: it opens its connection when it is made, before it travels."""

    def __init__(self) -> None:
        self.lr = 0.1
        self.connection = sqlite3.connect(":memory:")

    def __call__(self):
        return self.lr


@pytest.mark.parametrize(("bind", "named", "fix"), [
    (lambda opened: functools.partial(_train, threading.Lock()),
     "the function _train cannot travel to the job: `lock` (a lock), an argument functools.partial binds to `_train`, cannot be pickled: TypeError: cannot "
     "pickle '_thread.lock' object", "create `lock` inside `_train` instead of binding it"),
    (lambda opened: functools.partial(_train, None, client=opened),
     "the function _train cannot travel to the job: `client` (a socket), an argument functools.partial binds to `_train`, cannot be pickled: TypeError: cannot "
     "pickle 'socket' object", "create `client` inside `_train` instead of binding it"),
    (lambda opened: _Trainer(),
     "the function _Trainer cannot travel to the job: `connection` (a Connection), an attribute of a `_Trainer` "
     "object, cannot be pickled: TypeError: cannot pickle 'sqlite3.Connection' object", "create `connection` in `_Trainer.__call__`, which runs in the job"),
], ids=["partial's positional argument", "partial's keyword argument", "callable object's attribute"])
def test_what_a_partial_binds_or_a_callable_object_holds_is_named_with_its_holder(bind, named, fix, tmp_path):
    """Before, only `cannot pickle '_thread.lock' object`, and a fix to define the function in a module file, which
    a partial's arguments and an object's attributes travel with all the same."""
    with socket.socket() as opened, pytest.raises(SpecError) as error:
        orchestrator.remote(instance_type="ml.c5.xlarge")(bind(opened)).plan()

    assert error.value.message == named
    assert fix in error.value.fix and "module file" not in error.value.fix
    assert _cache_entries(tmp_path) == []


def test_a_partial_of_a_cell_function_names_what_its_function_takes_along_and_a_partial_argument_what_it_binds(
        cell_function):
    partial = functools.partial(cell_function(CELL_TAKING_ALONG_A_LOCK, "calls_helper", "<ipython-input-7-lock>"))

    with pytest.raises(SpecError) as function_error:
        orchestrator.remote(instance_type="ml.c5.xlarge")(partial).plan()
    with pytest.raises(SpecError) as argument_error:
        orchestrator.remote(instance_type="ml.c5.xlarge")(_takes).plan(functools.partial(_train, threading.Lock()))

    assert function_error.value.message == ("the function calls_helper cannot travel to the job: `lock` (a lock), a "
                                            "global of `helper`, cannot be pickled: TypeError: cannot pickle "
                                            "'_thread.lock' object")
    assert "create `lock` inside `helper`" in function_error.value.fix
    assert argument_error.value.message.startswith(
        "positional argument 0 (a partial) cannot travel to the job: `lock` (a lock), an argument functools.partial "
        "binds to `_train`")


def test_a_lambda_argument_closing_over_what_cannot_travel_names_the_variable():
    connection = sqlite3.connect(":memory:")
    job = orchestrator.remote(instance_type="ml.c5.xlarge")(_takes)

    with pytest.raises(SpecError) as error:
        job.plan(1, lambda: connection.execute("select 1"))

    assert error.value.message.startswith("positional argument 1 (a function) cannot travel to the job: "
                                          "`connection` (a Connection), a closure variable of ")
    assert "cannot pickle 'sqlite3.Connection' object" in error.value.message


def test_an_open_file_is_refused_as_an_argument_or_taken_along_with_the_fix_to_pass_its_path(tmp_path):
    """Before, an open text file travelled: cloudpickle took along what it held here, as an in-memory copy, and the
    job read a snapshot of a file it has not got (and wrote nowhere), never told to pass the path."""
    (tmp_path / "rows.csv").write_text("a,b\n1,2\n")
    with (tmp_path / "rows.csv").open() as rows:
        def first_line():
            return rows.readline()

        with pytest.raises(SpecError) as argument_error:
            orchestrator.remote(instance_type="ml.c5.xlarge")(_takes).plan(rows=rows)
        with pytest.raises(SpecError) as function_error:
            orchestrator.remote(instance_type="ml.c5.xlarge")(first_line).plan()

    opened = f"an open file {str(tmp_path / 'rows.csv')!r}"
    assert argument_error.value.message.startswith(f"keyword argument 'rows' ({opened}) cannot travel to the job")
    assert "pass a path" in argument_error.value.fix
    assert f"`rows` ({opened}), a closure variable of `" in function_error.value.message
    assert "create `rows` inside" in function_error.value.fix
    assert "for an open file, pass its path and open it there" in function_error.value.fix
    assert _cache_entries(tmp_path) == []


def test_arguments_larger_than_a_code_tarball_holds_are_refused_with_their_size_and_nothing_is_written(tmp_path):
    job = orchestrator.remote(instance_type="ml.c5.xlarge", instance_count=2)(_takes)

    with pytest.raises(SpecError) as error:
        job.run(os.urandom(DEFAULT_MAX_BYTES + 1_000_000), backend="local")

    assert error.value.message.startswith("the arguments are 105.9 MB pickled and gzip to more than the 105 MB a "
                                          "job's code tarball may hold")
    assert "source_dir" not in str(error.value) and "--max-source-mb" not in str(error.value)
    assert 'inputs={"data": "s3://' in error.value.fix and "local_inputs=" in error.value.fix
    assert "SM_CHANNEL_DATA" in error.value.fix
    assert _cache_entries(tmp_path) == [] and not (tmp_path / "runs").exists()


def test_a_numpy_array_argument_travels_and_one_over_the_limit_is_refused_with_its_size(tmp_path, small_limit):
    """Before, any array over 64 kB (pickled out-of-band as a PickleBuffer, which has no len()) was refused as
    `positional argument 0 (a ndarray) cannot travel to the job: TypeError: object of type 'pickle.PickleBuffer'
    has no len()`, however small, and a 600 MB one too, never with its size."""
    rows = np.arange(1_000_000, dtype=np.float64)
    too_large = np.random.default_rng(0).random(small_limit // 8 + 300_000)  # gzipped: 94%
    job = orchestrator.remote(instance_type="ml.c5.xlarge")(_takes)

    pickled_arguments((rows,), {"weights": rows[:10]}, tmp_path / "arguments.pkl")
    (args, kwargs) = pickle.loads((tmp_path / "arguments.pkl").read_bytes())
    with pytest.raises(SpecError) as error:
        job.run(too_large, backend="local")

    assert np.array_equal(args[0], rows) and np.array_equal(kwargs["weights"], rows[:10])
    assert error.value.message.startswith("the arguments are 12.4 MB pickled and gzip to more than the 10 MB")
    assert _cache_entries(tmp_path) == [] and not (tmp_path / "runs").exists()


def test_what_travels_is_measured_as_it_is_uploaded_gzipped_so_a_compressible_argument_over_the_limit_travels(
        small_limit):
    """A mask of zeros over the limit as it is gzips to 0.1 MB in the code tarball: before, a 113 MB one was refused
    as `the arguments are 112.9 MB pickled, over the 105 MB a job's code tarball may hold`, the size before
    compression."""
    mask = np.zeros(small_limit // 8 + 1_000_000, dtype=np.float64)

    plan = orchestrator.remote(instance_type="ml.c5.xlarge")(_takes).plan(mask)

    assert plan.source.size_bytes < 1_000_000
    assert "smtrain_remote/arguments.pkl" in plan.source.files


def test_a_large_compressible_argument_is_measured_and_packed_without_a_copy_of_it_in_memory():
    """A 200 MB mask of zeros travels as 0.2 MB: before, its pickle was kept in memory to be measured and written
    (240 MB more at the peak than the notebook already held, for an argument that uploads as 0.2 MB); it now
    streams to its file in smtrain's cache, measured as it is written (about 30 MB at the peak)."""
    mask = np.zeros(200_000_000 // 8, dtype=np.float64)
    job = orchestrator.remote(instance_type="ml.c5.xlarge")(_takes)

    tracemalloc.start()
    try:
        plan = job.plan(mask)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

    assert plan.source.size_bytes < 1_000_000
    assert peak < mask.nbytes / 4, f"{peak / 1e6:.0f} MB at the peak for a {mask.nbytes / 1e6:.0f} MB argument"


def test_a_function_taking_along_too_large_a_global_is_refused_naming_it_and_nothing_is_written(tmp_path,
                                                                                                 small_limit):
    """A notebook's data loaded in one cell and used by the function in another: before, all of it was pickled
    into smtrain's cache, and the refusal came from packing, telling the user to write a .smtrainignore in that
    cache folder or pass --max-source-mb, neither of which a function job has."""
    rows = np.random.default_rng(0).random(small_limit // 8 + 100_000)

    def total():
        return rows.sum()

    with pytest.raises(SpecError) as error:
        orchestrator.remote(instance_type="ml.c5.xlarge")(total).run(backend="local")

    assert error.value.message.startswith("the function test_a_function_taking_along_too_large_a_global_is_refused")
    assert "pickled with the globals and closure values it takes along: the largest, `rows` (10.8 MB pickled), " \
           "and gzips to more than the 10 MB" in error.value.message
    assert "inputs=" in error.value.fix and ".smtrainignore" not in str(error.value)
    assert "--max-source-mb" not in str(error.value)
    assert _cache_entries(tmp_path) == [] and not (tmp_path / "runs").exists()


def test_by_value_code_keeps_its_file_and_only_its_own_lines_travel(cell_function, tmp_path):
    cell = "/nonexistent/ipykernel_1/cell-3.py"
    square = cell_function("""
        NOT_FOR_THE_JOB = "a line the function does not span"

        def square(x):
            return x * x
        """, "square", cell)

    pickled = pickled_function(square, "square", tmp_path / "function.pkl")

    assert pickle.loads((tmp_path / "function.pkl").read_bytes()).__code__.co_filename == cell
    assert json.loads(shipped_lines(pickled)) == {cell: ["\n", "\n", "\n", "def square(x):\n",
                                                         "    return x * x\n"]}


def test_a_function_and_arguments_each_within_the_limit_but_over_it_together_are_refused_as_a_function_job(tmp_path,
                                                                                                      small_limit):
    """Before, each part passed its own check and packing refused the sum, telling the user to write a
    .smtrainignore in smtrain's cache folder or pass --max-source-mb, neither of which a function job has."""
    rows = os.urandom(small_limit // 2)  # no compression makes either part smaller in the tarball

    def total(more):
        return len(rows) + len(more)

    with pytest.raises(SpecError) as error:
        orchestrator.remote(instance_type="ml.c5.xlarge")(total).run(os.urandom(small_limit // 2 + 200_000),
                                                                     backend="local")

    assert error.value.message.startswith(
        "what travels in the job's code tarball (the function with the values it takes along, the arguments, "
        "your modules' files) gzips to 10.2 MB together, over the 10 MB it may hold")
    assert error.value.message.endswith("the largest, the arguments (5.2 MB gzipped)")
    assert 'inputs={"data": "s3://' in error.value.fix and "SM_CHANNEL_DATA" in error.value.fix
    assert ".smtrainignore" not in str(error.value) and "--max-source-mb" not in str(error.value)
    assert _cache_entries(tmp_path) == [] and not (tmp_path / "runs").exists()


def test_a_cell_function_or_a_lambda_argument_using_a_global_not_defined_yet_is_refused_naming_it(tmp_path,
                                                                                                  cell_function):
    """`SCALE` is defined in a later cell the user has not run: cloudpickle takes along only the globals that exist,
    so before, the job started (on SageMaker, minutes of provisioning) and failed with NameError."""
    later = cell_function("""
        def helper(x):
            return x * SCALE

        def later(x):
            return helper(x)
        """, "later", "<ipython-input-4-9f8e7d>")
    uses_undefined = cell_function("ADD = lambda x: x + OFFSET", "ADD", "<ipython-input-5-1a2b3c>")
    job = orchestrator.remote(instance_type="ml.c5.xlarge")

    with pytest.raises(SpecError) as function_error:
        job(later).run(2, backend="local")
    with pytest.raises(SpecError) as argument_error:
        job(_takes).run(1, uses_undefined, backend="local")

    assert function_error.value.message == (
        "the function later cannot travel to the job: `helper` uses `SCALE`, which this notebook does not define "
        "(yet): the job would fail with NameError")
    assert argument_error.value.message.startswith("positional argument 1 (a function) cannot travel to the job: "
                                                   "`<lambda>` uses `OFFSET`, which this notebook does not define")
    assert "run the cell that defines it" in function_error.value.fix
    assert argument_error.value.fix == function_error.value.fix
    assert _cache_entries(tmp_path) == [] and not (tmp_path / "runs").exists()


def test_globals_a_cell_function_assigns_itself_or_the_builtins_hold_are_not_taken_for_undefined(cell_function,
                                                                                                  tmp_path):
    counts = cell_function("""
        LIMIT = 3

        def counts(rows):
            global SEEN
            SEEN = len(rows)
            return [min(row, LIMIT) for row in rows], SEEN
        """, "counts", "<ipython-input-6-4d5e6f>")

    pickled_function(counts, "counts", tmp_path / "function.pkl")
    function = pickle.loads((tmp_path / "function.pkl").read_bytes())

    assert function([1, 5]) == ([1, 3], 2)
