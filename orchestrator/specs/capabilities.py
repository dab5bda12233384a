"""Checks a spec against the capability matrix: mode x instance family x framework version x count.

The rules' lists, texts, sources and severities are data (`data/capabilities.yaml`); this module holds one
predicate per rule id. Checking is pure and fast: it reads the SDK's image list from the installed package's
JSON file without importing `sagemaker`.
"""

from __future__ import annotations

import re
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import date
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from orchestrator.contract import REQUIREMENTS_FILE, ZERO_STAGE_TRAINERS
from orchestrator.redact import holds_no_secret, is_secret_name, redact_value
from orchestrator.specs import images
from orchestrator.specs.catalog import InstanceType, lookup
from orchestrator.specs.datafiles import load_data_file
from orchestrator.specs.equals_arguments import equals_reader
from orchestrator.specs.image_pins import replaced_packages
from orchestrator.specs.model import JobSpec
from orchestrator.specs.modes import Mode
from orchestrator.specs.overwritten_environment import overwritten_values
from orchestrator.specs.topology import processes_per_host
from orchestrator.specs.words import SPEC_WORDS, FieldWords

Severity = Literal["error", "unverified", "warning", "notice"]
_SMDDP_MODES = tuple(mode for mode in Mode if mode.runs_smddp)
_SHELL_UNSAFE = re.compile(r"[\s*?\[\]$`'\"\\;&|<>(){}]")
BUNDLED_SCRIPT = Path(__file__).resolve().parents[2] / "entrypoints" / "train.py"
"""smtrain's own training script, in a checkout (an installed package has none)."""


@dataclass(frozen=True)
class Finding:
    """One rule's verdict on a spec, pointing at the field to change."""

    rule: str
    severity: Severity
    field: str
    message: str
    fix: str
    source: str

    def blocks(self, allow_unverified: bool) -> bool:
        return self.severity == "error" or (self.severity == "unverified" and not allow_unverified)


@dataclass(frozen=True)
class _Rule:
    id: str
    severity: Severity
    source: str
    checked: str
    message: str
    fix: str
    script_fix: str | None = None
    """The fix for a job that runs its own script, where `fix` names smtrain's train.py hyperparameters."""


@lru_cache(maxsize=1)
def _matrix() -> tuple[dict[str, _Rule], dict[str, Any]]:
    data = load_data_file("capabilities.yaml")
    rules = {row["id"]: _Rule(**row) for row in data["rules"]}
    return rules, data["lists"]


def runs_bundled_script(spec: JobSpec) -> bool:
    """Whether the job runs smtrain's own entrypoints/train.py (or a copy of it): only then does advice in its
    hyperparameters' words (`trainer gloo`) mean something. Only a regular file the bundled script's size is read:
    a FIFO named train.py would hold validate forever, and a link to /dev/zero fill its memory."""
    entry_point = Path(spec.source_dir) / spec.entry_point
    try:
        if entry_point.resolve() == BUNDLED_SCRIPT:
            return True
        if entry_point.name != BUNDLED_SCRIPT.name:
            return False
        found = entry_point.stat()
        return (stat.S_ISREG(found.st_mode) and found.st_size == BUNDLED_SCRIPT.stat().st_size
                and entry_point.read_bytes() == BUNDLED_SCRIPT.read_bytes())
    except (OSError, RuntimeError, ValueError):  # RuntimeError: a link loop before Python 3.13; ValueError: a NUL
        return False


def rules() -> dict[str, _Rule]:
    return _matrix()[0]


def lists() -> dict[str, Any]:
    return _matrix()[1]


def resolved_py_version(spec: JobSpec) -> str | None:
    """The spec's py_version, else the newest Python of its framework version's image."""
    if spec.py_version or spec.framework_version is None:
        return spec.py_version
    return images.default_python(spec.framework_version)


class _Context:
    """What the predicates need, computed once per check."""

    def __init__(self, spec: JobSpec) -> None:
        self.spec = spec
        self.mode = spec.distribution.mode
        self.instance: InstanceType = lookup(spec.instance_type)
        self.trainer = spec.hyperparameters.get("trainer")
        self.custom_image = spec.image_uri is not None
        self.py_version = resolved_py_version(spec)
        self.image = images.lookup(spec.framework_version) if spec.framework_version else None
        self.bundled_script = runs_bundled_script(spec)

    def facts(self) -> dict[str, Any]:
        spec, instance = self.spec, self.instance
        return {
            "mode": self.mode.value,
            "instance_type": instance.name,
            "family": instance.family,
            "count": spec.host_count,
            "framework_version": spec.framework_version,
            "py_version": self.py_version,
            "processes_per_host": spec.distribution.processes_per_host or processes_per_host(spec, instance),
            "gpus": instance.gpus,
            "vcpus": instance.vcpus,
            "trainer": self.trainer,
            "max_run": spec.max_run_seconds,
            "max_wait": spec.spot.max_wait_seconds,
            "keep_alive": spec.keep_alive_seconds,
        }


# A predicate yields (field, extra format values) for each place the rule is broken.
_Hit = tuple[str, dict[str, Any]]
_Predicate = Callable[[_Context], Iterator[_Hit]]
_PREDICATES: dict[str, _Predicate] = {}


def _rule(rule_id: str) -> Callable[[_Predicate], _Predicate]:
    def register(predicate: _Predicate) -> _Predicate:
        _PREDICATES[rule_id] = predicate
        return predicate

    return register


def _versions_text(versions: list[str]) -> str:
    return ", ".join(versions)


def _offered_versions() -> str:
    return ", ".join(f"{version} ({'/'.join(image.python)})" for version, image in images.versions().items())


@_rule("image-exists")
def _image_exists(ctx: _Context) -> Iterator[_Hit]:
    if ctx.custom_image:
        return
    # Named as the spec has them: a py_version it leaves out is no part of the problem (it printed as None).
    version = f"framework_version {ctx.spec.framework_version!r}"
    offered = f"one of: {_offered_versions()}"
    if ctx.instance.accelerator == "trainium":
        yield "image_uri", {"value": version, "versions": offered}
    elif ctx.image is None:
        yield "framework_version", {"value": version, "versions": offered}
    elif ctx.py_version not in ctx.image.python:
        pythons = "/".join(ctx.image.python)
        yield "py_version", {"value": f"{version} with py_version {ctx.py_version!r}",
                             "versions": f"py_version {pythons} (the Python of the {ctx.spec.framework_version} images), "
                                         f"or another framework_version, {offered}"}


@_rule("image-end-of-patch")
def _image_end_of_patch(ctx: _Context) -> Iterator[_Hit]:
    image = ctx.image
    if ctx.custom_image or image is None or ctx.instance.accelerator == "trainium":
        return
    patched = [version for version, other in images.versions().items()
               if other.eop and other.eop >= date.today() and not other.unverified]
    versions = ", ".join(patched)
    if ctx.mode in _SMDDP_MODES and not any(images.versions()[version].smddp for version in patched):
        versions += " with mode torch_distributed (no image AWS still patches carries SMDDP)"
    if image.eop is not None and image.eop < date.today():
        yield "framework_version", {"value": f"on {image.eop.isoformat()}", "versions": versions}
    elif image.eop is None and not image.unverified:
        yield "framework_version", {"value": "before 2026 (the DLC release data starts at 2.6)",
                                    "versions": versions}


@_rule("image-unconfirmed")
def _image_unconfirmed(ctx: _Context) -> Iterator[_Hit]:
    if not ctx.custom_image and ctx.image is not None and ctx.image.unverified:
        yield "framework_version", {"value": ctx.image.repository}


@_rule("torch-distributed-needs-accelerator")
def _torch_distributed_cpu(ctx: _Context) -> Iterator[_Hit]:
    if ctx.mode is Mode.torch_distributed and not ctx.custom_image and ctx.instance.accelerator == "cpu":
        yield "distribution.mode", {}


@_rule("torch-distributed-trainium-versions")
def _torch_distributed_trainium_versions(ctx: _Context) -> Iterator[_Hit]:
    versions = lists()["trainium_torch_distributed_versions"]
    if (ctx.mode is Mode.torch_distributed and not ctx.custom_image and ctx.instance.accelerator == "trainium"
            and ctx.spec.framework_version not in versions):
        yield "framework_version", {"versions": _versions_text(versions)}


@_rule("trainium-only-torch-distributed")
def _trainium_strategy(ctx: _Context) -> Iterator[_Hit]:
    if ctx.instance.accelerator == "trainium" and ctx.mode in (Mode.mpi, *_SMDDP_MODES):
        yield "distribution.mode", {}


@_rule("smddp-versions")
def _smddp_versions(ctx: _Context) -> Iterator[_Hit]:
    if ctx.mode in _SMDDP_MODES and not ctx.custom_image and ctx.image is not None and not ctx.image.smddp:
        with_smddp = [version for version, image in images.versions().items() if image.smddp]
        yield "distribution.mode", {"versions": _versions_text(with_smddp)}


@_rule("smddp-p5")
def _smddp_p5(ctx: _Context) -> Iterator[_Hit]:
    # The SDK's test is a substring match, so p5e/p5en pass it; they fall to smddp-instance-list instead.
    if ctx.mode in _SMDDP_MODES and "p5.48xlarge" in ctx.instance.name:
        yield "instance.type", {}


@_rule("smddp-needs-gpu")
def _smddp_needs_gpu(ctx: _Context) -> Iterator[_Hit]:
    if ctx.mode in _SMDDP_MODES and ctx.instance.accelerator == "cpu":
        yield "instance.type", {}


@_rule("smddp-instance-list")
def _smddp_instance_list(ctx: _Context) -> Iterator[_Hit]:
    supported = lists()["smdataparallel_instance_types"]
    if (ctx.mode in _SMDDP_MODES and ctx.instance.accelerator == "gpu" and ctx.instance.name not in supported
            and "p5.48xlarge" not in ctx.instance.name):
        yield "instance.type", {"versions": _versions_text(supported)}


@_rule("pytorchddp-is-smddp")
def _pytorchddp_rewrite(ctx: _Context) -> Iterator[_Hit]:
    if ctx.mode is Mode.pytorchddp:
        yield "distribution.mode", {}


def _processes_per_host_unsent(ctx: _Context) -> tuple[int, int] | None:
    """(what the spec asks, what the container starts) where the SDK does not send processes_per_host."""
    requested = ctx.spec.distribution.processes_per_host
    if requested and ctx.mode in (Mode.torch_distributed, *_SMDDP_MODES):
        return requested, processes_per_host(ctx.spec, ctx.instance)
    return None


@_rule("processes-per-host-not-sent")
def _processes_not_sent(ctx: _Context) -> Iterator[_Hit]:
    unsent = _processes_per_host_unsent(ctx)
    # On a type outside the catalog the device count is a guess, so only a known match is harmless.
    if unsent and not (ctx.instance.known and unsent[0] == unsent[1]):
        yield "distribution.processes_per_host", {"processes_per_host": unsent[0]}


@_rule("processes-per-host-as-default")
def _processes_as_default(ctx: _Context) -> Iterator[_Hit]:
    unsent = _processes_per_host_unsent(ctx)
    if unsent and ctx.instance.known and unsent[0] == unsent[1]:
        yield "distribution.processes_per_host", {"processes_per_host": unsent[0], "value": unsent[1]}


@_rule("hyperparameter-on-command-line")
def _secret_hyperparameter(ctx: _Context) -> Iterator[_Hit]:
    for name, value in ctx.spec.hyperparameters.items():
        if is_secret_name(name) and value != "" and not holds_no_secret(value, name):  # what masking shows
            yield f"hyperparameters.{name}", {"name": name}


@_rule("environment-overwritten-by-container")
def _environment_overwritten(ctx: _Context) -> Iterator[_Hit]:
    for item in overwritten_values(ctx.spec):
        yield f"environment.{item.name}", {"name": item.name, "value": item.value, "setter": item.setter,
                                           "container_value": item.container_value, "fix_text": item.fix}


@_rule("mode-none-one-process")
def _mode_none_one_process(ctx: _Context) -> Iterator[_Hit]:
    requested = ctx.spec.distribution.processes_per_host
    if ctx.mode is Mode.none and requested is not None and requested != 1:
        yield "distribution.processes_per_host", {"processes_per_host": requested}


@_rule("custom-mpi-options-mpi-only")
def _custom_mpi_options(ctx: _Context) -> Iterator[_Hit]:
    if ctx.spec.distribution.custom_mpi_options and ctx.mode not in (Mode.mpi, Mode.smddp):
        yield "distribution.custom_mpi_options", {}


@_rule("dp-single-host")
def _dp_single_host(ctx: _Context) -> Iterator[_Hit]:
    if ctx.trainer == "dp" and ctx.spec.host_count > 1:
        yield "hyperparameters.trainer", {}


@_rule("dp-without-gpus")
def _dp_without_gpus(ctx: _Context) -> Iterator[_Hit]:
    if ctx.trainer == "dp" and ctx.instance.accelerator != "gpu":
        yield "hyperparameters.trainer", {}


@_rule("nccl-needs-gpu")
def _nccl_needs_gpu(ctx: _Context) -> Iterator[_Hit]:
    if ctx.trainer == "ddp" and ctx.instance.accelerator != "gpu":
        yield "hyperparameters.trainer", {}


@_rule("gloo-on-gpu")
def _gloo_on_gpu(ctx: _Context) -> Iterator[_Hit]:
    if ctx.trainer == "gloo" and ctx.instance.gpus:
        yield "hyperparameters.trainer", {}


@_rule("mode-none-idle-gpus")
def _mode_none_idle_gpus(ctx: _Context) -> Iterator[_Hit]:
    if ctx.mode is Mode.none and ctx.instance.gpus > 1 and ctx.trainer not in ("dp", "gloo", "model_parallel"):
        yield "distribution.mode", {}


@_rule("processes-exceed-gpus")
def _processes_exceed_gpus(ctx: _Context) -> Iterator[_Hit]:
    requested = ctx.spec.distribution.processes_per_host
    if (ctx.mode is Mode.mpi and requested and ctx.instance.gpus and requested > ctx.instance.gpus
            and ctx.trainer in ("ddp", "auto", None)):
        yield "distribution.processes_per_host", {"processes_per_host": requested}


@_rule("processes-exceed-vcpus")
def _processes_exceed_vcpus(ctx: _Context) -> Iterator[_Hit]:
    requested = ctx.spec.distribution.processes_per_host
    if ctx.mode is Mode.mpi and requested and ctx.instance.vcpus and requested > ctx.instance.vcpus:
        yield "distribution.processes_per_host", {"processes_per_host": requested}


@_rule("spot-max-wait")
def _spot_max_wait(ctx: _Context) -> Iterator[_Hit]:
    spot = ctx.spec.spot
    if spot.enabled and (spot.max_wait_seconds or 0) < ctx.spec.max_run_seconds:
        yield "spot.max_wait_seconds", {"max_wait": spot.max_wait_seconds or 0}


@_rule("spot-needs-checkpoint")
def _spot_needs_checkpoint(ctx: _Context) -> Iterator[_Hit]:
    if ctx.spec.spot.enabled and ctx.spec.checkpoint is None:
        yield "spot.enabled", {}


@_rule("spot-no-warm-pool")
def _spot_no_warm_pool(ctx: _Context) -> Iterator[_Hit]:
    if ctx.spec.spot.enabled and ctx.spec.keep_alive_seconds:
        yield "keep_alive_seconds", {}


@_rule("unknown-instance-type")
def _unknown_instance(ctx: _Context) -> Iterator[_Hit]:
    if not ctx.instance.known:
        yield "instance.type", {}


@_rule("region-has-images")
def _region_has_images(ctx: _Context) -> Iterator[_Hit]:
    region = ctx.spec.region
    if region is not None and not ctx.custom_image and images.registry_account(region) is None:
        yield "region", {"value": region, "fix_text": images.region_fix(region)}


@_rule("hyperparameter-shell-split")
def _shell_split(ctx: _Context) -> Iterator[_Hit]:
    for key, value in ctx.spec.hyperparameters.items():  # the name is on the same command line as its value
        if value is None or isinstance(value, (list, dict)) or _SHELL_UNSAFE.search(key) or (
                isinstance(value, str) and (value == "" or _SHELL_UNSAFE.search(value))):
            yield f"hyperparameters.{key}", {"key": key, "value": redact_value(key, value)}


@_rule("hyperparameters-as-two-arguments")
def _hyperparameters_as_two_arguments(ctx: _Context) -> Iterator[_Hit]:
    if not ctx.spec.hyperparameters or ctx.bundled_script:
        return
    found = equals_reader(ctx.spec.source_dir, ctx.spec.entry_point)
    if found is not None:
        key = sorted(ctx.spec.hyperparameters)[0]  # the toolkit passes them sorted: the first is refused
        yield "entry_point", {"script": ctx.spec.entry_point, "where": found.where(ctx.spec.entry_point),
                              "argument": f"-{key}" if len(key) == 1 else f"--{key}",
                              "value": redact_value(key, ctx.spec.hyperparameters[key])}


@_rule("requirements-replace-image-package")
def _requirements_replace_image_package(ctx: _Context) -> Iterator[_Hit]:
    if ctx.custom_image or ctx.spec.framework_version is None:
        return
    for replaced in replaced_packages(ctx.spec.source_dir, ctx.spec.framework_version):
        yield "source_dir", {"where": f"{Path(ctx.spec.source_dir).name}/{REQUIREMENTS_FILE}:{replaced.line}",
                             "requirement": replaced.requirement, "distribution": replaced.distribution,
                             "shipped": replaced.shipped}


@_rule("vpc-needs-both")
def _vpc_needs_both(ctx: _Context) -> Iterator[_Hit]:
    network = ctx.spec.network
    if bool(network.subnets) != bool(network.security_group_ids):
        yield "network.subnets" if not network.subnets else "network.security_group_ids", {}


@_rule("encryption-single-host")
def _encryption_single_host(ctx: _Context) -> Iterator[_Hit]:
    if ctx.spec.network.encrypt_inter_container_traffic and ctx.spec.host_count == 1:
        yield "network.encrypt_inter_container_traffic", {}


@_rule("multi-node-without-efa")
def _multi_node_without_efa(ctx: _Context) -> Iterator[_Hit]:
    if (ctx.spec.host_count > 1 and ctx.instance.gpus and ctx.instance.known and not ctx.instance.efa
            and ctx.mode is not Mode.none):
        yield "instance.type", {}


@_rule("fsdp-needs-2.6")
def _fsdp_needs_26(ctx: _Context) -> Iterator[_Hit]:
    version = ctx.image.version if ctx.image else None
    if ctx.trainer == "fsdp" and version and tuple(int(part) for part in version.split(".")[:2]) < (2, 6):
        yield "framework_version", {}


@_rule("model-parallel-one-process-per-host")
def _model_parallel_one_process(ctx: _Context) -> Iterator[_Hit]:
    if ctx.trainer == "model_parallel" and processes_per_host(ctx.spec, ctx.instance) > 1:
        yield "hyperparameters.trainer", {}


@_rule("zero-stage-trainer")
def _zero_stage_trainer(ctx: _Context) -> Iterator[_Hit]:
    stage = str(ctx.spec.hyperparameters.get("zero-stage", "0"))
    trainers = ZERO_STAGE_TRAINERS.get(int(stage)) if stage.isdigit() else None
    trainer = ctx.trainer or "auto"
    # trainer auto picks dp, ddp or gloo from the devices: certain to miss only a stage that needs fsdp
    if trainers and trainer not in trainers and (trainer != "auto" or "fsdp" in trainers):
        yield "hyperparameters.zero-stage", {"stage": stage, "trainer": trainer, "trainers": " or ".join(trainers),
                                             "fix_trainer": trainers[-1]}


@_rule("isolation-code-channel")
def _isolation_code_channel(ctx: _Context) -> Iterator[_Hit]:
    if ctx.spec.network.enable_network_isolation and "code" in ctx.spec.inputs:
        yield "inputs.code", {}


@_rule("entry-point-py")
def _entry_point_py(ctx: _Context) -> Iterator[_Hit]:
    if ctx.mode is Mode.torch_distributed and not ctx.spec.entry_point.endswith(".py"):
        yield "entry_point", {"value": ctx.spec.entry_point}


@_rule("preferences-with-spot")
def _preferences_with_spot(ctx: _Context) -> Iterator[_Hit]:
    if ctx.spec.instance.preferences and ctx.spec.spot.enabled:
        yield "spot.enabled", {}


def _group_names(spec: JobSpec) -> str:
    return ", ".join(group.name for group in spec.instance.groups) or "none"


@_rule("channel-group-missing")
def _channel_group_missing(ctx: _Context) -> Iterator[_Hit]:
    defined = {group.name for group in ctx.spec.instance.groups}
    for name, channel in ctx.spec.inputs.items():
        for index, group in enumerate(channel.instance_groups):
            if group not in defined:
                yield f"inputs.{name}.instance_groups.{index}", {"key": name, "value": group,
                                                                 "groups": _group_names(ctx.spec)}


@_rule("distribution-group-missing")
def _distribution_group_missing(ctx: _Context) -> Iterator[_Hit]:
    defined = {group.name for group in ctx.spec.instance.groups}
    for index, group in enumerate(ctx.spec.distribution.instance_groups):
        if group not in defined:
            yield f"distribution.instance_groups.{index}", {"value": group, "groups": _group_names(ctx.spec)}


_GROUP_LAUNCHER_MODES = (Mode.mpi, Mode.smddp)


@_rule("hetero-one-distribution-group")
def _hetero_one_distribution_group(ctx: _Context) -> Iterator[_Hit]:
    groups = ctx.spec.instance.groups
    if len(groups) > 1 and ctx.mode in _GROUP_LAUNCHER_MODES and len(ctx.spec.distribution.instance_groups) != 1:
        yield "distribution.instance_groups", {"value": len(groups), "first_group": groups[0].name}


@_rule("hetero-distribution-mode")
def _hetero_distribution_mode(ctx: _Context) -> Iterator[_Hit]:
    spec = ctx.spec
    if spec.distribution.instance_groups and ctx.mode is Mode.none:
        yield "distribution.instance_groups", {
            "value": "distribution.instance_groups is set with mode none: the SDK refuses it ('Don't set training "
                     "instance groups while no distribution strategies enabled!')",
            "fix_text": "remove distribution.instance_groups (with mode none every host runs the entry point and "
                        "reads SM_CURRENT_INSTANCE_GROUP), or pick mode mpi or smddp"}
    elif len(spec.instance.groups) > 1 and ctx.mode in (Mode.torch_distributed, Mode.pytorchddp):
        yield "distribution.mode", {
            "value": f"mode {ctx.mode.value} on instance groups: the SDK sends no sagemaker_distribution_instance_groups "
                     "for it, so the toolkit would start a separate launcher in every group",
            "fix_text": "use mode mpi or smddp with distribution.instance_groups: [<group>], or mode none and "
                        "branch on SM_CURRENT_INSTANCE_GROUP in the script"}


def check(spec: JobSpec, words: FieldWords = SPEC_WORDS) -> list[Finding]:
    """Every finding for this spec, errors first; an unverified one's fix ends with the way past it in `words`
    (the rules' data leave it out: a function job's user has no `allow_unverified:` to set)."""
    ctx = _Context(spec)
    facts = ctx.facts()
    findings = []
    for rule_id, rule in rules().items():
        for field, extra in _PREDICATES[rule_id](ctx):
            values = {**facts, **extra}
            fix = rule.fix if ctx.bundled_script or rule.script_fix is None else rule.script_fix
            findings.append(past_unverified(Finding(
                rule=rule_id, severity=rule.severity, field=field, message=rule.message.format(**values),
                fix=fix.format(**values), source=f"{rule.source} (checked {rule.checked})"), words))
    order = {"error": 0, "unverified": 1, "warning": 2, "notice": 3}
    return sorted(findings, key=lambda finding: order[finding.severity])


def past_unverified(finding: Finding, words: FieldWords) -> Finding:
    """An unverified finding with the way past it for one who knows the combination works, in `words`, once."""
    if finding.severity != "unverified" or "allow_unverified" in finding.fix:
        return finding
    return replace(finding, fix=f"{finding.fix}; or, if you know it works, {words.allow_unverified}")


def submit_refusals(spec: JobSpec, findings: Iterable[Finding]) -> list[Finding]:
    """What `submit` refuses in a spec that loads, so that `validate` refuses it too: a finding that blocks
    (`unverified` without allow_unverified; errors never load) and what `plan` refuses as well."""
    blocking = [past_unverified(finding, SPEC_WORDS) for finding in findings if finding.blocks(spec.allow_unverified)]
    return [*blocking, *local_input_refusals(spec, SPEC_WORDS)]


def local_input_refusals(spec: JobSpec, words: FieldWords) -> list[Finding]:
    """A channel given as a local path, which only `smtrain local` reads: `plan` and `submit` refuse it, the fix
    naming a local run's own input as its user (`words`) gives it."""
    return [Finding(
        rule="inputs-local-path", severity="error", field=f"inputs.{name}",
        message=f"{location} is a local path: a SageMaker job reads its channels from S3, so plan and "
                "submit refuse it (smtrain local reads it)",
        fix=f"upload the data and give its s3:// prefix in `inputs`, and keep this folder for smtrain local "
            f"as `local_inputs: {{{name}: {location}}}` (plan and submit ignore it; {words.one_run_input(name)} "
            "overrides it for one run)",
        source="CreateTrainingJob InputDataConfig: S3 data sources")
        for name, location in spec.channel_locations().items() if not location.startswith("s3://")]


def predicate_ids() -> set[str]:
    """Rule ids that have a predicate (the tests check this equals the data file's ids)."""
    return set(_PREDICATES)
