"""The notebook API's `region=` (what `--set region=X` does on the command line: the job goes there, whatever the
session's region) and `submit_tuning`'s source limit, against moto's server."""

from __future__ import annotations

import json
import os

import boto3
import pytest
from click.testing import CliRunner

import orchestrator
from orchestrator.cli.main import main
from orchestrator.errors import SpecError
from orchestrator.planning.plan_view import sources_lines
from job_fakes import write_spec_file
from tuning_specs import TINY_SEARCH

ELSEWHERE = "eu-west-1"
"""Not the session's region: the `aws` fixture sets AWS_REGION and AWS_DEFAULT_REGION to us-east-1."""
EU_BUCKET = "smtrain-test-eu"


@pytest.fixture
def eu_spec(write_spec, aws):
    """A job spec naming no region, writing to a bucket in eu-west-1 (SageMaker writes only to its own region's)."""
    boto3.client("s3", region_name=ELSEWHERE).create_bucket(
        Bucket=EU_BUCKET, CreateBucketConfiguration={"LocationConstraint": ELSEWHERE})
    return write_spec(output_path=f"s3://{EU_BUCKET}/outputs/", inputs={"train": f"s3://{EU_BUCKET}/data/"})


def _training_jobs(region: str) -> list[str]:
    listed = boto3.client("sagemaker", region_name=region).list_training_jobs()["TrainingJobSummaries"]
    return [job["TrainingJobName"] for job in listed]


@pytest.mark.parametrize("send", [
    lambda spec: orchestrator.submit(spec, region=ELSEWHERE),
    lambda spec: orchestrator.run(spec, backend="sagemaker", region=ELSEWHERE),
    lambda spec: orchestrator.submit(orchestrator.plan(spec), region=ELSEWHERE),  # a plan for us-east-1, again
], ids=["submit", "run", "submit-a-plan-for-the-session-s-region"])
def test_a_job_goes_to_the_region_named_not_the_session_s(eu_spec, send):
    """Before, plan, submit and run had no `region=`: a notebook whose job must run in another region than its
    session's could not say so (the CLI says `--set region=X`)."""
    job = send(eu_spec)

    assert job.plan.target.region == ELSEWHERE
    assert _training_jobs(ELSEWHERE) == [job.name] and _training_jobs("us-east-1") == []


def test_region_outranks_the_spec_s_own_as_set_does(write_spec):
    """The precedence of `smtrain plan --set region=X`: the keyword replaces the spec's `region:`, and the plan
    names the keyword as the region's origin."""
    planned = orchestrator.plan(write_spec(region="us-west-2"), region=ELSEWHERE)

    assert planned.target.region == ELSEWHERE and planned.spec.region == ELSEWHERE
    assert f".{ELSEWHERE}.amazonaws.com/" in planned.create_training_job_request["AlgorithmSpecification"][
        "TrainingImage"]
    # named as the call gave it (before: `--set region=eu-west-1`, an option nobody typed)
    assert planned.sources["region"].to_dict() == {"from": "region=", "where": f"region='{ELSEWHERE}'"}
    assert f"from region='{ELSEWHERE}': region" in sources_lines(planned)


def test_run_on_sagemaker_sends_a_spec_naming_its_region_there(write_spec, aws):
    """Before, `run(backend="sagemaker")` opened its session in the environment's region and planned the spec's:
    a spec naming another region was refused with "the boto3 session is for us-east-1 but the plan targets
    eu-west-1", where `submit` and `smtrain submit` sent it."""
    boto3.client("s3", region_name=ELSEWHERE).create_bucket(
        Bucket=EU_BUCKET, CreateBucketConfiguration={"LocationConstraint": ELSEWHERE})

    job = orchestrator.run(write_spec(region=ELSEWHERE, output_path=f"s3://{EU_BUCKET}/outputs/"),
                           backend="sagemaker")

    assert _training_jobs(ELSEWHERE) == [job.name]


def test_a_region_without_images_is_refused_as_the_cli_refuses_it(write_spec, monkeypatch, tmp_path):
    """Before, the API said only "no SageMaker PyTorch training images are published in region 'nowhere-1'" where
    the CLI says `--region nowhere-1: region: ...`: now the API names the keyword the value came from."""
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    spec = write_spec()
    cli = CliRunner().invoke(main, ["plan", str(spec), "--region", "nowhere-1"])

    for call in (lambda: orchestrator.plan(spec, region="nowhere-1"),
                 lambda: orchestrator.plan(orchestrator.load_spec(spec), region="nowhere-1"),
                 lambda: orchestrator.submit(spec, region="nowhere-1"),
                 lambda: orchestrator.run(spec, backend="sagemaker", region="nowhere-1"),
                 lambda: orchestrator.run(spec, region="nowhere-1", run_dir=tmp_path / "run"),
                 lambda: orchestrator.run_local(spec, region="nowhere-1", run_dir=tmp_path / "run"),
                 lambda: orchestrator.plan_tuning(_search(spec), region="nowhere-1")):
        with pytest.raises(SpecError) as raised:
            call()
        assert "region='nowhere-1': region: no SageMaker PyTorch training images are published in region " \
               "'nowhere-1'" in str(raised.value)
        assert cli.exit_code == 2
        assert cli.stderr == f"Error: {raised.value}\n".replace("region='nowhere-1'", "--region nowhere-1")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("region", ["", "  ", 1])
def test_a_region_that_names_none_is_refused_not_taken_for_the_environment_s(write_spec, region):
    with pytest.raises(SpecError, match="is no AWS region's name"):
        orchestrator.plan(write_spec(), region=region)


@pytest.mark.parametrize("call", [
    lambda spec, session: orchestrator.plan(spec, boto=session, region=ELSEWHERE),
    lambda spec, session: orchestrator.submit(spec, boto=session, region=ELSEWHERE),
    lambda spec, session: orchestrator.run(spec, backend="sagemaker", boto=session, region=ELSEWHERE),
    lambda spec, session: orchestrator.submit_tuning(_search(spec), boto=session, region=ELSEWHERE),
    lambda spec, session: orchestrator.attach("sagemaker:mlp-1", boto=session, region=ELSEWHERE),
    lambda spec, session: orchestrator.Tuning.attach("sagemaker:search-1", boto=session, region=ELSEWHERE),
], ids=["plan", "submit", "run", "submit_tuning", "attach", "Tuning.attach"])
def test_a_session_for_another_region_than_region_is_refused_before_anything_is_read(eu_spec, calls, call):
    """Before, `region=` and `boto=` for two regions were each used somewhere: plan made a plan for eu-west-1
    after reading the session's us-east-1 for a stack, submit refused only once that plan was made, and attach
    looked for the job in us-east-1 and said "no training job ... in us-east-1" to a user who had named
    eu-west-1. Now neither wins silently: the user is told both regions and how to name one."""
    session, sent = calls

    with pytest.raises(SpecError) as raised:
        call(eu_spec, session)

    assert "the boto3 session given as boto= is for us-east-1, but region= names eu-west-1" in raised.value.message
    assert 'boto=boto3.Session(region_name="eu-west-1")' in raised.value.fix
    assert "leave out region= to work in us-east-1" in raised.value.fix
    assert sent == [] and _training_jobs(ELSEWHERE) == _training_jobs("us-east-1") == []


def test_a_session_for_another_region_than_the_spec_s_is_refused_when_planned(write_spec, calls):
    """Before, the plan went to the spec's region while the infra stack was read with the session in its own:
    only the submit said the two disagreed. Now the plan says so, naming the spec's field."""
    session, sent = calls
    spec = write_spec(region=ELSEWHERE)

    with pytest.raises(SpecError, match="is for us-east-1, but the spec's `region:` names eu-west-1"):
        orchestrator.plan(spec, boto=session)
    assert sent == []
    assert orchestrator.plan(spec, boto=session, region="us-east-1").target.region == "us-east-1"


@pytest.mark.parametrize("start", [
    lambda spec, run_dir: orchestrator.run(spec, region=ELSEWHERE, run_dir=run_dir).wait(),
    lambda spec, run_dir: orchestrator.run_local(spec, region=ELSEWHERE, run_dir=run_dir),
], ids=["run", "run_local"])
def test_a_local_run_sees_the_region_named_as_smtrain_local_region_gives_it(tmp_path, start):
    """Before, `run(spec, backend="local", region=X)` was refused ("region= says where a SageMaker job goes, not a
    local run") and `run_local` took no region, while `smtrain local --region X` ran the job in X: its image and
    its ranks' AWS_REGION and SAGEMAKER_REGION, as the spec's `region:` gives them."""
    spec = write_spec_file(tmp_path, region="us-west-2", inputs={}, instance={"type": "ml.c5.2xlarge", "count": 1})
    (tmp_path / "src" / "train.py").write_text(
        "import os\nprint('region', os.environ['AWS_REGION'], os.environ['SAGEMAKER_REGION'])\n")

    ended = start(spec, tmp_path / "run")

    assert ended.status == "Completed"
    lines = (tmp_path / "run" / "logs" / "algo-1.log").read_text().splitlines()
    assert f"region {ELSEWHERE} {ELSEWHERE}" in lines


@pytest.mark.parametrize("start", [
    lambda job_plan, run_dir: orchestrator.run(job_plan, region=ELSEWHERE, run_dir=run_dir).wait().name,
    lambda job_plan, run_dir: orchestrator.run_local(job_plan, region=ELSEWHERE, run_dir=run_dir).job_name,
], ids=["run", "run_local"])
def test_a_plan_run_here_in_another_region_keeps_its_job_name_as_submit_keeps_it(tmp_path, start):
    """Before, a Plan given to a local run with `region=` was planned again under a new timestamped name, while
    `submit(plan, region=...)` (and `plan(plan, region=...)`) keep the plan's: one plan, two names."""
    spec = write_spec_file(tmp_path, region="us-west-2", inputs={}, instance={"type": "ml.c5.2xlarge", "count": 1})
    job_plan = orchestrator.plan(spec, job_name="kept-name-1")
    assert orchestrator.plan(job_plan, region=ELSEWHERE).job_name == "kept-name-1"

    assert start(job_plan, tmp_path / "run") == "kept-name-1"
    assert json.loads((tmp_path / "run" / "status.json").read_text())["TrainingJobName"] == "kept-name-1"


def test_a_local_run_s_region_is_refused_as_the_api_s_other_region_keywords_refuse_it(write_spec):
    with pytest.raises(SpecError, match="region '' is no AWS region's name"):
        orchestrator.run(write_spec(), region="")


def _search(job_spec) -> str:
    path = job_spec.parent / "search.yaml"
    path.write_text(TINY_SEARCH.replace("tiny.yaml", job_spec.name))
    return str(path)


def test_a_tuning_job_goes_to_the_region_named(eu_spec):
    tuning = orchestrator.submit_tuning(_search(eu_spec), region=ELSEWHERE)

    assert tuning.plan.job.target.region == ELSEWHERE
    listed = boto3.client("sagemaker", region_name=ELSEWHERE).list_hyper_parameter_tuning_jobs()
    assert [item["HyperParameterTuningJobName"] for item in listed["HyperParameterTuningJobSummaries"]] == [tuning.name]
    assert boto3.client("sagemaker").list_hyper_parameter_tuning_jobs()["HyperParameterTuningJobSummaries"] == []


def test_a_tuning_plan_for_another_region_is_refused_not_sent_elsewhere(write_spec, monkeypatch):
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    tuning_plan = orchestrator.plan_tuning(_search(write_spec()))

    with pytest.raises(SpecError, match=f"this tuning plan goes to us-east-1, not {ELSEWHERE}"):
        orchestrator.submit_tuning(tuning_plan, region=ELSEWHERE)


def test_submit_tuning_refuses_a_source_over_its_limit_as_tune_submit_does(write_spec, tmp_path, monkeypatch):
    """Before, `submit_tuning` had no `max_source_bytes` (`plan_tuning` and `tune submit --max-source-mb` have
    it): a source over the default 100 MB could not be tuned from a notebook without planning first."""
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    search = _search(write_spec())
    (tmp_path / "src" / "weights.bin").write_bytes(os.urandom(300_000))  # random: it does not compress
    cli = CliRunner().invoke(main, ["tune", "submit", search, "--max-source-mb", "0.1"])

    with pytest.raises(SpecError) as raised:
        orchestrator.submit_tuning(search, max_source_bytes=100_000)

    _same_but_for_the_option(cli, raised.value)
    assert "packs to more than the 100.0 kB limit" in str(raised.value)


def test_submit_refuses_a_source_over_its_limit_as_smtrain_submit_does(write_spec, tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    spec = write_spec()
    (tmp_path / "src" / "weights.bin").write_bytes(os.urandom(300_000))
    cli = CliRunner().invoke(main, ["submit", str(spec), "--max-source-mb", "0.1"])

    with pytest.raises(SpecError) as raised:
        orchestrator.submit(spec, max_source_bytes=100_000)

    _same_but_for_the_option(cli, raised.value)


def _same_but_for_the_option(cli, raised: SpecError) -> None:
    """The API's error is the CLI's, naming the keyword where the CLI names its option (before, a notebook was
    told to raise the limit with --max-source-mb)."""
    assert cli.exit_code == 2 and "--max-source-mb" in cli.stderr
    assert "--max-source-mb" not in str(raised) + (raised.fix or "") and "max_source_bytes=" in raised.fix
    api_said = f"Error: {raised}\n".replace("max_source_bytes=", "--max-source-mb")
    assert cli.stderr == api_said
