"""The capability matrix: its data agrees with the installed SDK, every rule has a predicate, and the rules
that warn or inform do fire."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from orchestrator.specs import capabilities, images
from orchestrator.specs.model import TRAINING_INSTANCE_TYPES
from orchestrator.specs.catalog import catalog, lookup
from orchestrator.specs.loader import from_mapping
from orchestrator.cloud.sdk import import_sagemaker


def _spec(**changes):
    data = {
        "name": "demo", "entry_point": "train.py", "framework_version": "2.3.0",
        "instance": {"type": "ml.c5.2xlarge", "count": 2}, "distribution": {"mode": "none"},
        "hyperparameters": {"trainer": "gloo"},
    }
    for dotted, value in changes.items():
        target = data
        *parents, last = dotted.split("__")
        for key in parents:
            target = target.setdefault(key, {})
        target[last] = value
    return data


def _rules_fired(spec_dir, **changes) -> dict[str, str]:
    loaded = from_mapping(_spec(**changes), base_dir=spec_dir)
    return {finding.rule: finding.severity for finding in loaded.findings}


def test_capability_every_rule_has_a_predicate_and_provenance():
    assert capabilities.predicate_ids() == set(capabilities.rules())
    for rule in capabilities.rules().values():
        assert rule.source and rule.checked and rule.message and rule.fix, rule.id
        assert rule.severity in ("error", "unverified", "warning", "notice")


def test_capability_lists_match_the_installed_sdk():
    import_sagemaker()
    from sagemaker import fw_utils

    lists = capabilities.lists()
    assert lists["trainium_torch_distributed_versions"] == \
        fw_utils.TRAINIUM_SUPPORTED_TORCH_DISTRIBUTED_FRAMEWORK_VERSIONS
    assert set(lists["smdataparallel_instance_types"]) == \
        set(fw_utils.SM_DATAPARALLEL_SUPPORTED_INSTANCE_TYPES) - {"local_gpu"}


def test_catalog_types_are_real_sagemaker_training_types():
    import botocore.session

    model = botocore.session.get_session().get_service_model("sagemaker")
    valid = set(model.shape_for("TrainingInstanceType").enum)
    unknown = set(catalog().instances) - valid
    assert not unknown, f"not SageMaker training instance types: {unknown}"


def _refresh_script():
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "scripts" / "refresh_api_limits.py"
    module_spec = importlib.util.spec_from_file_location("refresh_api_limits", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def test_api_limits_file_is_what_the_installed_botocore_says():
    """Regenerated in memory from botocore's service models: a botocore that moved a limit fails here."""
    import botocore.session

    script = _refresh_script()
    assert script.TARGET.read_text(encoding="utf-8") == script.render(botocore.session.get_session()), \
        "orchestrator/specs/data/api_limits.yaml is stale: run `python scripts/refresh_api_limits.py`"


def test_api_limits_extract_refuses_a_documented_maximum_that_is_gone():
    import botocore.session

    script = _refresh_script()
    script.DOCUMENTED_MAXIMA = {"StoppingCondition.MaxRuntimeInSeconds": re.compile(r"The maximum value is (\d+) weeks\.")}
    with pytest.raises(SystemExit, match="documented maximum"):
        script.extract(botocore.session.get_session())


def test_catalog_types_are_in_the_generated_instance_type_list():
    assert set(catalog().instances) <= TRAINING_INSTANCE_TYPES


def test_catalog_covers_required_families():
    families = {entry.family for entry in catalog().instances.values()}
    assert {"c5", "m5", "g4dn", "g5", "g6", "p3", "p4d", "p4de", "p5", "trn1"} <= families


def test_catalog_lookup_guesses_unknown_types_like_the_sdk():
    guess = lookup("ml.g7.xlarge")
    assert not guess.known and guess.accelerator == "gpu"
    assert lookup("ml.r5.large").accelerator == "cpu"


def test_image_table_agrees_with_the_sdk_v2_table_where_both_have_a_version():
    """Up to 2.8.0 the table is the SDK's (same Python, same registries); it goes on where the SDK stops."""
    import json
    from pathlib import Path

    sagemaker = import_sagemaker()
    sdk = json.loads((Path(sagemaker.__file__).parent / "image_uri_config" / "pytorch.json").read_text())["training"]
    ours = images.versions()
    shared = [version for version in sdk["versions"] if version in ours]
    assert "2.8.0" in shared and "2.3.0" in shared
    for version in shared:
        assert list(ours[version].python) == sdk["versions"][version]["py_versions"], version
        for region, account in sdk["versions"][version]["registries"].items():
            if not region.startswith("us-iso"):
                assert images.registry_account(region) == account, (version, region)
    assert {"2.9.0", "2.10.0", "2.13.0"} <= set(ours) - set(sdk["versions"])


def test_image_default_python_is_the_newest_of_the_version():
    assert images.default_python("2.3.0") == "py311"
    assert images.default_python("2.10.0") == "py313"
    assert images.default_python("2.10") == "py313"
    assert images.default_python("9.9.9") is None


@pytest.mark.parametrize(("changes", "rule", "severity"), [
    ({"distribution__mode": "pytorchddp", "instance__type": "ml.p4d.24xlarge", "framework_version": "2.2.0",
      "hyperparameters__trainer": "ddp"}, "pytorchddp-is-smddp", "notice"),
    ({"distribution__mode": "smddp", "instance__type": "ml.g5.48xlarge", "framework_version": "2.2.0",
      "hyperparameters__trainer": "ddp"}, "smddp-instance-list", "unverified"),
    ({"distribution__mode": "smddp", "instance__type": "ml.p5e.48xlarge", "framework_version": "2.2.0",
      "hyperparameters__trainer": "ddp"}, "smddp-instance-list", "unverified"),
    ({"instance__type": "ml.c6i.xlarge"}, "unknown-instance-type", "unverified"),
    ({"instance__type": "ml.g5.12xlarge", "instance__count": 1, "hyperparameters__trainer": "auto"},
     "mode-none-idle-gpus", "notice"),
    ({"instance__type": "ml.g5.12xlarge"}, "gloo-on-gpu", "notice"),
    ({"instance__count": 1, "hyperparameters__trainer": "dp"}, "dp-without-gpus", "notice"),
    ({"hyperparameters__note": "two words"}, "hyperparameter-shell-split", "notice"),
    ({"hyperparameters__layers": [64, 32]}, "hyperparameter-shell-split", "notice"),
    ({"hyperparameters__batch size": 64}, "hyperparameter-shell-split", "notice"),
    ({"hyperparameters__lr;touch x": 0.1}, "hyperparameter-shell-split", "notice"),
    ({"network__encrypt_inter_container_traffic": True, "instance__count": 1}, "encryption-single-host", "notice"),
    ({"distribution__mode": "torch_distributed", "instance__type": "ml.g5.2xlarge",
      "hyperparameters__trainer": "ddp"}, "multi-node-without-efa", "notice"),
    ({"distribution__mode": "mpi", "distribution__processes_per_host": 16}, "processes-exceed-vcpus", "notice"),
    ({"distribution__mode": "torch_distributed", "distribution__processes_per_host": 4,
      "instance__type": "ml.g5.12xlarge", "hyperparameters__trainer": "ddp"}, "processes-per-host-as-default", "notice"),
    ({"distribution__mode": "smddp", "distribution__processes_per_host": 8, "instance__type": "ml.p4d.24xlarge",
      "framework_version": "2.2.0", "hyperparameters__trainer": "ddp"}, "processes-per-host-as-default", "notice"),
    ({"spot__enabled": True, "spot__max_wait_seconds": 90000, "keep_alive_seconds": 60,
      "checkpoint": {"s3_uri": "s3://bkt/c/"}}, "spot-no-warm-pool", "unverified"),
])
def test_capability_warning_rules_fire(spec_dir, changes, rule, severity):
    assert _rules_fired(spec_dir, **changes).get(rule) == severity


def test_capability_custom_image_skips_sdk_version_rules(spec_dir):
    fired = _rules_fired(spec_dir, framework_version=None,
                         image_uri="123456789012.dkr.ecr.us-east-1.amazonaws.com/mine:1",
                         distribution__mode="torch_distributed")
    assert "torch-distributed-needs-accelerator" not in fired
    assert "image-exists" not in fired


def test_capability_processes_per_host_on_a_type_outside_the_catalog_stays_an_error(spec_dir):
    """The device count of an uncatalogued type is a guess, so an equal value is not known to be harmless."""
    from orchestrator.specs.loader import InvalidSpec

    with pytest.raises(InvalidSpec, match="has no effect in mode torch_distributed"):
        _rules_fired(spec_dir, distribution__mode="torch_distributed", distribution__processes_per_host=1,
                     instance__type="ml.g6e.xlarge", hyperparameters__trainer="ddp")


def test_capability_unverified_blocks_only_without_override():
    finding = capabilities.Finding(rule="r", severity="unverified", field="f", message="m", fix="x", source="s")
    assert finding.blocks(allow_unverified=False)
    assert not finding.blocks(allow_unverified=True)



@pytest.mark.parametrize(("changes", "message"), [
    ({"framework_version": "2.5.1", "hyperparameters__trainer": "fsdp", "instance__type": "ml.g5.12xlarge",
      "distribution__mode": "torch_distributed"}, "trainer fsdp uses FSDP2"),
    ({"framework_version": "2.10.0", "hyperparameters__trainer": "model_parallel", "instance__type": "ml.g5.12xlarge",
      "instance__count": 1, "distribution__mode": "torch_distributed"}, "trainer model_parallel runs one process"),
    ({"hyperparameters__zero-stage": 3}, "zero-stage 3 is offered by trainer fsdp, and this job's trainer is gloo"),
    ({"hyperparameters__zero-stage": "2", "hyperparameters__trainer": "auto"},
     "zero-stage 2 is offered by trainer fsdp, and this job's trainer is auto"),
    ({"framework_version": "2.10.0", "hyperparameters__trainer": "fsdp", "hyperparameters__zero-stage": 1},
     "zero-stage 1 is offered by trainer ddp or gloo, and this job's trainer is fsdp"),
])
def test_capability_trainer_rules_refuse(spec_dir, changes, message):
    from orchestrator.specs.loader import InvalidSpec

    with pytest.raises(InvalidSpec, match=message):
        _rules_fired(spec_dir, **changes)


@pytest.mark.parametrize(("trainer", "stage"), [("gloo", 1), ("fsdp", 2), ("fsdp", "3"), ("auto", 1), ("gloo", 0)])
def test_capability_zero_stage_the_trainer_offers_passes(spec_dir, trainer, stage):
    # trainer auto may pick ddp or gloo, which offer stage 1: train.py decides on the instance
    fired = _rules_fired(spec_dir, framework_version="2.10.0", hyperparameters__trainer=trainer,
                         **{"hyperparameters__zero-stage": stage})
    assert "zero-stage-trainer" not in fired


def test_capability_model_parallel_on_one_process_per_host_is_not_idle_gpus(spec_dir):
    fired = _rules_fired(spec_dir, framework_version="2.10.0", hyperparameters__trainer="model_parallel",
                         instance__type="ml.g5.12xlarge", instance__count=1)
    assert "mode-none-idle-gpus" not in fired
