"""`@remote(...)`: a function becomes an ordinary training job, planned, run locally or submitted like a spec.

How the function travels, and why: cloudpickle, which pickles a function importable from a module file by
reference (module and qualified name: the module's files are packed as `source_dir` is) and a function defined in
a notebook cell or a script on standard input by value (its code, its closures and the notebook-defined helpers
it calls). A by-value function is bytecode, so the image's Python must be the notebook's: that is checked at plan
time against smtrain's image table, never found at run time. The job's requirements.txt pins the notebook's
cloudpickle, so the container unpickles with the version that pickled. Arguments travel in the code tarball and
results in output.tar.gz (each rank's own file), never in hyperparameters.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import hashlib
import inspect
import json
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from orchestrator.contract import FUNCTION_RUNNER as RUNNER
from orchestrator.contract import REQUIREMENTS_FILE
from orchestrator.declaration import declarations
from orchestrator.errors import EnvironmentProblem, SpecError, install_extra
from orchestrator.function_jobs.local_modules import local_modules, shipped_modules
from orchestrator.function_jobs.pickling import (
    check_fits_together,
    defined_by,
    pickled_arguments,
    pickled_function,
    shipped_lines,
    travels_by_value,
)
from orchestrator.planning.unverified import UnverifiedOptions
from orchestrator.redact import redact
from orchestrator.specs import images
from orchestrator.specs.words import FieldWords
from orchestrator.wording import kind_of

SHIPPED = "smtrain_remote"

# The keywords `remote` takes, with the SDK's names where a spec nests them: keyword -> the spec's dotted field.
_FIELDS = {
    "name": "name", "instance_type": "instance.type", "instance_count": "instance.count",
    "distribution": "distribution", "framework_version": "framework_version", "py_version": "py_version",
    "image_uri": "image_uri", "role": "role", "region": "region", "output_path": "output_path",
    "environment": "environment", "inputs": "inputs", "local_inputs": "local_inputs", "spot": "spot",
    "max_run_seconds": "max_run_seconds", "metrics": "metrics", "tags": "tags", "checkpoint": "checkpoint",
    **{option: option for option in declarations(UnverifiedOptions)},
}
"""`allow_unverified` is submit's declared option and the spec's field of that name: `run`'s keywords are the
function's own arguments, so the decorator is where a function job's user lets an unverified combination through."""
_OWN = ("spec", "requirements")
KEYWORDS = (*_FIELDS, *_OWN)
KEYWORD_WORDS = FieldWords(keywords_of="@orchestrator.remote(...)")
"""A fix names a missing region, role or output path as the keyword to pass: a function job has no spec."""


def remote(function: Callable[..., Any] | None = None, **options: Any) -> Any:
    """Makes `function` a training job. Called directly, it runs here, unchanged; `.plan(*args)` gives the Plan
    with nothing sent; `.run(*args, backend="local" | "sagemaker")` starts it and returns its `Job`, whose
    `result()` is rank 0's return value.

    Keywords: what a spec takes (`instance_type`, `instance_count`, `distribution` as a mode name or a mapping,
    `framework_version`, `py_version`, `image_uri`, `role`, `region`, `output_path`, `environment`, `inputs`,
    `spot`, `max_run_seconds`, ...), `allow_unverified=True` (send a combination smtrain has not verified, as
    `submit` does), `requirements` (a list, or a requirements file) and `spec` (a spec file or a mapping to start
    from; the keywords override it).

    Raises:
        SpecError: an unknown keyword (with the nearest known one), or a setting given without its keyword.
    """
    if function is not None and not callable(function):  # `@remote("ml.g5.xlarge")`: a setting, not a function
        raise SpecError(f"remote() takes its settings as keywords, not {kind_of(function)} by position",
                        fix='name it, e.g. @orchestrator.remote(instance_type="ml.g5.xlarge")')
    unknown = [key for key in options if key not in KEYWORDS]
    if unknown:
        near = difflib.get_close_matches(unknown[0], KEYWORDS, n=1)
        raise SpecError(f"remote() got an unexpected keyword {unknown[0]!r}",
                        fix=f"did you mean `{near[0]}`?" if near else f"use one of: {', '.join(KEYWORDS)}")
    if function is None:
        return lambda given: RemoteFunction(given, options)
    return RemoteFunction(function, options)


class RemoteFunction:
    """A function with the job it becomes; calling it still calls the function."""

    def __init__(self, function: Callable[..., Any], options: Mapping[str, Any]) -> None:
        self.function = function
        self.options = dict(options)
        functools.update_wrapper(self, function)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.function(*args, **kwargs)

    def __repr__(self) -> str:
        """`RemoteFunction(train, instance_type='ml.g5.xlarge', environment={'HF_TOKEN': '****'})`: the function
        and its job's keywords, secret-looking values masked (a notebook showed only the object's address)."""
        defining = defined_by(self.function)
        module, name = defining.__module__, defining.__qualname__
        name = name if module in (None, "__main__") else f"{module}.{name}"
        keywords = "".join(f", {key}={value!r}" for key, value in redact(self.options).items())
        return f"RemoteFunction({name}{keywords})"

    def plan(self, *args: Any, **kwargs: Any) -> Any:
        """The Plan of a SageMaker job that calls the function with these arguments (nothing is sent)."""
        from orchestrator.api import plan

        return plan(self._loaded(args, kwargs, backend="sagemaker"))

    def run(self, *args: Any, backend: str = "local", **kwargs: Any) -> Any:
        """Starts the job on `backend` and returns its `Job` at once (`job.result()` waits for the value)."""
        from orchestrator.api import run

        _check_backend_is_a_place(self.function, backend)
        return run(self._loaded(args, kwargs, backend=backend), backend=backend)

    def _loaded(self, args: tuple[Any, ...], kwargs: dict[str, Any], backend: str) -> Any:
        _check_returns_its_value(self.function)
        by_value = travels_by_value(self.function)
        source_dir, known_as = _ship(self.function, args, kwargs, self.options.get("requirements"), by_value)
        loaded = dataclasses.replace(_spec(self.function, self.options, source_dir), source_known_as=known_as)
        if by_value:
            _check_python(loaded.spec, backend)
        return loaded


def _check_backend_is_a_place(function: Callable[..., Any], backend: str) -> None:
    """`backend=` is run's own (where the job runs): a function taking an argument of that name (a DDP backend,
    "nccl") given it through run is told why its value never reaches the function, not that it is no place to run.

    Raises:
        SpecError: naming the clash, and how to give the function its argument.
    """
    from orchestrator.backends.base import BACKENDS

    if backend in BACKENDS:
        return
    try:
        takes_backend = "backend" in inspect.signature(function).parameters
    except (TypeError, ValueError):  # no signature to read (a builtin): run reports the backend as it would
        return
    if takes_backend:
        name = defined_by(function).__name__
        raise SpecError(f"{name} takes an argument `backend`, but run(backend=...) says where the job runs "
                        f"({', '.join(BACKENDS)}): {backend!r} would never reach the function",
                        fix=f"rename the function's argument (e.g. `dist_backend`), or bind it before decorating: "
                            f"orchestrator.remote(...)(functools.partial({name}, backend={backend!r}))"
                            '.run(..., backend="local")')


def _check_returns_its_value(function: Callable[..., Any]) -> None:
    """Refuses a generator or async function before the job starts: called in the job, it returns a generator or
    a coroutine without running its body, which cannot travel back either, so the job ran for nothing.

    Raises:
        SpecError: naming the kind of function and how to make it one whose call runs it.
    """
    called = function if inspect.isfunction(defined_by(function)) else getattr(function, "__call__", function)
    name = defined_by(function).__qualname__
    if inspect.iscoroutinefunction(called):
        raise SpecError(f"{name} is an async function: called in the job it would return a coroutine, never run "
                        "its body, and have no value to send back",
                        fix=f"decorate a plain function that runs it: `def train(...): return asyncio.run({name}(...))`")
    if inspect.isgeneratorfunction(called) or inspect.isasyncgenfunction(called):
        raise SpecError(f"{name} is a generator function (it yields): called in the job it would return a "
                        "generator, never run its body, and a generator cannot travel back",
                        fix="return what it yields, e.g. collected in a list (`return list(...)`), or decorate a "
                            "plain function that does")


def _ship(function: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
          requirements: Any, by_value: bool) -> tuple[Path, Path | None]:
    """The job's source_dir: the runner, the pickled function and arguments, the lines of by-value code (for
    tracebacks), requirements.txt and the files of the user's own modules the job imports: a function shipped by
    reference's module, and the modules beside the notebook that the function and arguments refer to.
    Content-addressed in smtrain's cache: the same call reuses it, and nothing is written outside the cache.
    With it, the folder that holds those modules here, where a failure in them is shown (shipped_modules)."""
    from orchestrator.cache_dir import writable_cache_root

    try:
        import cloudpickle
    except ImportError:
        raise EnvironmentProblem("a function job needs cloudpickle in this environment",
                                 fix=install_extra("remote")) from None

    pinned = _requirements(requirements, cloudpickle.__version__)
    remote = writable_cache_root() / "remote"
    remote.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=remote, prefix=".staging-"))
    try:
        known_as = _write_sources(function, args, kwargs, pinned, by_value, staging)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    target = remote / _digest(staging)
    try:
        staging.rename(target)
    except OSError:  # the same call made it before, or another made it meanwhile: the same bytes
        shutil.rmtree(staging, ignore_errors=True)
    return target, known_as


def _write_sources(function: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                   requirements: str, by_value: bool, staging: Path) -> Path | None:
    """Writes the job's source_dir into `staging`, the pickles streamed to their files (a large argument is never
    copied in memory); returns the folder that holds the user's modules here (shipped_modules)."""
    shipped = staging / SHIPPED
    shipped.mkdir()
    function_pickle = pickled_function(function, defined_by(function).__qualname__, shipped / "function.pkl")
    arguments_pickle = pickled_arguments(args, kwargs, shipped / "arguments.pkl")
    own = [] if by_value else [_top_module(function)]
    modules = shipped_modules([*own, *local_modules(function_pickle.modules | arguments_pickle.modules,
                                                    function_pickle.imported | arguments_pickle.imported, Path.cwd())])
    files: dict[str, bytes] = {
        RUNNER: (Path(__file__).parent / "runner.py").read_bytes(),
        f"{SHIPPED}/lines.json": shipped_lines(function_pickle, arguments_pickle),
        f"{SHIPPED}/import_folders.json": json.dumps(modules.import_folders).encode(),
        REQUIREMENTS_FILE: requirements.encode(),
        **modules.files,
    }
    for name, data in files.items():
        (staging / name).parent.mkdir(parents=True, exist_ok=True)
        (staging / name).write_bytes(data)
    check_fits_together({"the function with the values it takes along": [shipped / "function.pkl"],
                         "the arguments": [shipped / "arguments.pkl"],
                         "your modules' files": [staging / name for name in modules.files]})
    return modules.known_as


def _digest(folder: Path) -> str:
    """The name of a source_dir in the cache: its files' names and contents, hashed a chunk at a time."""
    digest = hashlib.sha256()
    for path in sorted(path for path in folder.rglob("*") if path.is_file()):
        content = hashlib.sha256()
        with path.open("rb") as file:
            while chunk := file.read(1 << 20):
                content.update(chunk)
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + content.digest())
    return digest.hexdigest()[:32]


def _requirements(requirements: Any, cloudpickle_version: str) -> str:
    lines = [f"cloudpickle=={cloudpickle_version}"]
    if isinstance(requirements, (str, Path)):
        path = Path(requirements)
        if not path.is_file():
            raise SpecError(f"requirements: {path} is not a file", fix="give a requirements.txt, or a list of lines")
        lines += path.read_text().splitlines()
    elif requirements is not None:
        lines += [str(line) for line in requirements]
    return "\n".join(line for line in lines if line.strip()) + "\n"


def _top_module(function: Callable[..., Any]) -> str:
    """`pkg` for a function of `pkg.sub`: the package shipped whole, as the import system finds it."""
    return str(defined_by(function).__module__).split(".")[0]


def _spec(function: Callable[..., Any], options: Mapping[str, Any], source_dir: Path) -> Any:
    """The LoadedSpec: the starting spec (a file, a mapping or nothing), the keywords over it, the runner as the
    entry point. Problems are reported as a spec's are, naming the keyword as its field."""
    from orchestrator.specs.loader import from_mapping, load

    fields = {_FIELDS[key]: _as_field(key, value) for key, value in options.items() if key in _FIELDS}
    fields["entry_point"] = RUNNER
    fields["source_dir"] = str(source_dir)
    start = options.get("spec")
    if isinstance(start, (str, Path)):
        loaded = load(start, overrides=[f"{field}={json.dumps(value)}" for field, value in fields.items()])
        return loaded.in_words(KEYWORD_WORDS)
    data: dict[str, Any] = json.loads(json.dumps(dict(start or {})))
    data.setdefault("name", _job_name(defined_by(function).__name__))
    if not any(key in data or key in fields for key in ("framework_version", "image_uri")):
        data["framework_version"] = _image_for_this_python()
    for field, value in fields.items():
        _set(data, field, value)
    return from_mapping(data, base_dir=Path.cwd()).in_words(KEYWORD_WORDS)


def _as_field(key: str, value: Any) -> Any:
    if key == "distribution" and isinstance(value, str):
        return {"mode": value}
    if key == "spot" and isinstance(value, bool):
        return {"enabled": value}
    return value


def _set(data: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, last = dotted.split(".")
    for part in parents:
        data = data.setdefault(part, {})
    data[last] = value


def _job_name(function_name: str) -> str:
    return re.sub(r"[^A-Za-z0-9-]+", "-", function_name).strip("-")[:40] or "function"


def _this_python() -> str:
    return f"py{sys.version_info.major}{sys.version_info.minor}"


def _image_for_this_python() -> str:
    """The newest framework version whose image has this Python; else the newest (the check then explains)."""
    matching = [version for version, image in images.versions().items() if _this_python() in image.python]
    return (matching or list(images.versions()))[-1]


def _check_python(spec: Any, backend: str) -> None:
    """A by-value function's bytecode needs the image's Python to be the notebook's."""
    from orchestrator.specs.capabilities import resolved_py_version

    if backend == "local" or spec.image_uri:  # local: the job runs with this interpreter; a custom image: unknown
        return
    image_python = resolved_py_version(spec)
    if image_python is None or image_python == _this_python():
        return
    matching = [version for version, image in images.versions().items() if _this_python() in image.python]
    offer = (f"framework_version={matching[-1]!r} (its image has {_this_python()})" if matching
             else f"an image_uri with Python {sys.version_info.major}.{sys.version_info.minor}")
    raise SpecError(
        f"the function travels by value (defined in a notebook or on standard input), and its bytecode needs the "
        f"image's Python to be this one: the image of framework_version {spec.framework_version!r} has "
        f"{image_python}, this notebook runs {_this_python()}",
        fix=f"use {offer}, or define the function in a module file so it travels by reference",
    )
