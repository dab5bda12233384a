"""The plan: everything a submit would send, computed before anything is sent.

`build_plan(spec, target)` is pure: it packs the source to learn its content address, builds the exact
CreateTrainingJob request (`request.py`, no SDK), the rank table and the worst-case cost. `submit` sends the
plan's request and adds nothing to it; `smtrain local` runs it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from orchestrator.errors import CapabilityError
from orchestrator.planning.estimator import estimator_kwargs
from orchestrator.planning.job_name import check_job_name, timestamped_job_name
from orchestrator.planning.packaging import DEFAULT_MAX_BYTES, SourcePackage, package
from orchestrator.planning.plan_view import plan_html, summary_line
from orchestrator.planning.provenance import DEFAULT, Source, leaves
from orchestrator.planning.request import (
    RequestContext,
    create_training_job_request,
    require_image_in_region,
    require_request_limits,
)
from orchestrator.planning.target import Target
from orchestrator.redact import mask_text, masks_its_repr, redact
from orchestrator.specs.capabilities import Finding, local_input_refusals
from orchestrator.specs.catalog import InstanceType, catalog, lookup, on_demand_cost
from orchestrator.specs.loader import LoadedSpec
from orchestrator.specs.model import JobSpec
from orchestrator.specs.topology import Topology, topology
from orchestrator.wording import counted

WITHHELD_SHOWN = 5  # the secrets a plan names before "and N more"


@dataclass(frozen=True)
class Cost:
    """The most this job can cost in instance time, at on-demand prices."""

    price_per_instance_hour: float | None
    instance_count: int
    max_billable_seconds: int
    basis: str
    currency: str
    price_source: str

    @property
    def max_total(self) -> float | None:
        return on_demand_cost(self.price_per_instance_hour, self.instance_count, self.max_billable_seconds)

    def to_dict(self) -> dict[str, Any]:
        return {
            "max_total": self.max_total,
            "currency": self.currency,
            "price_per_instance_hour": self.price_per_instance_hour,
            "instance_count": self.instance_count,
            "max_billable_seconds": self.max_billable_seconds,
            "basis": self.basis,
            "price_source": self.price_source,
        }


def worst_case_cost(spec: JobSpec, instance: InstanceType) -> Cost:
    """price x count x (max_run, or max_wait for spot) plus the warm-pool time, at on-demand prices."""
    prices = catalog()
    if spec.spot.enabled:
        seconds = spec.spot.max_wait_seconds or spec.max_run_seconds
        basis = ("on-demand price x count x max_wait_seconds: an upper bound, since spot bills only training time "
                 "at a discount")
    else:
        seconds = spec.max_run_seconds
        basis = "on-demand price x count x max_run_seconds"
    if spec.keep_alive_seconds:
        seconds += spec.keep_alive_seconds
        basis += " + keep_alive_seconds (warm pool)"
    price, count = instance.price_per_hour, spec.host_count
    if spec.instance.groups:
        # hosts of different types: the price is the groups' count-weighted mean, so price x count is their sum
        group_prices = [(lookup(group.type).price_per_hour, group.count) for group in spec.instance.groups]
        price = None if any(each is None for each, _ in group_prices) else \
            sum(each * number for each, number in group_prices) / count  # type: ignore[operator]
        basis += " (instance groups: the sum of each group's price x count)"
    elif spec.instance.preferences:
        # SageMaker picks one preference: the dearest is the bound
        options = [(lookup(item.type).price_per_hour, item.count or spec.instance.count)
                   for item in spec.instance.preferences]
        if all(each is not None for each, _ in options):
            price, count = max(options, key=lambda option: option[0] * option[1])  # type: ignore[operator]
        else:
            price = None
        basis += " (instance preferences: the dearest preference)"
    return Cost(price_per_instance_hour=price, instance_count=count,
                max_billable_seconds=seconds, basis=basis, currency=prices.currency,
                price_source=prices.price_source)


@masks_its_repr(lambda plan: plan.spec.secret_values())
@dataclass(frozen=True)
class Plan:
    """A job ready to submit, and everything a person needs to check before it is."""

    spec: JobSpec
    job_name: str
    target: Target
    instance: InstanceType
    topology: Topology
    source: SourcePackage
    estimator_kwargs: dict[str, Any]
    create_training_job_request: dict[str, Any]
    cost: Cost
    findings: list[Finding]
    loaded: LoadedSpec = field(repr=False, compare=False)
    """What it was planned from (`spec` is its spec): another place plans it again from this."""
    sources: dict[str, Source] = field(default_factory=dict)
    """Where each resolved value came from: every leaf of the spec (dotted), plus the request values that have
    no spec field (output_kms_key, volume_kms_key, disable_profiler, debug_hook)."""

    @property
    def source_uri(self) -> str:
        # Not read back from sagemaker_submit_directory: with network isolation that is the container's path.
        return self.source.s3_uri(self.target.code_location)

    @property
    def source_shown(self) -> Path:
        """The folder a failure names the user's files in: the source dir, or the one its copy came from."""
        return self.loaded.source_known_as or self.source.directory

    @property
    def inputs(self) -> dict[str, str]:
        return self.spec.channel_locations()

    def blocking_findings(self) -> list[Finding]:
        return [finding for finding in self.findings if finding.blocks(self.spec.allow_unverified)]

    def allowing_unverified(self) -> Plan:
        """This plan as if its spec said `allow_unverified: true` (the API's `submit(plan, allow_unverified=True)`):
        the request is the same; submit no longer refuses its unverified findings."""
        loaded = self.loaded.allowing_unverified()
        return replace(self, spec=loaded.spec, loaded=loaded, sources=value_sources(loaded, self.target))

    def __repr__(self) -> str:
        """`Plan('name', <spec>: mode, hosts -> world size, region ..., worst-case cost ..., 1 warning)`: the
        dataclass's repr is every field of the spec and request, pages of it in a notebook."""
        cost = self.cost
        worst = (f"{cost.currency} {cost.max_total:,.2f}" if cost.max_total is not None else "no price on record")
        severities = [finding.severity for finding in self.findings]
        plural = {"unverified": "unverified"}  # an adjective: `2 unverified`, not `2 unverifieds`
        counts = "".join(f", {counted(severities.count(severity), severity, plural.get(severity))}"
                         for severity in dict.fromkeys(severities))
        return (f"Plan({self.job_name!r}, {summary_line(self.spec)}, region {self.target.region}, "
                f"worst-case cost {worst}{counts})")

    def _repr_html_(self) -> str:
        """What a notebook shows: the lines of `smtrain plan`."""
        return plan_html(self)

    def to_dict(self) -> dict[str, Any]:
        """The printable plan (`smtrain plan --output json`), with secret-looking values masked."""
        return redact({
            "job_name": self.job_name,
            "spec": self.spec.model_dump(mode="json"),
            "ranks": [row.__dict__ for row in self.topology.ranks()],
            "estimator_kwargs": self.estimator_kwargs,
            "create_training_job_request": self.create_training_job_request,
            "cost": self.cost.to_dict(),
            "warnings": [finding.__dict__ for finding in self.findings],
            "sources": {name: source.to_dict() for name, source in self.sources.items()},
            "source": {"directory": str(self.source.directory), "files": list(self.source.files),
                       "size_bytes": self.source.size_bytes, "sha256": self.source.sha256,
                       "s3_uri": self.source_uri},
        })


def _spec_file_with_secrets(spec: LoadedSpec) -> tuple[Path, ...]:
    """The spec file, when it holds secret values: with the default source_dir it would be packed beside the
    code, and the job does not need it (it gets those values through the request)."""
    if spec.path is None:
        return ()
    job_spec = spec.spec
    return (spec.path,) if job_spec.secret_values() else ()


def build_plan(spec: LoadedSpec, target: Target, *, job_name: str | None = None,
               max_source_bytes: int = DEFAULT_MAX_BYTES, local_inputs: bool = False) -> Plan:
    """The plan for a spec going to `target`. Pure: no AWS call, no SDK.

    Args:
        job_name: the exact job name; default: the spec's name plus a unique timestamp suffix.
        local_inputs: channels may be local paths (the emulator's plans); a SageMaker job reads only S3.

    Raises:
        SpecError / CapabilityError: the spec cannot be planned; nothing was sent.
    """
    if job_name is not None:
        check_job_name(job_name)
    job_spec = spec.spec
    findings = spec.findings
    errors = [finding for finding in findings if finding.severity == "error"]
    if errors:
        raise CapabilityError("\n".join(f"{finding.field}: {finding.message}" for finding in errors),
                              fix="; ".join(finding.fix for finding in errors))
    refused_inputs = [] if local_inputs else local_input_refusals(job_spec, spec.field_words)
    if refused_inputs:
        raise spec.refusal(refused_inputs)
    if target.region_is_fallback:
        findings = [*findings, Finding(rule="region-fallback", severity="notice", field="region",
                                       message=f"no AWS region configured; planned for {target.region}",
                                       fix=f"{spec.field_words.name_region()}, or set AWS_REGION",
                                       source="boto3 region chain")]
    findings = [*findings, *(Finding(rule="needed-by-submit", severity="notice", field=item.field,
                                     message=f"submit needs it: {item.message}", fix=item.fix, source="smtrain")
                             for item in target.missing), *_beyond_the_roles_reach(spec, target)]
    require_image_in_region(job_spec, target.region)
    instance = lookup(job_spec.instance_type)
    source = package(job_spec.source_dir, max_source_bytes, withhold=_spec_file_with_secrets(spec))
    if source.withheld:
        shown = ", ".join(source.withheld[:WITHHELD_SHOWN]) + (
            f" and {len(source.withheld) - WITHHELD_SHOWN} more" if len(source.withheld) > WITHHELD_SHOWN else "")
        findings = [*findings, Finding(
            rule="source-secrets-left-out", severity="notice", field="source_dir",
            message=f"left out of the source package, as credentials or keys are: {shown}",
            fix="pass secrets through environment: or an input channel; rename a file the job needs (e.g. a "
                "package named credentials/)", source="packaging.SECRETS")]
    source_uri = source.s3_uri(target.code_location)
    name = job_name or timestamped_job_name(job_spec.name)
    request = create_training_job_request(RequestContext(spec=job_spec, target=target, instance=instance,
                                                         job_name=name, source_uri=source_uri))
    require_request_limits(request)
    return Plan(spec=job_spec, loaded=spec, job_name=name, target=target, instance=instance, topology=topology(job_spec, instance),
                source=source, estimator_kwargs=estimator_kwargs(job_spec, target, source_uri),
                create_training_job_request=request, cost=worst_case_cost(job_spec, instance), findings=findings,
                sources=value_sources(spec, target))


def value_sources(spec: LoadedSpec, target: Target) -> dict[str, Source]:
    """The origin of every leaf of the spec, then of the request values without a spec field: what resolving
    filled in (target.sources), else the spec file's line or --set, else the model's default."""
    job_spec = spec.spec
    secrets = job_spec.secret_values()  # --set texts hold values
    found: dict[str, Source] = {}
    for path, _ in leaves(job_spec.model_dump(mode="json")):
        if path in target.sources:
            found[path] = target.sources[path]
        elif spec.built_in_python:  # no file and no line to name
            found[path] = Source("spec")
        else:
            origin = spec.origin(path)
            found[path] = Source(origin, mask_text(spec.where(path), secrets)) if origin else Source(DEFAULT)
    found.update((path, source) for path, source in target.sources.items() if path not in found)
    return found


def _beyond_the_roles_reach(spec: LoadedSpec, target: Target) -> list[Finding]:
    """Where the job writes that the infra stack's role may not: SageMaker would train to the end, then fail to
    upload the model (or, for checkpoints and TensorBoard, fail as it syncs them), the hours billed."""
    reach = target.role_writes
    if reach is None:
        return []
    job_spec = spec.spec
    destinations = [("output_path", target.output_path, (reach.outputs, reach.checkpoints)),
                    ("checkpoint.s3_uri", job_spec.checkpoint.s3_uri if job_spec.checkpoint else None,
                     (reach.checkpoints,)),
                    ("tensorboard.s3_uri", job_spec.tensorboard.s3_uri if job_spec.tensorboard else None,
                     (reach.outputs, reach.checkpoints))]
    return [Finding(rule="beyond-the-stack-role", severity="warning", field=name,
                    message=f"the infra stack's role may write only under {' and '.join(prefixes)}: SageMaker "
                            f"could not write {uri} with it",
                    fix=f"put it under {prefixes[0]}, or {spec.field_words.set('role', '<a role that may write there>')}",
                    source=target.sources["role"].where)
            for name, uri, prefixes in destinations
            if uri is not None and uri.startswith("s3://") and not uri.startswith(prefixes)]
