"""The notebook API (`orchestrator/api.py`): what it takes, and a plan made for one place sent to the other (against
moto's server)."""

from __future__ import annotations

import boto3
import pytest

import orchestrator
from orchestrator.emulator.local_plan import local_plan
from orchestrator.emulator.run_options import Options
from orchestrator.errors import EnvironmentProblem, SmtrainError, SpecError, naming_keywords
from orchestrator.observing.job_status import JobNotFound
from job_fakes import BASE_SPEC, SECRET
from orchestrator.specs.loader import InvalidSpec, load


def test_submit_plans_a_local_runs_plan_again_for_sagemaker(write_spec, bucket, tmp_path):
    local = local_plan(load(write_spec()), Options(run_dir=tmp_path / "run"))
    assert local.target.output_path.startswith("file://")

    job = orchestrator.submit(local)

    assert job.name == local.job_name and job.plan.target.output_path == f"s3://{bucket}/outputs/"
    created = boto3.client("sagemaker").describe_training_job(TrainingJobName=local.job_name)
    assert created["OutputDataConfig"]["S3OutputPath"] == f"s3://{bucket}/outputs/"
    assert job.submission.source_uploaded


@pytest.mark.parametrize(("given", "kind"), [(123, "an int"), (None, "None"), (["tiny"], "a list")])
def test_run_and_plan_of_no_spec_say_which_kinds_they_take(given, kind):
    for call in (lambda: orchestrator.run(given), lambda: orchestrator.plan(given)):
        with pytest.raises(SpecError, match=f"a spec file's path, a spec as a dict, what load_spec returned, a "
                                            f"JobSpec or a Plan, not {kind}"):
            call()


def test_a_spec_given_as_a_dict_is_planned_as_its_file_would_be(write_spec, tmp_path, monkeypatch):
    """A notebook's spec as a dict was refused ("pass a spec file's path"), and `JobSpec(**spec)` raised pydantic's
    own errors, without the field's fix; it is now checked as a file is, relative paths against the working
    directory, as `@orchestrator.remote(spec=...)` takes one."""
    written = write_spec(region="us-east-1")
    monkeypatch.chdir(tmp_path)

    planned = orchestrator.plan(BASE_SPEC | {"region": "us-east-1"}, job_name="tiny-1")

    from_file = orchestrator.plan(written, job_name="tiny-1")
    assert planned.create_training_job_request == from_file.create_training_job_request
    with pytest.raises(InvalidSpec) as raised:
        orchestrator.run(BASE_SPEC | {"instnce": {"type": "ml.c5.2xlarge"}, "max_run_seconds": "an hour"})
    assert {problem.field: problem.fix for problem in raised.value.problems} == {
        "instnce": "did you mean `instance`?",
        "max_run_seconds": "write a whole number without quotes, e.g. max_run_seconds: 2"}
    assert SECRET not in str(raised.value)


def _holding_itself() -> list:
    endless: list = []
    endless.append(endless)
    return endless


def _shared_many_times_over() -> list:
    shared: list = ["lol"] * 9
    for _ in range(5):
        shared = [shared] * 9  # 9**6 values, as YAML's "billion laughs" makes with aliases (small, to stay cheap)
    return shared


@pytest.mark.parametrize(("hyperparameters", "field", "message"), [
    ({"lr": _holding_itself()}, "hyperparameters.lr.0.0", "nested more than 32 levels deep"),
    ({"lr": _shared_many_times_over()}, "hyperparameters.lr.", "more than 10000 values"),
    ({"seed": 10 ** 5000}, "hyperparameters.seed", "a number of more than 4300 digits"),
    ({"tag": "caf\udce9"}, "hyperparameters.tag", "holds a lone surrogate"),
    ({"caf\udce9": 1}, "hyperparameters.caf\\udce9", "holds a lone surrogate"),
], ids=["list-holding-itself", "shared-list-bomb", "huge-int", "surrogate-value", "surrogate-name"])
def test_a_dict_spec_is_held_to_a_files_bounds(hyperparameters, field, message):
    """A RecursionError, a ValueError of int's digit limit, or a spec planned with text no request can carry
    (`os.fsdecode` of a file name that is not UTF-8 gives such a surrogate) was what a notebook got."""
    with pytest.raises(InvalidSpec) as raised:
        orchestrator.plan(BASE_SPEC | {"region": "us-east-1", "hyperparameters": hyperparameters})
    [problem] = raised.value.problems
    assert problem.field.startswith(field) and message in problem.message, problem
    str(raised.value).encode()  # printable as it is


@pytest.mark.parametrize(("spec", "field", "message", "fix"), [
    ({"hyperparameters": {1: 2}}, "hyperparameters.1", "the key 1 is an int, not text", 'write the key as text: "1"'),
    ({"hyperparameters": {("a", "b"): 2}}, "hyperparameters.('a', 'b')", "a key is a tuple, not text",
     'give each key as a str, e.g. "lr"'),
    ({"environment": {None: "x"}}, "environment.None", "a key is None, not text", 'give each key as a str, e.g. "lr"'),
    ({"hyperparameters": {"lr": float("nan")}}, "hyperparameters.lr", "nan is no number a job is meant to get",
     "give the number meant; a NaN or infinity comes from a computation that failed"),
    ({"hyperparameters": {"clip": float("-inf")}}, "hyperparameters.clip", "-inf is no number a job is meant to get",
     "give the number meant; a NaN or infinity comes from a computation that failed"),
], ids=["int-key", "tuple-key", "none-key", "nan", "minus-infinity"])
def test_a_dict_spec_refuses_keys_that_are_no_text_and_values_that_are_no_number(spec, field, message, fix):
    """`{1: 2}` was planned as the hyperparameter "1" and a NaN learning rate as the text "nan", unsaid."""
    with pytest.raises(InvalidSpec) as raised:
        orchestrator.plan(BASE_SPEC | {"region": "us-east-1"} | spec)
    [problem] = raised.value.problems
    assert (problem.field, problem.fix) == (field, fix) and problem.message.startswith(message), problem


def test_submitting_an_attached_jobs_plan_says_attach_gives_none(write_spec, bucket):
    """docs/sagemaker.md once showed `submit(job.plan)` of an attached job, whose plan is None: the error said
    only `not NoneType None`; it now says where the None came from."""
    attached = orchestrator.attach(orchestrator.submit(write_spec()).full_id)

    assert attached.plan is None
    with pytest.raises(SpecError) as raised:
        orchestrator.submit(attached.plan)
    assert "a Job that attach found has no plan: its `plan` is None" in raised.value.fix


def test_job_attach_takes_a_backend_as_attach_does(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    with pytest.raises(SmtrainError, match="local:nope names the local backend, but backend= says sagemaker"):
        orchestrator.Job.attach("local:nope", backend="sagemaker")
    with pytest.raises(JobNotFound, match="nope is no local run"):
        orchestrator.Job.attach("nope", backend="local")


def test_the_api_s_errors_name_its_keywords_where_the_cli_s_name_its_options(tmp_path, monkeypatch):
    """Before, a notebook was told `(--region or AWS_REGION)` and `pass --backend local`: options it cannot pass."""
    monkeypatch.chdir(tmp_path)

    with pytest.raises(EnvironmentProblem) as no_region:
        orchestrator.attach("sagemaker:nope")
    with pytest.raises(SmtrainError) as no_such_backend:
        orchestrator.Job.attach("nope", backend="cloud")

    assert no_region.value.fix.startswith("set AWS_REGION (or pass region=), `region:` in the spec")
    assert no_such_backend.value.fix == 'pass backend="local" or backend="sagemaker"'
    assert "--" not in str(no_region.value) + str(no_such_backend.value)


def test_an_option_the_api_function_does_not_take_and_a_command_in_backticks_keep_the_cli_s_words():
    @naming_keywords
    def attach(job, *, region=None):
        raise SmtrainError("no job --job-name", fix="run `aws s3 mb s3://b --region x`, or pass --region")

    with pytest.raises(SmtrainError) as raised:
        attach("x")

    assert str(raised.value) == "no job --job-name\n  To fix: run `aws s3 mb s3://b --region x`, or pass region="


def test_a_notebook_catches_smtrain_s_errors_by_the_classes_orchestrator_exports(write_spec, tmp_path, monkeypatch):
    """Before, the errors a notebook is shown (`SpecError: ...`, `JobNotFound: ...`) could be caught only by
    importing from orchestrator.errors and orchestrator.observing.job_status, which no page named; now
    `except orchestrator.SmtrainError` (or one of its kinds) catches them, as docs/sagemaker.md says."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AWS_REGION", "us-east-1")

    with pytest.raises(orchestrator.SpecError) as misspelled:
        orchestrator.plan({**BASE_SPEC, "instnce": {"type": "ml.c5.2xlarge"}})
    with pytest.raises(orchestrator.JobNotFound):
        orchestrator.attach("local:nope")
    with pytest.raises(orchestrator.EnvironmentProblem):
        orchestrator.attach("sagemaker:nope", region="us-east-1")  # no credentials in the tests' environment

    assert isinstance(misspelled.value, orchestrator.SmtrainError)
    assert "instnce: Extra inputs are not permitted\n    fix: did you mean `instance`?" in str(misspelled.value)
    for kind in ("CapabilityError", "AwsError", "JobFailed", "JobNotFound", "EnvironmentProblem", "SpecError"):
        assert issubclass(getattr(orchestrator, kind), orchestrator.SmtrainError)
