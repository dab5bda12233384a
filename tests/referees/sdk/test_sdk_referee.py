"""SDK v2 as the referee of smtrain's own CreateTrainingJob request.

smtrain builds the request itself (`orchestrator/planning/request.py`, no SDK). Here the real SDK v2 `PyTorch`
estimator is built from the same plan (`orchestrator.cloud.estimator.build`, what `build_estimator` returns)
and its `fit(wait=False)` is captured with zero network (`sdk_capture.py`). The two requests must be equal key
for key, for every example spec and for a pairwise matrix over the spec's settings.

Where v2 cannot express a case, the test says so and how it is compared:
* a framework version v2's image table lacks (2.9 and later), or SMDDP on the 2.3-2.5 images that carry it
  but that v2 refuses: the adapter hands v2 the plan's image as `image_uri` (v2 then skips its image lookup
  and its SMDDP version list); every key is still compared, and `TrainingImage` is asserted separately: its
  registry against v2's own registry for the region, its repository and tag against the AWS release data
  written out below;
* a role given by name: v2 expands it at fit() with IAM GetRole (answered by the capture), smtrain at submit;
  `RoleArn` differs in the plan (the name) and everything else is compared.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from allpairspy import AllPairs
from sdk_capture import capture_create_training_job, role_arn

from orchestrator.api import plan
from orchestrator.cloud.estimator import sdk_kwargs
from orchestrator.cloud.sdk import import_sagemaker
from orchestrator.planning.plan import Plan, build_plan
from orchestrator.planning.target import Target
from orchestrator.specs.loader import LoadedSpec, load
from orchestrator.specs.model import JobSpec

REPO = Path(__file__).resolve().parents[3]
SPECS = sorted((REPO / "job_specs").glob("*.yaml"))
ROLE = "arn:aws:iam::123456789012:role/SageMakerExecution"
CUSTOM_IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/my-training:1.0"
NEURON_IMAGE = "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training-neuronx:2.1.2-neuronx-py310-sdk2.20.0-ubuntu20.04"

# Repository and tag of the images v2's table lacks, from aws/deep-learning-containers
# docs/src/data/pytorch-training/*.yml and, for 2.11-2.13, docs/src/data/pytorch/*.yml (sdk-facts.md §0).
CURRENT_IMAGES = {
    ("2.9.0", "gpu"): "pytorch-training:2.9.0-gpu-py312-cu130-ubuntu22.04-sagemaker",
    ("2.9.0", "cpu"): "pytorch-training:2.9.0-cpu-py312-ubuntu22.04-sagemaker",
    ("2.10.0", "gpu"): "pytorch-training:2.10.0-gpu-py313-cu130-ubuntu22.04-sagemaker",
    ("2.10.0", "cpu"): "pytorch-training:2.10.0-cpu-py313-ubuntu22.04-sagemaker",
    ("2.13.0", "gpu"): "pytorch:2.13.0-cu133-amzn2023-sagemaker",
    ("2.13.0", "cpu"): "pytorch:2.13.0-cpu-amzn2023-sagemaker",
}

# (mode, instance type, how the image is chosen, distribution extras): each mode on CPU and GPU where it runs,
# old, current and custom images. Versions v2 cannot pick itself are marked in `V2_LACKS`.
SETUPS: dict[str, dict[str, Any]] = {
    "none-cpu-2.3.0": {"mode": "none", "type": "ml.c5.2xlarge", "framework_version": "2.3.0", "py_version": "py311"},
    "none-gpu-2.8.0": {"mode": "none", "type": "ml.g5.12xlarge", "framework_version": "2.8.0"},
    "none-cpu-1.13.1": {"mode": "none", "type": "ml.m5.xlarge", "framework_version": "1.13.1"},
    "none-gpu-2.9.0": {"mode": "none", "type": "ml.g5.2xlarge", "framework_version": "2.9.0"},
    "none-cpu-2.13.0": {"mode": "none", "type": "ml.m5.xlarge", "framework_version": "2.13.0"},
    "none-gpu-custom": {"mode": "none", "type": "ml.g5.12xlarge", "image_uri": CUSTOM_IMAGE},
    "mpi-cpu-2.3": {"mode": "mpi", "type": "ml.c5.2xlarge", "framework_version": "2.3", "py_version": "py311",
                    "processes_per_host": 4, "custom_mpi_options": "-x NCCL_DEBUG=INFO --bind-to none"},
    "mpi-gpu-2.1.0": {"mode": "mpi", "type": "ml.g5.12xlarge", "framework_version": "2.1.0"},
    "mpi-cpu-2.10.0": {"mode": "mpi", "type": "ml.c5.2xlarge", "framework_version": "2.10.0",
                       "processes_per_host": 2},
    "torch_distributed-gpu-2.5.1": {"mode": "torch_distributed", "type": "ml.g5.12xlarge",
                                    "framework_version": "2.5.1"},
    "torch_distributed-gpu-2.10.0": {"mode": "torch_distributed", "type": "ml.p4d.24xlarge",
                                     "framework_version": "2.10.0"},
    "torch_distributed-trn1-neuron": {"mode": "torch_distributed", "type": "ml.trn1.32xlarge",
                                      "image_uri": NEURON_IMAGE},
    "pytorchddp-gpu-2.2.0": {"mode": "pytorchddp", "type": "ml.p4d.24xlarge", "framework_version": "2.2.0"},
    "smddp-gpu-2.0.1": {"mode": "smddp", "type": "ml.p4d.24xlarge", "framework_version": "2.0.1",
                        "py_version": "py310", "custom_mpi_options": "-verbose"},
    "smddp-gpu-2.4.0": {"mode": "smddp", "type": "ml.p4de.24xlarge", "framework_version": "2.4.0"},
}
# v2's image table ends at 2.8.0; v2 refuses SMDDP past 2.2.0, though the 2.3-2.5 images carry it
# (sdk-facts.md §0, §5).
V2_HAS_NO_IMAGE = {version for version, _ in CURRENT_IMAGES}
V2_REFUSES_SMDDP = {"2.3.0", "2.4.0", "2.5.1"}

FACTORS: dict[str, list[Any]] = {
    "setup": list(SETUPS),
    "count": [1, 2, 4],
    "checkpoint": ["none", "checkpoint", "spot"],
    "network": ["open", "vpc", "isolated", "encrypted", "vpc+isolated+encrypted"],
    "keep_alive": [0, 1800],
    "metrics": ["default", "custom", "none"],
    "tags": [{}, {"team": "ml", "cost-center": "42"}],
    "environment": [{}, {"NCCL_DEBUG": "INFO", "WANDB_API_KEY": "not-a-real-key"}],
    "channels": [{}, {"train": "s3://my-bucket/data/train/"},
                 {"train": "s3://my-bucket/data/train/", "validation": "s3://my-bucket/data/val/",
                  "test": "s3://other-bucket/test"}],
    "volume": [30, 100, 500],
    # ap-south-2 is outside v2's Debugger and Profiler regions; cn-north-1 has its own DNS suffix.
    "region": ["us-east-1", "eu-west-1", "ap-south-2", "cn-north-1"],
    "hyperparameters": [{}, {"epochs": 3, "lr": 0.1, "name": "run a", "layers": [1, 2], "opt": {"beta": 0.9},
                             "resume": True, "seed": None}],
    "max_run": [3600, 86400],
}
CASES = [dict(zip(FACTORS, row)) for row in AllPairs(list(FACTORS.values()))]


def _case_id(case: dict[str, Any]) -> str:
    return "-".join([case["setup"], f"x{case['count']}", case["checkpoint"], case["network"], case["region"]])


def _spec(case: dict[str, Any], source_dir: Path) -> JobSpec:
    setup = dict(SETUPS[case["setup"]])
    distribution = {key: setup.pop(key) for key in ("mode", "processes_per_host", "custom_mpi_options")
                    if key in setup}
    document: dict[str, Any] = {
        "name": "referee",
        "entry_point": "train.py",
        "source_dir": str(source_dir),
        "instance": {"type": setup.pop("type"), "count": case["count"], "volume_size_gb": case["volume"]},
        "distribution": distribution,
        **setup,
        "hyperparameters": case["hyperparameters"],
        "environment": case["environment"],
        "inputs": case["channels"],
        "tags": case["tags"],
        "max_run_seconds": case["max_run"],
        "keep_alive_seconds": case["keep_alive"],
        "network": _network(case["network"]),
        "allow_unverified": True,
    }
    if case["checkpoint"] != "none":
        document["checkpoint"] = {"s3_uri": "s3://my-bucket/checkpoints/referee/", "local_path": "/opt/ml/ckpt"}
    if case["checkpoint"] == "spot":
        document["spot"] = {"enabled": True, "max_wait_seconds": 2 * case["max_run"]}
    if case["metrics"] == "custom":
        document["metrics"] = [{"name": "val:acc", "regex": r"val_acc=([0-9.]+)"},
                               {"name": "train:loss", "regex": r"loss: ([0-9.eE+-]+)"}]
    elif case["metrics"] == "none":
        document["metrics"] = []
    return JobSpec.model_validate(document, strict=False)


def _network(kind: str) -> dict[str, Any]:
    network: dict[str, Any] = {}
    if "vpc" in kind:
        network.update(subnets=["subnet-0a1b2c3d", "subnet-4e5f6a7b"], security_group_ids=["sg-0123456789abcdef0"])
    if "isolated" in kind:
        network["enable_network_isolation"] = True
    if "encrypted" in kind:
        network["encrypt_inter_container_traffic"] = True
    return network


def _target(region: str, role: str = ROLE) -> Target:
    return Target(region=region, role=role, output_path="s3://my-bucket/outputs/",
                  code_location="s3://my-bucket/code")


@pytest.fixture(scope="module")
def source_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("source")
    (directory / "train.py").write_text("print('training')\n")
    return directory


@pytest.fixture(autouse=True, scope="module")
def _sdk_imported() -> Iterator[None]:
    """One quiet import for every case. v2 re-reads botocore's endpoints.json (0.17 s) at each of its three
    image lookups per fit: constant data, read once here to keep the ~80 cases fast."""
    sagemaker = import_sagemaker()
    resolver = sagemaker.utils._botocore_resolver
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sagemaker.utils, "_botocore_resolver", functools.lru_cache(maxsize=1)(resolver))
        yield


def _referee(job_plan: Plan) -> dict[str, Any]:
    capture = capture_create_training_job(job_plan)
    assert capture.calls == [], "v2 made API calls besides CreateTrainingJob"
    return capture.request


@pytest.mark.parametrize("spec_file", SPECS, ids=[path.stem for path in SPECS])
def test_example_spec_request_equals_what_sdk_v2_sends(spec_file, monkeypatch):
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    job_plan = plan(load(spec_file), job_name="referee-1")
    _compare_with_sdk_v2(job_plan)


def test_matrix_is_pairwise_over_every_setting():
    """Every pair of values of any two settings appears in some case, and the matrix stays small."""
    assert 40 <= len(CASES) <= 100
    for index, first in enumerate(FACTORS):
        for second in list(FACTORS)[index + 1:]:
            seen = {(json.dumps(case[first]), json.dumps(case[second])) for case in CASES}
            assert len(seen) == len(FACTORS[first]) * len(FACTORS[second]), (first, second)


@pytest.mark.parametrize("case", CASES, ids=[_case_id(case) for case in CASES])
def test_matrix_request_equals_what_sdk_v2_sends(case, source_dir):
    spec = LoadedSpec.of(_spec(case, source_dir))
    _compare_with_sdk_v2(build_plan(spec, _target(case["region"]), job_name="referee-1"))


def _compare_with_sdk_v2(job_plan: Plan) -> None:
    """Key for key; where v2 is handed the plan's image, that image is checked on its own."""
    spec = job_plan.spec
    smddp = spec.distribution.mode.value in ("smddp", "pytorchddp")
    v2_cannot_pick = spec.framework_version in V2_HAS_NO_IMAGE or (smddp and spec.framework_version in
                                                                   V2_REFUSES_SMDDP)
    given_image = "image_uri" in sdk_kwargs(job_plan) and "image_uri" not in job_plan.estimator_kwargs
    assert given_image == v2_cannot_pick

    assert job_plan.create_training_job_request == _referee(job_plan)

    if given_image:
        _assert_image_from_the_release_data(job_plan)


def _assert_image_from_the_release_data(job_plan: Plan) -> None:
    """The image v2 was handed: v2's registry for the region; repository:tag from AWS's release data, or, for
    SMDDP on 2.3-2.5, exactly the image v2's own table has for that version."""
    sagemaker = import_sagemaker()
    spec, region = job_plan.spec, job_plan.target.region
    image = job_plan.create_training_job_request["AlgorithmSpecification"]["TrainingImage"]
    processor = "gpu" if spec.instance.type.split(".")[1][0] in "gp" else "cpu"
    version = spec.framework_version
    v2_lookup = {"region": region, "instance_type": spec.instance.type, "image_scope": "training"}
    if (version, processor) in CURRENT_IMAGES:
        newest_v2 = sagemaker.image_uris.retrieve("pytorch", version="2.8.0", py_version="py312", **v2_lookup)
        assert image == f"{newest_v2.split('/')[0]}/{CURRENT_IMAGES[version, processor]}"
    else:
        assert image == sagemaker.image_uris.retrieve("pytorch", version=version, py_version="py311", **v2_lookup)


def test_role_given_by_name_is_expanded_as_sdk_v2_does(source_dir):
    """The plan keeps the name (submit expands it with IAM GetRole); v2 expands it at fit() the same way."""
    spec = _spec({**CASES[0], "setup": "none-cpu-2.3.0"}, source_dir)
    job_plan = build_plan(LoadedSpec.of(spec), _target("us-east-1", role="SageMakerExecution"), job_name="referee-1")
    capture = capture_create_training_job(job_plan)

    assert capture.calls == [("iam.GetRole", {"RoleName": "SageMakerExecution"})]
    ours, v2 = dict(job_plan.create_training_job_request), dict(capture.request)
    assert (ours.pop("RoleArn"), v2.pop("RoleArn")) == ("SageMakerExecution", role_arn("SageMakerExecution"))
    assert ours == v2


# The job settings beyond the basics, against what v2 sends for the same estimator and fit(): channel options
# (TrainingInput), instance groups and the training group, input mode, training plan, KMS keys, retries, infra
# check, remote debug, session tag chaining, TensorBoard, Experiments. v2 has no argument for MlflowConfig,
# InstancePreferences or MaxPendingTimeInSeconds: those are left out of the comparison and checked by the golden
# requests and botocore's validation (tests/specs/test_job_settings.py).
SETTINGS = sorted((REPO / "job_specs" / "settings").glob("*.yaml"))
V2_HAS_NO_ARGUMENT = ("MlflowConfig",)


@pytest.mark.parametrize("spec_file", [path for path in SETTINGS if "preferences" not in path.stem],
                         ids=[path.stem for path in SETTINGS if "preferences" not in path.stem])
def test_settings_example_request_equals_what_sdk_v2_sends(spec_file, monkeypatch):
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    job_plan = plan(load(spec_file, ["max_pending_seconds=null"]), job_name="referee-1")
    ours = {key: value for key, value in job_plan.create_training_job_request.items() if key not in V2_HAS_NO_ARGUMENT}
    assert ours == _referee(job_plan)


def test_settings_referee_sees_a_difference():
    """The comparison above can fail: v2's request for the hetero example differs once a channel option is lost."""
    job_plan = plan(load(REPO / "job_specs" / "settings" / "hetero-mpi-2groups-c5-g5.yaml"), job_name="referee-1")
    request = _referee(job_plan)
    request["InputDataConfig"][0]["DataSource"]["S3DataSource"].pop("InstanceGroupNames")
    assert job_plan.create_training_job_request != request
