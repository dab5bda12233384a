"""The SDK defaults' `SageMaker.TrainingJob` values applied to a spec, as SDK v2 applies them to an estimator.

What the spec says wins (`resolve_value_from_config`: a given value beats the config), so a value applies only
where the spec is silent: a field it does not write (`enable_network_isolation: false` written out is a value).
Each the way v2 does it (sagemaker 2.257.7):

* VpcConfig: Subnets and SecurityGroupIds each where the spec has none (estimator.py resolves them apart);
* EnableNetworkIsolation, EnableInterContainerTrafficEncryption: where the spec does not write them;
* Environment: the config's mapping only where the spec writes no `environment:` at all; a spec's mapping
  replaces it whole (v2 does not merge the two);
* Tags: the config's tags appended after the spec's, except keys the spec has (session.py
  `_append_sagemaker_config_tags`);
* OutputDataConfig.KmsKeyId and ResourceConfig.VolumeKmsKeyId where the spec has no `output_kms_key` /
  `volume_kms_key`, the volume key only on instances that take an EBS key (utils.py `instance_supports_kms`:
  not g5, g6, p5, trn1 nor a family with `d`, whose volumes are local NVMe);
* ProfilerConfig.DisableProfiler and PythonSDK.Modules.Estimator.DebugHookConfig.

RoleArn and the session's DefaultS3Bucket / DefaultS3ObjectKeyPrefix are resolved with the other account-side
values in `orchestrator.cloud.resolve`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import TypeAdapter, ValidationError

from orchestrator.errors import EnvironmentProblem
from orchestrator.planning.provenance import SDK_DEFAULTS, Source
from orchestrator.planning.sdk_defaults import ESTIMATOR, TRAINING_JOB, SdkDefaults, Setting, lookup
from orchestrator.redact import MASK, is_secret_name, mask_text
from orchestrator.specs.capabilities import Finding
from orchestrator.specs.catalog import local_nvme_volume
from orchestrator.specs.model import JobSpec

_SOURCE = "the SageMaker SDK's defaults configuration (docs/sdk-defaults.md)"


@dataclass(frozen=True)
class TrainingDefaults:
    """The request values that have no spec field, from the SDK defaults (None: not set there)."""

    disable_profiler: bool | None = None
    debug_hook: bool | None = None


@dataclass(frozen=True)
class Applied:
    """A spec with the SDK defaults applied, the request values without a spec field, and the origin of each
    value the defaults supplied (dotted spec paths, and `output_kms_key` ... for the rest)."""

    spec: JobSpec
    request: TrainingDefaults = TrainingDefaults()
    sources: dict[str, Source] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)


def source_of(setting: Setting, key: str | None = None) -> Source:
    return Source(SDK_DEFAULTS, where=setting.file.location, key=key or setting.key, level=setting.file.level)


def instance_supports_kms(instance_type: str) -> bool:
    """sagemaker/utils.py `volume_size_supported`: instances whose volume is local NVMe take no EBS KMS key."""
    return not local_nvme_volume(instance_type)


def apply_training_defaults(spec: JobSpec, defaults: SdkDefaults) -> Applied:
    """The spec as the SDK would complete it from `defaults`; findings where the spec contradicts the admin."""
    if not defaults.files:
        return Applied(spec)
    sources: dict[str, Source] = {}
    network: dict[str, Any] = {}
    said = spec.network.model_fields_set
    for name, key in (("subnets", "VpcConfig.Subnets"), ("security_group_ids", "VpcConfig.SecurityGroupIds")):
        setting = defaults.get(f"{TRAINING_JOB}.{key}")
        if setting is not None and not getattr(spec.network, name):
            network[name] = list(setting.value)
            sources[f"network.{name}"] = source_of(setting)
    for name, key in (("enable_network_isolation", "EnableNetworkIsolation"),
                      ("encrypt_inter_container_traffic", "EnableInterContainerTrafficEncryption")):
        setting = defaults.get(f"{TRAINING_JOB}.{key}")
        if setting is not None and name not in said:
            network[name] = setting.value
            sources[f"network.{name}"] = source_of(setting)
    update: dict[str, Any] = {}
    if network:
        update["network"] = spec.network.model_copy(update=network)
    environment = defaults.get(f"{TRAINING_JOB}.Environment")
    if environment is not None and "environment" not in spec.model_fields_set:
        update["environment"] = {str(name): str(value) for name, value in environment.value.items()}
        for name in environment.value:
            sources[f"environment.{name}"] = source_of(defaults.get(f"{TRAINING_JOB}.Environment.{name}"))
    tags = defaults.get(f"{TRAINING_JOB}.Tags")
    if tags is not None:
        merged = dict(spec.tags)
        for tag in tags.value:
            if tag["Key"] not in merged:
                merged[tag["Key"]] = tag["Value"]
                sources[f"tags.{tag['Key']}"] = source_of(tags)
        update["tags"] = merged
    for name in ("environment", "tags"):
        if name in update:
            _check_as_spec_field(name, update[name], defaults)
    keys, request, extra = _request_values(spec, defaults)
    update.update(keys)
    sources.update(extra)
    applied = spec.model_copy(update=update) if update else spec
    return Applied(applied, request, sources, contradictions(spec, defaults))


def _check_as_spec_field(name: str, value: dict[str, str], defaults: SdkDefaults) -> None:
    """The defaults' environment or tags (as merged into the spec's) held to the spec field's own rules: what
    SageMaker refuses from a spec it refuses from a defaults file too (`model_copy` does not validate).

    Raises:
        EnvironmentProblem: naming the defaults file, the key and the rule; values are never shown.
    """
    spec_field = JobSpec.model_fields[name]
    try:
        TypeAdapter(Annotated[spec_field.annotation, spec_field]).validate_python(value)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        key = f"{TRAINING_JOB}.{'Environment' if name == 'environment' else 'Tags'}"
        files = ", ".join(config.location for config in defaults.files if lookup(config.document, key) is not None)
        where = ".".join(str(part) for part in error["loc"] if part != "[key]")
        context = error.get("ctx") or {}
        message = context.get("message") or error["msg"]
        if error["type"] == "too_long":
            message = f"{len(value)} entries; SageMaker allows at most {context.get('max_length')}"
        fix = context.get("fix") or "remove entries"
        raise EnvironmentProblem(f"{files}: {key}{f' {where}' if where else ''}: {message} (as {name} of the "
                                 "spec it applies to; SageMaker would refuse the job)",
                                 fix=f"{fix}, in the SDK defaults file or in the spec") from None


def _request_values(spec: JobSpec, defaults: SdkDefaults) -> tuple[dict[str, Any], TrainingDefaults,
                                                                   dict[str, Source]]:
    """The KMS keys (spec fields: the spec's own win) and the values without a spec field."""
    update: dict[str, Any] = {}
    values: dict[str, Any] = {}
    sources: dict[str, Source] = {}
    keys = {"output_kms_key": f"{TRAINING_JOB}.OutputDataConfig.KmsKeyId",
            "volume_kms_key": f"{TRAINING_JOB}.ResourceConfig.VolumeKmsKeyId",
            "disable_profiler": f"{TRAINING_JOB}.ProfilerConfig.DisableProfiler",
            "debug_hook": f"{ESTIMATOR}.DebugHookConfig"}
    for name, key in keys.items():
        setting = defaults.get(key)
        if setting is None or (name == "volume_kms_key" and not _takes_volume_key(spec)):
            continue
        if name.endswith("_kms_key"):
            if getattr(spec, name) is not None:
                continue
            update[name] = setting.value
        else:
            values[name] = setting.value
        sources[name] = source_of(setting)
    return update, TrainingDefaults(**values), sources


def _takes_volume_key(spec: JobSpec) -> bool:
    """estimator.py: the config's volume key only where an instance type (or a group's) takes one."""
    instance = spec.instance
    types = [instance.type] if instance.type else []
    types += [group.type for group in instance.groups] + [choice.type for choice in instance.preferences]
    return any(instance_supports_kms(name) for name in types)


def sdk_defaults_findings(spec: JobSpec, defaults: SdkDefaults) -> list[Finding]:
    """What `validate` says about the SDK defaults: contradictions with the admin's, and S3 locations that
    only plan and submit read."""
    unread = [Finding(rule="sdk-defaults-unread", severity="notice", field="",
                      message=f"the SageMaker SDK defaults at {location} are read by plan and submit, not by "
                              "validate (offline)", fix="run `smtrain plan` to see the values they apply",
                      source=_SOURCE) for location in defaults.unread]
    return [*apply_training_defaults(spec, defaults).findings, *unread]


def contradictions(spec: JobSpec, defaults: SdkDefaults) -> list[Finding]:
    """A finding for each value the spec writes that differs from the admin's default, naming both."""
    admin_file = next((config.location for config in defaults.files if config.level == "admin"), None)
    if admin_file is None:
        return []
    found = []

    def differs(field_name: str, key: str, spec_value: Any, fix: str) -> None:
        admin = defaults.admin_value(f"{TRAINING_JOB}.{key}")
        if isinstance(admin, dict) and isinstance(spec_value, dict):
            admin = {name: admin[name] for name in spec_value}
        if admin is not None and spec_value is not None and spec_value != admin:
            found.append(Finding(
                rule="contradicts-admin-sdk-defaults", severity="warning", field=field_name,
                message=f"the spec's {field_name}: {_shown(spec_value)} contradicts the admin's SDK defaults "
                        f"({admin_file}: SageMaker.TrainingJob.{key}: {_shown(admin)}); the spec's value is sent, "
                        "and a policy that requires the admin's may refuse the job",
                fix=fix, source=_SOURCE))

    said = spec.network.model_fields_set
    for name, key in (("enable_network_isolation", "EnableNetworkIsolation"),
                      ("encrypt_inter_container_traffic", "EnableInterContainerTrafficEncryption")):
        if name in said:
            differs(f"network.{name}", key, getattr(spec.network, name), f"remove network.{name} from the spec")
    for name, key in (("subnets", "VpcConfig.Subnets"), ("security_group_ids", "VpcConfig.SecurityGroupIds")):
        value = getattr(spec.network, name)
        differs(f"network.{name}", key, list(value) if value else None,
                "remove network.subnets and network.security_group_ids to use the admin's VPC")
    for name, key in (("output_kms_key", "OutputDataConfig.KmsKeyId"),
                      ("volume_kms_key", "ResourceConfig.VolumeKmsKeyId")):
        differs(name, key, getattr(spec, name), f"remove {name} from the spec to use the admin's key")
    differs("role", "RoleArn", spec.role if spec.role and spec.role.startswith("arn:") else None,
            "remove role: from the spec to use the admin's role")
    admin_environment = defaults.admin_value(f"{TRAINING_JOB}.Environment") or {}
    lost = {name: value for name, value in admin_environment.items() if spec.environment.get(name) != str(value)}
    if "environment" in spec.model_fields_set and lost:
        # A spec's environment replaces the config's whole: only the admin's variables it drops or changes matter.
        differs("environment", "Environment", {name: spec.environment.get(name, "(unset)") for name in lost},
                "write the admin's variables into the spec's environment, or remove environment: to get them")
    admin_tags = {tag["Key"]: tag["Value"] for tag in defaults.admin_value(f"{TRAINING_JOB}.Tags") or []}
    for name, value in spec.tags.items():
        if name in admin_tags and admin_tags[name] != value:
            found.append(Finding(
                rule="contradicts-admin-sdk-defaults", severity="warning", field=f"tags.{name}",
                message=f"the spec's tags.{name}: {_shown_tag(name, value)} contradicts the admin's SDK defaults "
                        f"({admin_file}: SageMaker.TrainingJob.Tags {name}={_shown_tag(name, admin_tags[name])}); "
                        "the spec's tag is sent",
                fix=f"remove tags.{name} from the spec to carry the admin's value", source=_SOURCE))
    return found


def _shown_tag(name: str, value: str) -> str:
    return MASK if is_secret_name(name) or mask_text(value) != value else repr(value)


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, dict):
        return "{" + ", ".join(f"{name}: {MASK if is_secret_name(name) else item}" for name, item in value.items()) + "}"
    return str(value)
