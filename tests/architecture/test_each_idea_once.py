"""Each idea once: one cost formula for the plan's worst case and a job's cost so far; one S3-URI type; one
mode table (which modes run SageMaker's SMDDP library among it); one reader of AWS error responses."""

from __future__ import annotations

from orchestrator.observing.progress import cost_so_far
from orchestrator.planning.plan import worst_case_cost
from orchestrator.planning.target import S3Uri, bucket_of
from orchestrator.specs.catalog import catalog, lookup, on_demand_cost
from orchestrator.specs.model import JobSpec


def test_the_worst_case_and_the_cost_so_far_are_one_formula_over_one_price():
    spec = JobSpec(name="cost", entry_point="train.py", framework_version="2.10.0",
                   instance={"type": "ml.g5.12xlarge", "count": 3}, max_run_seconds=5400)
    described = {"ResourceConfig": {"InstanceType": "ml.g5.12xlarge", "InstanceCount": 3},
                 "BillableTimeInSeconds": 5400}

    worst, so_far = worst_case_cost(spec, lookup("ml.g5.12xlarge")), cost_so_far(described)

    price = catalog().instances["ml.g5.12xlarge"].price_per_hour
    assert worst.max_total == so_far.total == on_demand_cost(price, 3, 5400) == price * 3 * 1.5
    assert worst.price_source == so_far.price_source == catalog().price_source
    assert on_demand_cost(None, 3, 5400) is None


def test_an_s3_uri_is_taken_apart_in_one_place():
    assert S3Uri.parse("s3://bucket/code/abc/sourcedir.tar.gz") == S3Uri("bucket", "code/abc/sourcedir.tar.gz")
    assert S3Uri.parse("s3://bucket") == S3Uri("bucket", "")
    assert str(S3Uri.parse("s3://bucket/data/train/")) == "s3://bucket/data/train/"
    assert bucket_of("s3://my-bucket/outputs/") == "my-bucket"


def test_which_modes_run_the_smddp_library_is_said_once():
    from orchestrator.specs.modes import Mode

    assert [mode.value for mode in Mode if mode.runs_smddp] == ["pytorchddp", "smddp"]


def test_only_the_translator_takes_an_aws_error_response_apart():
    """ClientError's answer (its Error code and message, its HTTP status) is read in cloud/aws_errors.py only."""
    import re
    from pathlib import Path

    package = Path(__file__).resolve().parents[2] / "orchestrator"
    reading = re.compile(r"\bresponse\b.*[\"'](Error|ResponseMetadata)[\"']")
    readers = sorted(str(path.relative_to(package)) for path in package.rglob("*.py")
                     if reading.search(path.read_text()))
    assert readers == ["cloud/aws_errors.py"]


def test_what_a_mode_means_is_its_row_of_the_mode_table():
    """The request's keys, the SDK's argument, the launcher and processes per host come from specs/modes.py: no
    other module branches on a mode (capabilities' validation rules excepted; the spec's field names its default)."""
    import re
    from pathlib import Path

    from orchestrator.specs.modes import MODES, Mode

    package = Path(__file__).resolve().parents[2] / "orchestrator"
    branching = re.compile(r"(?<!default=)\bMode\.(none|mpi|pytorchddp|torch_distributed|smddp)\b|\bmode\.value\s*[!=]=|"
                           r"\bmode (is|in|not in)\b")
    readers = sorted(str(path.relative_to(package)) for path in package.rglob("*.py")
                     if branching.search(path.read_text()))
    assert readers == ["specs/capabilities.py", "specs/modes.py"]
    assert set(MODES) == set(Mode)


def test_a_job_is_created_once_by_one_loop():
    """Training and tuning jobs both go through cloud/create_once.py: no other module decides what a failed create
    call means (a name clash, a failure worth another attempt)."""
    import re
    from pathlib import Path

    package = Path(__file__).resolve().parents[2] / "orchestrator"
    deciding = re.compile(r"\b(is_name_taken|is_transient)\(")
    deciders = sorted(str(path.relative_to(package)) for path in package.rglob("*.py")
                      if deciding.search(path.read_text()))
    assert deciders == ["cloud/aws_errors.py", "cloud/create_once.py"]
