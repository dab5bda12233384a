"""The CreateHyperParameterTuningJob request: golden files for each strategy, each accepted by botocore's parameter
validation, and a training definition that carries every setting of the job spec, because it is the single
job's request (the same builder) moved member by member.

Goldens (tests/golden/tuning-<strategy>.request.json) were reviewed by hand against the API reference and SDK
v2's tuner (sagemaker/tuner.py): ranges as text, categorical values JSON-encoded for a framework job, static
hyperparameters less the tuned ones plus the estimator class keys. Regenerate with UPDATE_GOLDEN=1 and review.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import botocore.session
import pytest
from botocore.validate import ParamValidator
from click.testing import CliRunner
from tuning_specs import EXAMPLE, EXAMPLE_JOB, TARGET, TUNING_SPECS

from orchestrator.cli.main import main
from orchestrator.errors import CapabilityError
from orchestrator.planning.target import Target
from orchestrator.planning.tuning import (
    DEFINITION_MEMBERS,
    NOT_CARRIED,
    build_tuning_plan,
    training_definition,
)
from orchestrator.specs.capabilities import check
from orchestrator.specs.loader import LoadedSpec, LoadedTuning, load, load_tuning
from orchestrator.specs.model import JobSpec

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden"
SHA = re.compile(r"[0-9a-f]{64}")


def _validate(request: dict) -> None:
    model = botocore.session.get_session().get_service_model("sagemaker")
    report = ParamValidator().validate(request, model.operation_model("CreateHyperParameterTuningJob").input_shape)
    assert not report.has_errors(), report.generate_report()


@pytest.mark.parametrize("strategy", list(TUNING_SPECS))
def test_tuning_request_matches_golden_and_botocore_accepts_it(tmp_path, strategy):
    path = tmp_path / f"{strategy}.yaml"
    path.write_text(TUNING_SPECS[strategy])

    request = build_tuning_plan(load_tuning(path), TARGET, name="golden-tuning").request

    _validate(request)
    normalised = json.loads(SHA.sub("<sha256>", json.dumps(request)))
    golden = GOLDEN / f"tuning-{strategy}.request.json"
    if os.environ.get("UPDATE_GOLDEN"):
        golden.write_text(json.dumps(normalised, indent=2, sort_keys=True) + "\n")
    assert normalised == json.loads(golden.read_text())
    assert request["HyperParameterTuningJobConfig"]["Strategy"].lower() == strategy


FULL_JOB = """\
name: full
entry_point: train.py
source_dir: .
framework_version: "2.10.0"
role: arn:aws:iam::123456789012:role/SageMakerExecution
region: eu-west-1
instance: {type: ml.g5.12xlarge, count: 2, volume_size_gb: 200}
distribution: {mode: torch_distributed}
hyperparameters: {trainer: ddp, epochs: 3}
environment: {NCCL_DEBUG: INFO, DATA_VERSION: "7"}
inputs: {train: s3://my-bucket/data/train/, validation: {uri: s3://my-bucket/data/validation/, input_mode: FastFile}}
local_inputs: {train: .}
output_path: s3://my-bucket/outputs/
code_location: s3://my-bucket/source/
output_kms_key: arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab
volume_kms_key: alias/training-volumes
max_pending_seconds: 7200
max_retry_attempts: 3
checkpoint: {s3_uri: s3://my-bucket/checkpoints/full/, local_path: /opt/ml/checkpoints/full}
spot: {enabled: true, max_wait_seconds: 7200}
max_run_seconds: 3600
metrics: [{name: "validation:accuracy", regex: "val_acc=([0-9.]+)"}]
tags: {team: ml}
network: {subnets: [subnet-0abc123], security_group_ids: [sg-0abc123], enable_network_isolation: true,
          encrypt_inter_container_traffic: true}
allow_unverified: true
"""
WARM_POOL_JOB = FULL_JOB.replace("spot: {enabled: true, max_wait_seconds: 7200}\n", "keep_alive_seconds: 1800\n")
FULL_TUNING = """\
job: job.yaml
objective: {metric: "validation:accuracy", type: Maximize}
parameters:
  lr: {type: continuous, min: 0.001, max: 0.1}
max_jobs: 4
"""
# JobSpec fields that cannot reach a training definition, and where they go instead.
OUTSIDE_THE_DEFINITION = {
    "name": "names the tuning job (the trials are named after it)",
    "local_inputs": "smtrain local only",
    "allow_unverified": "a gate of submit",
    "tags": "the tuning job's Tags",
}


def _target_of(job: JobSpec) -> Target:
    """What resolve_target makes of the spec's own values, with stand-ins where it would look elsewhere."""
    output = job.output_path or "s3://default-bucket/outputs/"
    return Target(region=job.region or "us-east-1", role=job.role or "arn:aws:iam::123456789012:role/Default",
                  output_path=output, code_location=job.code_location or "s3://default-bucket/code")


def _full_plan(tmp_path: Path, job_text: str):
    (tmp_path / "train.py").write_text("print('hello')\n")
    (tmp_path / "job.yaml").write_text(job_text)
    (tmp_path / "search.yaml").write_text(FULL_TUNING)
    loaded = load_tuning(tmp_path / "search.yaml")
    return build_tuning_plan(loaded, _target_of(loaded.job.spec), name="full-tuning")


@pytest.mark.parametrize("job_text", [FULL_JOB, WARM_POOL_JOB], ids=["spot", "warm-pool"])
def test_every_setting_of_the_job_request_is_in_the_training_definition(tmp_path, job_text):
    tuning_plan = _full_plan(tmp_path, job_text)
    single = tuning_plan.job.create_training_job_request
    definition = tuning_plan.request["TrainingJobDefinition"]

    _validate(tuning_plan.request)
    for member, value in single.items():
        if member in NOT_CARRIED:
            continue
        nested = DEFINITION_MEMBERS[member]
        if nested is not None and isinstance(value, dict):
            assert all(key in nested or f"{member}.{key}" in NOT_CARRIED for key in value), member
            value = {key: item for key, item in value.items() if key in nested}
        assert definition[member] == value, member
    static = definition["StaticHyperParameters"]
    assert {key: text for key, text in static.items() if not key.startswith("sagemaker_estimator")} == {
        key: text for key, text in single["HyperParameters"].items() if key != "lr"}
    assert tuning_plan.request["Tags"] == [{"Key": "team", "Value": "ml"}]
    # What the SDK v3 tuner dropped, by name:
    assert [channel["ChannelName"] for channel in definition["InputDataConfig"]] == ["train", "validation", "code"]
    assert definition["Environment"] == {"NCCL_DEBUG": "INFO", "DATA_VERSION": "7"}


@pytest.mark.parametrize("job_text", [FULL_JOB, WARM_POOL_JOB], ids=["spot", "warm-pool"])
def test_every_job_spec_field_reaches_the_definition_or_says_where_it_goes(tmp_path, job_text):
    """Each field of the full job spec, reset to its default, changes the training definition: so none is lost
    between the job spec and the trials (a field a later change adds to the spec and the request included)."""
    tuning_plan = _full_plan(tmp_path, job_text)
    loaded = load_tuning(tmp_path / "search.yaml")
    job = loaded.job.spec
    full_definition = tuning_plan.request["TrainingJobDefinition"]
    changed = [name for name, field in JobSpec.model_fields.items()
               if not field.is_required() and getattr(job, name) != field.get_default(call_default_factory=True)]
    assert len(changed) >= 15

    for name in changed:
        if name in OUTSIDE_THE_DEFINITION:
            continue
        default = JobSpec.model_fields[name].get_default(call_default_factory=True)
        variant = job.model_copy(update={name: default})
        if name == "inputs":
            variant = variant.model_copy(update={"local_inputs": {}})
        try:
            definition = build_tuning_plan(
                LoadedTuning(spec=loaded.spec, job=LoadedSpec(spec=variant, findings=check(variant), path=None),
                             path=None), _target_of(variant), name="full-tuning").request["TrainingJobDefinition"]
        except CapabilityError:
            continue  # the default is refused with the rest of this spec (e.g. no metrics for the objective)
        assert definition != full_definition, f"{name} does not reach the training definition"


def test_job_settings_a_tuning_job_cannot_carry_are_refused_by_name():
    spec = REPO / "job_specs" / "settings" / "training-plan-torch_distributed-2x-p5.48xlarge.yaml"

    with pytest.raises(CapabilityError) as raised:
        training_definition(build_plan_request(load(spec)), {"lr"})

    for member in ("InfraCheckConfig", "ExperimentConfig", "TensorBoardOutputConfig", "RemoteDebugConfig",
                   "SessionChainingConfig", "MlflowConfig"):
        assert member in str(raised.value)
    assert "remove that setting from the job spec" in str(raised.value)


def build_plan_request(loaded) -> dict:
    from orchestrator.planning.plan import build_plan

    return build_plan(loaded, _target_of(loaded.spec), job_name="x").create_training_job_request


def test_a_request_member_the_definition_cannot_hold_stops_planning():
    request = {"TrainingJobName": "x", "HyperParameters": {}, "RoleArn": "arn", "SessionChainingConfig": {}}

    with pytest.raises(CapabilityError, match="SessionChainingConfig"):
        training_definition(request, set())

    with pytest.raises(CapabilityError, match="ResourceConfig.InstanceCountPerHost"):
        training_definition({"HyperParameters": {}, "ResourceConfig": {"InstanceCountPerHost": 1}}, set())


def test_what_is_not_carried_really_has_no_place_in_the_definition():
    for path in NOT_CARRIED:
        member, _, nested = path.partition(".")
        if nested:
            assert nested not in (DEFINITION_MEMBERS[member] or []), path
        else:
            assert member not in DEFINITION_MEMBERS or member == "HyperParameters", path


def test_tune_plan_json_shows_request_jobs_and_cost(monkeypatch):
    monkeypatch.setenv("AWS_REGION", "us-east-1")

    result = CliRunner().invoke(main, ["tune", "plan", str(EXAMPLE), "-o", "json", "--name", "mlp-lr-1",
                                       "--set", "hyperparameters.epochs=2"])

    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert document["jobs"] == 12 and document["parallel_jobs"] == 2
    single = load(EXAMPLE_JOB).spec
    assert document["cost"]["max_total"] == pytest.approx(12 * document["cost"]["per_trial"])
    assert document["cost"]["per_trial"] > 0
    static = document["create_hyper_parameter_tuning_job_request"]["TrainingJobDefinition"]["StaticHyperParameters"]
    assert static["epochs"] == "2" and static["sagemaker_job_name"] == '"mlp-lr-1"'
    assert single.hyperparameters["epochs"] == 4


def test_tuning_job_names_fit_the_api():
    from orchestrator.planning.tuning import tuning_job_name

    name = tuning_job_name("a-very-long-base-name-for-a-search")

    assert len(name) <= 32 and re.fullmatch(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,31}", name)
    assert tuning_job_name("x") != tuning_job_name("x")


def test_a_tuning_job_name_is_known_by_its_base_even_when_trimmed():
    from orchestrator.planning.tuning import is_named_after, tuning_job_name

    long_base = "a-very-long-base-name-for-a-search"

    assert is_named_after(tuning_job_name("mlp-lr"), "mlp-lr") and is_named_after(tuning_job_name(long_base), long_base)
    assert not is_named_after(tuning_job_name("mlp-lr-long"), "mlp-lr") and not is_named_after("mlp-lr", "mlp-lr")


def test_a_trials_values_merge_over_the_spec_and_keep_the_set_overrides():
    # A trial's `smtrain local` gets the search's --set overrides and its tuned values (--hyperparameters-file):
    # the tuned names take the trial's values, every other hyperparameter keeps the spec's or the override's.
    hyperparameters = load(EXAMPLE_JOB, ["hyperparameters.epochs=500", "hyperparameters.lr=9"],
                           hyperparameters={"lr": 0.1, "batch-size": 32}).spec.hyperparameters
    assert hyperparameters["epochs"] == 500
    assert hyperparameters["lr"] == 0.1 and hyperparameters["batch-size"] == 32
    assert hyperparameters["seed"] == 1 and hyperparameters["model"] == "mlp"
