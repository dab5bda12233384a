"""`@orchestrator.function_jobs`: a function becomes an ordinary training job, planned, run on every rank locally (the
CPU stand-in under GPU modes) or submitted to SageMaker, with its return value and its exception back."""

from __future__ import annotations

import functools
import subprocess
import sys
import tarfile
import textwrap
from pathlib import Path

import boto3
import botocore.session
import pytest
from botocore.validate import validate_parameters

import orchestrator
from orchestrator.backends.function_results import RESULTS_FOLDER, first_error, outcomes
from orchestrator.errors import CapabilityError, EnvironmentProblem, JobFailed, SpecError
from orchestrator.function_jobs import runner
from orchestrator.function_jobs.function import RUNNER
from orchestrator.function_jobs.pickling import travels_by_value
from orchestrator.observing.root_cause import SourcePaths

import functions  # noqa: E402  (functions.py beside this file: a module file, so shipped by reference)

CLOUD = {"role": "arn:aws:iam::123456789012:role/SageMakerExecution", "region": "us-east-1",
         "output_path": "s3://my-bucket/outputs/"}
INPUT_SHAPE = botocore.session.get_session().get_service_model("sagemaker").operation_model(
    "CreateTrainingJob").input_shape
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
THIS_PYTHON = f"py{sys.version_info.major}{sys.version_info.minor}"


def _square(x):
    return x * x


def test_results_folder_is_one_name_on_both_sides():
    assert runner.RESULTS == RESULTS_FOLDER


class NeedsTwo(Exception):
    """An exception as notebooks define them: its __init__ takes other arguments than its message."""

    def __init__(self, shard, reason):
        super().__init__(f"shard {shard}: {reason}")


def test_a_raised_exception_or_a_value_that_cannot_be_rebuilt_here_still_says_what_the_rank_did(tmp_path,
                                                                                             monkeypatch):
    """Before, `job.result()` raised the unpickler's TypeError (`NeedsTwo.__init__() missing 1 required positional
    argument`) or ModuleNotFoundError from smtrain's own frames, and the function's error was lost."""
    (tmp_path / "image_only.py").write_text("class Weights:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("SM_OUTPUT_DATA_DIR", str(tmp_path / "output"))
    import image_only

    runner._keep(0, {"rank": 0, "host": "algo-1", "error": NeedsTwo(3, "bad checksum"),
                     "traceback": 'File "<cell-4>", line 2, in train\nNeedsTwo: shard 3: bad checksum\n'})
    runner._keep(1, {"rank": 1, "host": "algo-1", "value": image_only.Weights()})
    sys.modules.pop("image_only")
    monkeypatch.setattr(sys, "path", [path for path in sys.path if path != str(tmp_path)])
    files = {file.name: file.read_bytes() for file in (tmp_path / "output" / RESULTS_FOLDER).iterdir()}

    raised, returned = outcomes(files)
    error = first_error([raised, returned], None, "cell-job", SourcePaths())
    unreadable = first_error([returned], None, "cell-job", SourcePaths())

    assert type(error) is RuntimeError and str(error).startswith("NeedsTwo: shard 3: bad checksum (its exception ")
    assert 'line 2, in train' in str(error.__cause__)
    assert error.__notes__ == ["raised on rank 0 (algo-1) of job cell-job"]
    assert type(unreadable) is JobFailed and unreadable.message.startswith(
        "rank 1 returned a Weights that cannot be read here: ModuleNotFoundError: No module named 'image_only'")


def test_an_unknown_keyword_is_refused_with_the_nearest_one():
    with pytest.raises(SpecError) as error:
        orchestrator.remote(instance_typ="ml.c5.xlarge")
    assert "instance_typ" in error.value.message and error.value.fix == "did you mean `instance_type`?"


def test_calling_the_function_runs_it_here_unchanged():
    assert orchestrator.remote(instance_type="ml.c5.xlarge")(_square)(7) == 49


def test_a_notebook_shows_the_function_and_its_job_s_keywords_with_secrets_masked():
    shown = orchestrator.remote(instance_type="ml.g5.xlarge", instance_count=2, distribution="torch_distributed",
                                environment={"HF_TOKEN": "alpha-secret-1", "LOG_LEVEL": "info"},
                                spec={"hyperparameters": {"db_password": "beta-secret-2"}})(_square)
    assert repr(shown) == (
        f"RemoteFunction({_square.__module__}._square, instance_type='ml.g5.xlarge', instance_count=2, "
        "distribution='torch_distributed', environment={'HF_TOKEN': '****', 'LOG_LEVEL': 'info'}, "
        "spec={'hyperparameters': {'db_password': '****'}})"
    )
    assert repr(orchestrator.remote(functions.where_am_i)) == "RemoteFunction(functions.where_am_i)"


def test_a_module_function_travels_by_reference_and_a_nested_one_by_value():
    def nested():
        return 1

    assert not travels_by_value(functions.where_am_i)
    assert travels_by_value(nested)


def test_a_partial_or_a_callable_object_becomes_a_job_named_after_what_defines_it():
    """Before, `remote(functools.partial(train, lr=0.1))` failed with AttributeError: 'functools.partial' object has
    no attribute '__qualname__', in its repr, its plan and its run alike."""
    class Scaled:
        def __call__(self, tag):
            return tag

    partial = orchestrator.remote(instance_type="ml.c5.xlarge", framework_version="2.10.0", **CLOUD)(
        functools.partial(functions.where_am_i, "fixed"))
    plan = partial.plan()
    cell_object = orchestrator.remote(instance_type="ml.c5.xlarge", **CLOUD)(Scaled())

    assert repr(partial).startswith("RemoteFunction(functions.where_am_i, instance_type=")
    assert plan.create_training_job_request["TrainingJobName"].startswith("where-am-i-")
    assert "functions.py" in plan.source.files and not travels_by_value(partial.function)
    assert travels_by_value(cell_object.function)
    assert cell_object.plan("x").create_training_job_request["TrainingJobName"].startswith("Scaled-")


def test_plan_is_an_ordinary_request_with_the_runner_and_the_function_in_the_code_tarball():
    square = orchestrator.remote(instance_type="ml.c5.xlarge", framework_version="2.10.0", **CLOUD)(
        functions.where_am_i)

    plan = square.plan("x")

    request = plan.create_training_job_request
    validate_parameters(request, INPUT_SHAPE)
    assert request["HyperParameters"]["sagemaker_program"] == f'"{RUNNER}"'
    assert not any("pkl" in value or "where_am_i" in value for value in request["HyperParameters"].values())
    with tarfile.open(plan.source.tarball) as archive:
        names = set(archive.getnames())
    assert {RUNNER, "smtrain_remote/function.pkl", "smtrain_remote/arguments.pkl", "requirements.txt",
            "functions.py"} <= names


def test_a_by_value_function_whose_python_differs_from_the_image_is_refused_at_plan_with_the_fix():
    def cell_function():
        return 1

    other = "2.10.0" if THIS_PYTHON != "py313" else "2.5.1"
    job = orchestrator.remote(instance_type="ml.c5.xlarge", framework_version=other, **CLOUD)(cell_function)

    with pytest.raises(SpecError) as error:
        job.plan()
    assert f"this notebook runs {THIS_PYTHON}" in error.value.message
    assert "framework_version=" in error.value.fix and "by reference" in error.value.fix


def test_a_cache_that_cannot_be_written_is_refused_with_the_variable_that_moves_it(tmp_path, monkeypatch):
    """The function travels through smtrain's cache: under an unwritable HOME, mkdir's traceback came instead."""
    monkeypatch.setenv("SMTRAIN_CACHE_DIR", str(tmp_path / "a-file" / "smtrain"))
    (tmp_path / "a-file").write_text("")
    square = orchestrator.remote(instance_type="ml.c5.xlarge", framework_version="2.10.0", **CLOUD)(
        functions.where_am_i)
    with pytest.raises(EnvironmentProblem, match="smtrain's cache .* cannot be written") as error:
        square.plan("x")
    assert "SMTRAIN_CACHE_DIR" in error.value.fix


def test_without_a_version_the_image_is_the_newest_with_this_python():
    def cell_function():
        return 1

    plan = orchestrator.remote(instance_type="ml.c5.xlarge", **CLOUD)(cell_function).plan()
    assert plan.create_training_job_request["AlgorithmSpecification"]["TrainingImage"].endswith(f"-{THIS_PYTHON}")


def test_run_on_sagemaker_submits_an_ordinary_job_to_the_aws_emulator(aws):
    boto3.client("s3").create_bucket(Bucket="my-bucket")
    job = orchestrator.remote(instance_type="ml.c5.xlarge", framework_version="2.10.0", **CLOUD)(
        functions.where_am_i).run("cloud", backend="sagemaker")

    assert type(job) is orchestrator.Job and job.backend.name == "sagemaker"
    described = boto3.client("sagemaker").describe_training_job(TrainingJobName=job.name)
    assert described["HyperParameters"]["sagemaker_program"] == f'"{RUNNER}"'


UNVERIFIED = {"framework_version": "2.2.0", "py_version": "py310", "instance_type": "ml.g5.12xlarge",
              "distribution": "pytorchddp"}
"""pytorchddp on a g5: a combination smtrain has not verified, so a SageMaker job of it is refused unless allowed."""


def test_an_unverified_combination_is_refused_naming_the_decorator_s_keyword_which_sends_it(aws):
    """Before, the refusal said `set allow_unverified: true in the spec (or pass allow_unverified=True)`: a function
    job has no spec, its `run` keywords are the function's arguments, and the decorator refused the keyword."""
    boto3.client("s3").create_bucket(Bucket="my-bucket")

    with pytest.raises(CapabilityError) as refused:
        orchestrator.remote(**UNVERIFIED, **CLOUD)(functions.where_am_i).run("cloud", backend="sagemaker")
    assert boto3.client("sagemaker").list_training_jobs()["TrainingJobSummaries"] == []
    job = orchestrator.remote(**UNVERIFIED, **CLOUD, allow_unverified=True)(functions.where_am_i).run(
        "cloud", backend="sagemaker")

    assert refused.value.fix.endswith("or, if you know it works, pass `allow_unverified=True` to @orchestrator.remote(...)")
    assert "allow_unverified: true" not in refused.value.fix
    assert "unverified: instance.type" in refused.value.message
    described = boto3.client("sagemaker").describe_training_job(TrainingJobName=job.name)
    assert described["ResourceConfig"]["InstanceType"] == "ml.g5.12xlarge"


def test_a_function_job_s_unverified_finding_names_the_decorator_s_keyword(aws):
    """Before, the rule's fix said "or set allow_unverified: true": a spec field a function job's user never wrote."""
    boto3.client("s3").create_bucket(Bucket="my-bucket")
    remote = orchestrator.remote(**UNVERIFIED, **CLOUD)(functions.where_am_i)

    [finding] = [finding for finding in remote.plan("cloud").findings if finding.severity == "unverified"]
    with pytest.raises(CapabilityError) as refused:
        remote.run("cloud", backend="sagemaker")

    way = "pass `allow_unverified=True` to @orchestrator.remote(...)"
    assert finding.fix.endswith(f"; or, if you know it works, {way}") and refused.value.fix.endswith(way)
    assert "allow_unverified:" not in f"{finding.fix} {refused.value}"


def _stdin_script(body: str, tmp_path) -> subprocess.CompletedProcess[str]:
    """A script read from standard input, as a kernel holds a cell: its functions are on no disk."""
    return subprocess.run([sys.executable, "-"], input=textwrap.dedent(body), text=True, capture_output=True,
                          cwd=tmp_path, timeout=900)


@pytest.mark.slow
def test_a_function_from_standard_input_runs_under_mode_none_and_under_mpi_on_two_hosts(tmp_path):
    """`alone` also imports a module file beside the script, as a notebook imports its folder's helpers.py: before,
    the job failed with ModuleNotFoundError, told to add it to requirements.txt."""
    (tmp_path / "beside_the_notebook.py").write_text("def shift(x):\n    return x + 100\n")
    done = _stdin_script("""
        import orchestrator

        def helper(x):
            return x + 1

        @orchestrator.remote(instance_type="ml.c5.xlarge", distribution="none")
        def alone(x):
            import os
            from beside_the_notebook import shift
            return shift(helper(x)), os.environ["SM_CURRENT_HOST"]

        @orchestrator.remote(instance_type="ml.c5.xlarge", instance_count=2,
                             distribution={"mode": "mpi", "processes_per_host": 2})
        def ranks(x):
            import os
            import socket
            return helper(x), int(os.environ["OMPI_COMM_WORLD_RANK"]), socket.gethostname()

        print("none", alone.run(1, backend="local").results())
        print("mpi", ranks.run(10, backend="local").results())
        """, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "none [(102, 'algo-1')]" in done.stdout
    assert ("mpi [(11, 0, 'algo-1'), (11, 1, 'algo-1'), (11, 2, 'algo-2'), (11, 3, 'algo-2')]"
            in done.stdout), done.stdout


@pytest.mark.slow  # a Jupyter kernel, and two 8-rank runs on the stand-in
def test_the_example_notebook_runs_a_cell_function_on_eight_ranks_and_gets_its_exception_back(tmp_path, monkeypatch):
    import json

    import nbformat
    from nbclient import NotebookClient

    kernel = tmp_path / "jupyter" / "kernels" / "smtrain-venv"
    kernel.mkdir(parents=True)
    (kernel / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "smtrain-venv", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    notebook = nbformat.read(EXAMPLES / "remote_function.ipynb", as_version=4)
    # The kernel's cwd is the test's folder: the runs land there, not in the checkout.
    NotebookClient(notebook, kernel_name="smtrain-venv", timeout=900,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()

    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    [result] = [output for output in code[2].outputs if output.output_type == "execute_result"]
    first = result["data"]["text/plain"]
    assert "CPU stand-in" in _text(code[2], "stderr")  # the run said the GPUs are a stand-in
    assert "'rank': 0" in first and "'world_size': 8" in first and "'device': 'cuda:0'" in first
    assert _text(code[3]).startswith("8 ranks; the same weights on every rank: True")
    failure = _text(code[4])
    assert failure.startswith("ValueError\nrank 3 found a bad shard\nraised on rank 3 (algo-1) of job fails-on-rank-3")
    assert "in fails_on_rank_3" in failure and 'ValueError: rank 3 found a bad shard' in failure
    assert 'raise ValueError("rank 3 found a bad shard")' in failure and "<dynamic-code>" not in failure


@pytest.mark.slow  # a local run
def test_a_cell_function_s_remote_traceback_names_its_cell_its_lines_and_their_code(cell_function):
    cell = "/nonexistent/ipykernel_1/cell-7.py"
    fails = cell_function("""
        def helper(rows):
            return rows / 0

        def fails(rows):
            rows += 1
            return helper(rows)
        """, "fails", cell)

    job = orchestrator.remote(instance_type="ml.c5.xlarge")(fails).run(3, backend="local")

    with pytest.raises(ZeroDivisionError) as error:
        job.result()
    remote = str(error.value.__cause__)
    assert f'File "{cell}", line 7, in fails\n    return helper(rows)' in remote
    assert f'File "{cell}", line 3, in helper\n    return rows / 0' in remote
    assert "<dynamic-code>" not in remote and f"{RUNNER}\", line" in remote  # the runner's frame stays its own


@pytest.mark.slow  # a local run
def test_a_cell_function_s_failure_cause_names_its_exception_and_cell_line_and_the_summary_says_it_once(cell_function):
    """Before, the cause was located at the runner's line (`.../smtrain_remote_runner.py:52`), and the notebook's
    summary showed it twice: in the failure reason and as a `cause` row."""
    cell = "<ipython-input-3-5f1c2e>"
    fails = cell_function("""
        def fails(rows):
            rows += 1
            return rows / 0
        """, "fails", cell)
    job = orchestrator.remote(instance_type="ml.c5.xlarge")(fails).run(3, backend="local")
    job.wait()
    job.progress()  # as a notebook's live summary reads it each poll

    cause = job.failure_cause()
    rows = job.summary().rows

    assert (cause.exception, cause.location) == ("ZeroDivisionError: division by zero", f"{cell}:4")
    assert [key for key, value in rows if cause.headline() in value] == ["failure"]
    assert f"{RUNNER}:" not in job.summary().to_html()


@pytest.mark.slow  # a local run
def test_a_module_function_s_failure_is_located_in_the_user_s_file_not_in_smtrain_s_copy_of_it():
    """Before, the location was the copy in smtrain's cache (`~/.cache/smtrain/remote/<digest>/functions.py:34`),
    and the remote traceback named the job's copy (`/opt/ml/code/functions.py`)."""
    job = orchestrator.remote(instance_type="ml.c5.xlarge")(functions.divide).run(3, backend="local")
    job.wait()

    line = functions.divide.__code__.co_firstlineno + 2
    assert job.failure_cause().location == f"{Path(functions.__file__).resolve()}:{line}"
    with pytest.raises(ZeroDivisionError) as error:
        job.result()
    assert f'File "{Path(functions.__file__).resolve()}", line {line}, in divide' in str(error.value.__cause__)
    assert f'File "/opt/ml/code/{RUNNER}"' in str(error.value.__cause__)  # the runner's frame stays its own


STEPS = "import arith\n\n\ndef step(x):\n    return arith.ratio(x)\n"
ARITH = "def ratio(x):\n    return x / 0\n"


@pytest.mark.slow  # a local run
@pytest.mark.parametrize(("steps_folder", "arith_folder"), [(".", "."), ("libA", "libB")],
                         ids=["one folder", "several folders"])
def test_a_cell_function_s_helper_modules_travel_with_what_they_import_and_a_failure_names_the_user_s_files(
        tmp_path, monkeypatch, cell_function, steps_folder, arith_folder):
    """`steps.py` imports `arith.py` only at its top, which the function's pickle never names: before, arith.py did
    not travel and the job failed with ModuleNotFoundError. Beside the notebook or in folders of their own on its
    sys.path (`libA/`, `libB/`), a failure in a helper was located in smtrain's cached copy
    (`~/.cache/smtrain/remote/<digest>/arith.py:2`), its remote traceback in the job's (`/opt/ml/code/arith.py`)."""
    for folder, name, source in ((steps_folder, "steps.py", STEPS), (arith_folder, "arith.py", ARITH)):
        (tmp_path / folder).mkdir(exist_ok=True)
        (tmp_path / folder / name).write_text(source)
        monkeypatch.syspath_prepend(str(tmp_path / folder))
    try:
        fails = cell_function("""
            import steps

            def fails(x):
                return steps.step(x)
            """, "fails", "<ipython-input-5-0a1b2c>")
        job = orchestrator.remote(instance_type="ml.c5.xlarge")(fails).run(3, backend="local")
        job.wait()
    finally:
        sys.modules.pop("steps", None), sys.modules.pop("arith", None)

    with pytest.raises(ZeroDivisionError) as error:
        job.result()
    remote = str(error.value.__cause__)
    steps, arith = (Path(".", steps_folder, "steps.py"), Path(".", arith_folder, "arith.py"))
    assert f'File "./{steps}", line 5, in step\n    return arith.ratio(x)' in remote
    assert f'File "./{arith}", line 2, in ratio\n    return x / 0' in remote
    assert job.failure_cause().location == f"./{arith}:2"


def test_the_notebook_s_own_modules_travel_with_a_cell_function_and_installed_ones_do_not(tmp_path, monkeypatch):
    """A cell function calling a helper from a file beside the notebook, and taking an instance of a class from a
    package folder there: before, neither travelled and the job failed with ModuleNotFoundError. What those
    modules import at their top from the notebook's folder travels too (`units.metric`, a package's submodule;
    `constants`, imported by a submodule): before, only the modules the pickle names did."""
    (tmp_path / "notebook_helpers.py").write_text("import numpy\nimport units.metric\n\n\ndef scale(x):\n"
                                                  "    return 2 * x\n")
    (tmp_path / "shapes").mkdir()
    (tmp_path / "shapes" / "__init__.py").write_text("")
    (tmp_path / "shapes" / "box.py").write_text("from . import sides\nclass Box:\n    def __init__(self, side):\n"
                                                "        self.side = side\n")
    (tmp_path / "shapes" / "sides.py").write_text("from constants import SIDES\n")
    (tmp_path / "units").mkdir()
    (tmp_path / "units" / "__init__.py").write_text("")
    (tmp_path / "units" / "metric.py").write_text("import os\n")
    (tmp_path / "constants.py").write_text("SIDES = 4\n")
    (tmp_path / "unused.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        import notebook_helpers
        import numpy as np
        from shapes.box import Box

        def cell_function(box):
            return notebook_helpers.scale(box.side) + float(np.ones(1)[0])

        plan = orchestrator.remote(instance_type="ml.c5.xlarge", **CLOUD)(cell_function).plan(Box(3))
    finally:
        for name in ("notebook_helpers", "shapes.box", "shapes.sides", "shapes", "units.metric", "units",
                     "constants"):
            sys.modules.pop(name, None)

    assert {"notebook_helpers.py", "shapes/__init__.py", "shapes/box.py", "shapes/sides.py",
            "units/__init__.py", "units/metric.py", "constants.py"} <= set(plan.source.files)
    assert not [name for name in plan.source.files if "numpy" in name or "pytest" in name or "os.py" in name]
    assert "unused.py" not in plan.source.files


def test_a_package_function_s_files_are_shown_from_the_folder_that_holds_the_package(tmp_path, monkeypatch):
    package = tmp_path / "project" / "mypkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "steps.py").write_text("def step(x):\n    return x\n")
    monkeypatch.syspath_prepend(str(tmp_path / "project"))
    try:
        import mypkg.steps

        plan = orchestrator.remote(instance_type="ml.c5.xlarge", framework_version="2.10.0", **CLOUD)(
            mypkg.steps.step).plan(1)
    finally:
        sys.modules.pop("mypkg.steps", None), sys.modules.pop("mypkg", None)

    assert plan.source_shown == tmp_path / "project"
    assert "mypkg/steps.py" in plan.source.files


def _text(cell, name: str = "stdout") -> str:
    return "".join(output.get("text", "") for output in cell.outputs
                   if output.output_type == "stream" and output.get("name") == name)


def test_a_spec_file_is_the_start_and_the_keywords_override_it(tmp_path):
    spec = tmp_path / "job.yaml"
    spec.write_text("name: from-spec\nentry_point: unused.py\nframework_version: \"2.10.0\"\n"
                    "instance: {type: ml.c5.2xlarge, count: 3}\nmax_run_seconds: 600\n"
                    "role: arn:aws:iam::123456789012:role/SageMakerExecution\nregion: us-east-1\n"
                    "output_path: s3://my-bucket/outputs/\n")
    (tmp_path / "unused.py").write_text("")

    plan = orchestrator.remote(spec=str(spec), instance_count=2, requirements=["einops==0.8.1"])(
        functions.where_am_i).plan("x")

    request = plan.create_training_job_request
    assert request["ResourceConfig"]["InstanceType"] == "ml.c5.2xlarge"
    assert request["ResourceConfig"]["InstanceCount"] == 2
    assert request["StoppingCondition"]["MaxRuntimeInSeconds"] == 600
    assert request["HyperParameters"]["sagemaker_program"] == f'"{RUNNER}"'
    with tarfile.open(plan.source.tarball) as archive:
        requirements = archive.extractfile("requirements.txt").read().decode().splitlines()
    assert requirements[0].startswith("cloudpickle==") and requirements[1] == "einops==0.8.1"


def test_a_missing_region_role_and_output_path_are_fixed_by_the_decorator_s_keywords_as_it_has_no_spec():
    square = orchestrator.remote(instance_type="ml.c5.xlarge", framework_version="2.10.0")(functions.where_am_i)

    fixes = {finding.field: finding.fix for finding in square.plan("x").findings}
    with pytest.raises(EnvironmentProblem) as refused:
        square.run("x", backend="sagemaker")

    assert fixes["region"].startswith("pass `region=` to @orchestrator.remote(...)")
    assert fixes["role"].startswith("pass `role='arn:aws:iam::<account>:role/<name>'` to @orchestrator.remote(")
    assert fixes["output_path"].startswith("pass `output_path='s3://<bucket>/<prefix>/'` to @orchestrator.remote(")
    assert "(1) pass `region=` to @orchestrator.remote(...)" in refused.value.fix
    assert "in the spec" not in refused.value.fix and "spec has no" not in refused.value.message


def test_a_bad_value_is_reported_as_a_spec_problem_naming_the_field():
    with pytest.raises(SpecError) as error:
        orchestrator.remote(instance_type="ml.c5.xlarge", instance_count=0, **CLOUD)(functions.where_am_i).plan()
    assert "instance.count" in str(error.value)


def test_a_folder_without_init_that_the_function_imports_travels_and_one_named_only_as_an_attribute_does_not(
        tmp_path, monkeypatch, cell_function):
    """`mylib/` holds no __init__.py (a namespace package, as a notebook's folder of helpers often is), imported
    only in the function's body, and `mylib/helpers.py` imports `tools/` (no __init__.py either) at its top: before,
    neither travelled and the job failed with ModuleNotFoundError: No module named 'mylib'. A `data/` folder
    beside them is no module the function imports (`config.data` is an attribute) and stays here."""
    (tmp_path / "mylib").mkdir()
    (tmp_path / "mylib" / "helpers.py").write_text("from tools.scale import double\n\n\ndef f(x):\n"
                                                    "    return double(x)\n")
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "scale.py").write_text("def double(x):\n    return 2 * x\n")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "rows.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))  # a notebook's folder is on its sys.path
    uses = cell_function("""
        def uses(config):
            from mylib.helpers import f
            return f(config.data)
        """, "uses", "<ipython-input-2-ab12cd>")

    plan = orchestrator.remote(instance_type="ml.c5.xlarge", **CLOUD)(uses).plan(None)

    assert {"mylib/helpers.py", "tools/scale.py"} <= set(plan.source.files)
    assert "data/rows.py" not in plan.source.files


def test_a_generator_or_async_function_is_refused_before_its_job_starts_and_still_runs_here(tmp_path):
    """Before, the job ran on every rank without running the function's body (a call of either returns a generator
    or a coroutine), then failed: `rank 0 returned a generator that cannot be pickled`."""
    def batches(n):
        yield from range(n)

    async def fetch(n):
        return n

    class Streams:
        def __call__(self, n):
            yield n

    refused = {}
    for label, function in (("generator", batches), ("async", fetch), ("partial", functools.partial(batches, 2)),
                            ("callable object", Streams())):
        with pytest.raises(SpecError) as error:
            orchestrator.remote(instance_type="ml.c5.xlarge")(function).run(2, backend="local")
        refused[label] = error.value

    here = "test_a_generator_or_async_function_is_refused_before_its_job_starts_and_still_runs_here.<locals>"
    assert refused["generator"].message.startswith(f"{here}.batches is a generator function (it yields): called "
                                                   "in the job it would return a generator, never run its body")
    assert "`return list(...)`" in refused["generator"].fix
    assert refused["async"].message.startswith(f"{here}.fetch is an async function: called in the job it would "
                                               "return a coroutine")
    assert refused["async"].fix.endswith(f"return asyncio.run({here}.fetch(...))`")
    assert refused["partial"].message.startswith(f"{here}.batches is a generator function")
    assert refused["callable object"].message.startswith(f"{here}.Streams is a generator function")
    assert list(orchestrator.remote(instance_type="ml.c5.xlarge")(batches)(3)) == [0, 1, 2]
    assert not (tmp_path / "cache" / "remote").exists() and not (tmp_path / "runs").exists()


@pytest.mark.slow  # a local run
def test_a_function_ending_with_sys_exit_0_succeeds_and_another_exit_status_fails_its_job():
    """Before, `sys.exit(0)` at the end of code brought from a training script failed the job (`algo-1 (rank 0)
    failed: SystemExit: 0`) and job.result() raised SystemExit(0) in the notebook, which ends a plain script; and
    `sys.exit(3)` still raised SystemExit(3) there: the kernel or the waiting script ended without a traceback."""
    def trains(status):
        print("trained")
        sys.exit(status)

    job = orchestrator.remote(instance_type="ml.c5.xlarge")(trains)
    succeeded, failed = job.run(0, backend="local"), job.run(3, backend="local")

    assert succeeded.result() is None and succeeded.wait().status == "Completed"
    with pytest.raises(JobFailed) as exited:
        failed.result()
    assert exited.value.message == (f"job {failed.name} failed: its function exited with status 3 on rank 0 "
                                    f"(algo-1) at {__file__}:{trains.__code__.co_firstlineno + 2}")
    assert "raise an exception" in exited.value.fix and "failure_cause()" in exited.value.fix
    assert "sys.exit(status)" in str(exited.value.__cause__) and "SystemExit: 3" in str(exited.value.__cause__)
    assert failed.wait().status == "Failed" and failed.failure_cause().exception == "SystemExit: 3"


@pytest.mark.parametrize(("ended", "said"), [
    (SystemExit("no data in /opt/ml/input"), "exited with status 1 (sys.exit('no data in /opt/ml/input'))"),
    (SystemExit(True), "exited with status 1"),
    (KeyboardInterrupt(), "ended with KeyboardInterrupt"),
])
def test_a_rank_that_exited_or_was_interrupted_is_a_job_failure_not_the_caller_s_own_end(tmp_path, monkeypatch,
                                                                                        ended, said):
    monkeypatch.setenv("SM_OUTPUT_DATA_DIR", str(tmp_path / "output"))
    runner._keep(0, {"rank": 0, "host": "algo-1", "value": 1})
    runner._keep(1, {"rank": 1, "host": "algo-2", "error": ended,
                     "traceback": f'  File "<cell-4>", line 7, in train\n{type(ended).__name__}\n'})
    files = {file.name: file.read_bytes() for file in (tmp_path / "output" / RESULTS_FOLDER).iterdir()}

    error = first_error(outcomes(files), None, "cell-job", SourcePaths())

    assert type(error) is JobFailed
    assert error.message == f"job cell-job failed: its function {said} on rank 1 (algo-2) at <cell-4>:7"
    assert 'line 7, in train' in str(error.__cause__)


def test_a_function_taking_its_own_backend_argument_is_told_run_keeps_that_keyword_and_how_to_give_it(tmp_path):
    """Before, `train.run(0.1, backend="gloo")` for `def train(lr, *, backend="nccl")` said only `backend 'gloo' is
    not one of local, sagemaker`, as if the user had mistyped a place to run."""
    def train(lr, *, backend="nccl"):
        return backend

    job = orchestrator.remote(instance_type="ml.c5.xlarge")(train)
    with pytest.raises(SpecError) as error:
        job.run(0.1, backend="gloo")

    assert error.value.message.startswith("train takes an argument `backend`, but run(backend=...) says where the "
                                          "job runs (local, sagemaker): 'gloo' would never reach the function")
    assert "functools.partial(train, backend='gloo')" in error.value.fix and "dist_backend" in error.value.fix
    assert not (tmp_path / "runs").exists()
