"""`plan`: the exact CreateTrainingJob request from the real SDK v2 estimator, captured with zero network.

Golden files (tests/golden/<spec>.request.json) hold the request for each example spec. They were reviewed by
hand against sdk-facts.md §3: the distribution hyperparameters are the ones the SDK injects for each mode
(mpi: sagemaker_mpi_*; pytorchddp rewritten to sagemaker_distributed_dataparallel_*; torch_distributed:
sagemaker_torch_distributed_enabled + sagemaker_instance_type; none: no distribution keys). Regenerate with
UPDATE_GOLDEN=1 and review the diff before committing.
"""

from __future__ import annotations

import html
import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from orchestrator.cli.main import main
from orchestrator.errors import CapabilityError
from orchestrator.specs.loader import load
from orchestrator.api import plan

REPO = Path(__file__).resolve().parents[2]
SPECS = sorted((REPO / "job_specs").glob("*.yaml"))
GOLDEN = REPO / "tests" / "golden"
SHA = re.compile(r"[0-9a-f]{64}")


@pytest.fixture(autouse=True)
def _region(monkeypatch):
    monkeypatch.setenv("AWS_REGION", "us-east-1")


def _normalised(request: dict) -> dict:
    """The source tarball's hash changes with every edit of entrypoints/; the rest must not change."""
    return json.loads(SHA.sub("<sha256>", json.dumps(request)))


@pytest.mark.parametrize("spec_file", SPECS, ids=[path.stem for path in SPECS])
def test_plan_request_matches_golden_file(spec_file):
    request = _normalised(plan(load(spec_file), job_name="golden-job").create_training_job_request)
    golden = GOLDEN / f"{spec_file.stem}.request.json"
    if os.environ.get("UPDATE_GOLDEN"):
        golden.write_text(json.dumps(request, indent=2, sort_keys=True) + "\n")
    assert request == json.loads(golden.read_text())


@pytest.mark.parametrize(("spec_file", "injected"), [
    ("mpi-demo-mpi-3x-c5.2xlarge.yaml", {"sagemaker_mpi_enabled": "true",
                                        "sagemaker_mpi_num_of_processes_per_host": "2",
                                        "sagemaker_mpi_custom_mpi_options": '"-x NCCL_DEBUG=WARN"'}),
    ("mlp-ddp-pytorchddp-1x-g5.12xlarge.yaml", {"sagemaker_distributed_dataparallel_enabled": "true",
                                               "sagemaker_instance_type": '"ml.g5.12xlarge"',
                                               "sagemaker_distributed_dataparallel_custom_mpi_options": '""'}),
    ("mlp-ddp-smddp-2x-p4d.24xlarge.yaml", {"sagemaker_distributed_dataparallel_enabled": "true",
                                           "sagemaker_instance_type": '"ml.p4d.24xlarge"',
                                           "sagemaker_distributed_dataparallel_custom_mpi_options": '"-verbose"'}),
    ("mlp-ddp-torch_distributed-2x-g5.12xlarge.yaml", {"sagemaker_torch_distributed_enabled": "true",
                                                      "sagemaker_instance_type": '"ml.g5.12xlarge"'}),
    ("mlp-gloo-none-2x-c5.2xlarge.yaml", {}),
])
def test_plan_carries_the_distribution_hyperparameters_the_sdk_injects(spec_file, injected):
    hyperparameters = plan(load(REPO / "job_specs" / spec_file)).create_training_job_request["HyperParameters"]
    sdk_keys = {key: value for key, value in hyperparameters.items()
                if key.startswith("sagemaker_") and key not in _BASE_KEYS}
    assert sdk_keys == injected
    assert "sagemaker_pytorch_ddp_enabled" not in hyperparameters


_BASE_KEYS = {"sagemaker_submit_directory", "sagemaker_program", "sagemaker_container_log_level",
              "sagemaker_job_name", "sagemaker_region"}


def test_plan_request_uses_the_content_addressed_source_and_spot_settings():
    job = plan(load(REPO / "job_specs" / "mlp-ddp-smddp-2x-p4d.24xlarge.yaml"), job_name="x")
    request = job.create_training_job_request
    assert request["HyperParameters"]["sagemaker_submit_directory"] == json.dumps(job.source_uri)
    assert job.source_uri == f"s3://my-bucket/code/{job.source.sha256}/sourcedir.tar.gz"
    assert request["EnableManagedSpotTraining"] is True
    assert request["StoppingCondition"] == {"MaxRuntimeInSeconds": 7200, "MaxWaitTimeInSeconds": 14400}
    assert request["AlgorithmSpecification"]["TrainingImage"].endswith("pytorch-training:2.2.0-gpu-py310")


def test_plan_cost_is_price_times_count_times_max_run():
    job = plan(load(REPO / "job_specs" / "mlp-gloo-none-2x-c5.2xlarge.yaml"))
    assert job.cost.max_total == pytest.approx(0.408 * 2 * 1.0)
    spot = plan(load(REPO / "job_specs" / "mlp-ddp-smddp-2x-p4d.24xlarge.yaml"))
    assert spot.cost.max_total == pytest.approx(37.688 * 2 * 4.0)
    assert "max_wait" in spot.cost.basis


def test_plan_default_job_name_is_timestamped():
    name = plan(load(REPO / "job_specs" / "mlp-gloo-none-2x-c5.2xlarge.yaml")).job_name
    assert re.fullmatch(r"mlp-gloo-cpu-\d{4}(-\d{2}){5}-\d{3}-[0-9a-z]{4}", name)


def test_plan_refuses_local_inputs(tmp_path):
    (tmp_path / "data").mkdir()
    with pytest.raises(CapabilityError, match="smtrain local"):
        plan(load(REPO / "job_specs" / "mlp-gloo-none-2x-c5.2xlarge.yaml", [f"inputs.train={tmp_path / 'data'}"]))


def test_plan_without_a_role_plans_and_says_where_to_set_one():
    job = plan(load(REPO / "job_specs" / "mlp-gloo-none-2x-c5.2xlarge.yaml", ["role=null"]))

    [needed] = [finding for finding in job.findings if finding.rule == "needed-by-submit"]
    assert needed.field == "role" and needed.severity == "notice" and "SMTRAIN_ROLE" in needed.fix
    assert job.create_training_job_request["RoleArn"] == "<execution role: submit needs one>"


def test_plan_role_from_environment(monkeypatch):
    monkeypatch.setenv("SMTRAIN_ROLE", "arn:aws:iam::111122223333:role/FromEnv")
    job = plan(load(REPO / "job_specs" / "mlp-gloo-none-2x-c5.2xlarge.yaml", ["role=null"]))
    assert job.create_training_job_request["RoleArn"] == "arn:aws:iam::111122223333:role/FromEnv"


def test_plan_masks_secret_environment_values():
    job = plan(load(REPO / "job_specs" / "mlp-gloo-none-2x-c5.2xlarge.yaml",
                    ["environment.WANDB_API_KEY=hunter2"]))
    assert job.create_training_job_request["Environment"]["WANDB_API_KEY"] == "hunter2"
    printed = CliRunner().invoke(main, ["plan", str(REPO / "job_specs" / "mlp-gloo-none-2x-c5.2xlarge.yaml"),
                                        "--set", "environment.WANDB_API_KEY=hunter2"])
    assert printed.exit_code == 0, printed.output
    assert "hunter2" not in printed.output


def test_plan_json_has_the_documented_keys():
    result = CliRunner().invoke(main, ["plan", str(REPO / "job_specs" / "mpi-demo-mpi-3x-c5.2xlarge.yaml"),
                                       "-o", "json", "--job-name", "j"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert {"spec", "ranks", "estimator_kwargs", "create_training_job_request", "cost", "warnings"} <= set(document)
    assert len(document["ranks"]) == 6
    assert document["create_training_job_request"]["TrainingJobName"] == "j"


def test_a_notebook_shows_a_plan_in_one_line_and_as_smtrain_plan_prints_it():
    """A cell ending in a plan showed its dataclass repr: every field of the spec and the request, pages long. The
    notebook's plan names options as the API takes them."""
    spec = str(REPO / "job_specs" / "mlp-ddp-pytorchddp-1x-g5.12xlarge.yaml")
    job_plan = plan(load(spec), job_name="j")
    assert repr(job_plan) == ("Plan('j', mlp-ddp-pytorchddp: mode pytorchddp, 1 x ml.g5.12xlarge, 4 processes per host "
                              "(mpirun (SMDDP)) -> world size 4, region us-east-1, worst-case cost USD 7.09, "
                              "1 unverified, 1 warning, 1 notice)")
    shown = job_plan._repr_html_()
    assert shown.startswith('<pre class="smtrain-plan"><b>plan for j</b>\n')
    assert '<span style="color:#9a6700">warning: ' in shown
    printed = CliRunner().invoke(main, ["plan", spec, "--job-name", "j"]).output.splitlines()
    text = html.unescape(re.sub(r"<[^>]+>", "", shown)).splitlines()
    # the same lines, each fix in its reader's words (the API's keyword, the command line's flag); the last says
    # where the whole request is
    assert any("(or pass --allow-unverified)" in line for line in printed)
    assert text[:-1] == [line.replace("--allow-unverified", "allow_unverified=True") for line in printed[:-1]]
    assert text[-1] == "the full CreateTrainingJob request: plan.to_dict()['create_training_job_request']"


def test_plan_text_fits_a_screen_and_the_full_request_is_behind_a_flag():
    spec = str(REPO / "job_specs" / "mlp-ddp-pytorchddp-1x-g5.12xlarge.yaml")
    result = CliRunner().invoke(main, ["plan", spec])
    assert result.exit_code == 0, result.output
    for expected in ("ranks: world size 4", "algo-1  ranks 0-3", "worst-case cost", "rewritten by the SDK into SMDDP",
                     "USD 7.09", "pytorch-training:2.2.0-gpu-py310", "--full, or --output json"):
        assert expected in result.output
    lines = result.output.splitlines()
    assert len(lines) <= 40 and not [line for line in lines if line != line.rstrip()]
    assert "sagemaker_distributed_dataparallel_enabled" not in result.output

    full = CliRunner().invoke(main, ["plan", spec, "--full"])
    assert full.exit_code == 0, full.output
    for expected in ("CreateTrainingJob request", "sagemaker_distributed_dataparallel_enabled",
                     "estimator arguments (sagemaker.pytorch.PyTorch)"):
        assert expected in full.output
    assert not [line for line in full.output.splitlines() if line != line.rstrip()]


def test_plan_refuses_more_hyperparameters_than_the_api_takes_counting_the_sdk_keys(tmp_path):
    """93 of the user's own pass the spec's limit of 100, but the mode's sagemaker_* keys push the request over."""
    from orchestrator.errors import CapabilityError
    from orchestrator.planning.plan import build_plan
    from orchestrator.planning.target import Target
    from orchestrator.specs.loader import load

    spec_file = tmp_path / "spec.yaml"
    hyperparameters = ", ".join(f"h{index}: {index}" for index in range(96))
    spec_file.write_text(
        "name: many\nentry_point: train.py\nframework_version: \"2.10.0\"\n"
        "instance: {type: ml.g5.12xlarge, count: 2}\ndistribution: {mode: torch_distributed}\n"
        f"hyperparameters: {{{hyperparameters}}}\n")
    (tmp_path / "train.py").write_text("print('hi')\n")
    target = Target(region="us-east-1", role="arn:aws:iam::123456789012:role/R", output_path="s3://b/o",
                    code_location="s3://b/code")
    with pytest.raises(CapabilityError, match="96 of yours plus 7 sagemaker_\\* keys the mode needs make 103"):
        build_plan(load(spec_file), target)


def test_plan_names_what_it_left_out_as_secrets(tmp_path):
    """A package directory named credentials/ is never shipped; the plan says so, so a job that imports it is not a
    surprise on SageMaker."""
    from orchestrator.planning.plan import build_plan
    from orchestrator.planning.target import Target
    from orchestrator.specs.loader import load

    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text("name: pkg\nentry_point: train.py\nframework_version: \"2.10.0\"\n"
                         "instance: {type: ml.c5.2xlarge, count: 1}\n")
    (tmp_path / "train.py").write_text("import credentials\n")
    (tmp_path / "credentials").mkdir()
    (tmp_path / "credentials" / "__init__.py").write_text("")
    (tmp_path / ".env.example").write_text("TOKEN=\n")
    target = Target(region="us-east-1", role="arn:aws:iam::123456789012:role/R", output_path="s3://b/o",
                    code_location="s3://b/code")
    plan = build_plan(load(spec_file), target)
    assert plan.source.files == ("spec.yaml", "train.py")
    [finding] = [finding for finding in plan.findings if finding.field == "source_dir"]
    assert (finding.severity, finding.message) == (
        "notice", "left out of the source package, as credentials or keys are: .env.example, credentials/")
    assert "rename a file the job needs" in finding.fix


def test_plan_counts_a_source_dir_of_one_file_as_1_file(tmp_path):
    """`smtrain plan` said `1 files`."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text("print('hi')\n")
    (tmp_path / "spec.yaml").write_text("name: one-file\nentry_point: train.py\nsource_dir: src\n"
                                        "framework_version: '2.10.0'\ninstance: {type: ml.c5.2xlarge, count: 1}\n"
                                        "distribution: {mode: none}\n")

    result = CliRunner().invoke(main, ["plan", str(tmp_path / "spec.yaml")])

    assert result.exit_code == 0, result.output
    assert f"source  {tmp_path / 'src'}: 1 file, " in result.stdout, result.stdout
