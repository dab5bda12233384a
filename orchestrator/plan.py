"""The plan: everything a submit would send, computed before anything is sent.

`plan(spec)` is pure with respect to AWS (zero network unless the role or output path must be read from the
infra stack): it packs the source to learn its content address, builds the real SDK v2 estimator, captures the
exact CreateTrainingJob request, and prices the worst case. `submit` consumes a Plan and adds nothing to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.capabilities import Finding, check
from orchestrator.catalog import InstanceType, catalog, lookup
from orchestrator.dryrun import capture_create_training_job
from orchestrator.errors import CapabilityError
from orchestrator.estimator import estimator_kwargs
from orchestrator.loader import LoadedSpec, load
from orchestrator.packaging import DEFAULT_MAX_BYTES, SourcePackage, package
from orchestrator.redact import redact
from orchestrator.resolve import Target, resolve_target
from orchestrator.spec import JobSpec, timestamped_job_name
from orchestrator.topology import Topology, topology


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
        if self.price_per_instance_hour is None:
            return None
        return self.price_per_instance_hour * self.instance_count * self.max_billable_seconds / 3600

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
    return Cost(price_per_instance_hour=instance.price_per_hour, instance_count=spec.instance.count,
                max_billable_seconds=seconds, basis=basis, currency=prices.currency,
                price_source=f"{prices.source}, {prices.region}, transcribed {prices.checked}")


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

    @property
    def source_uri(self) -> str:
        return self.estimator_kwargs["source_dir"]

    @property
    def inputs(self) -> dict[str, str]:
        return dict(self.spec.inputs)

    def blocking_findings(self) -> list[Finding]:
        return [finding for finding in self.findings if finding.blocks(self.spec.allow_unverified)]

    def sagemaker_session(self, boto: Any | None = None) -> Any:
        """A SageMaker session for this plan's region and bucket (real credentials, real network)."""
        from orchestrator.sdk import boto_session, sagemaker_session

        return sagemaker_session(boto or boto_session(self.target.region), self.target.bucket)

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
            "source": {"directory": str(self.source.directory), "files": list(self.source.files),
                       "size_bytes": self.source.size_bytes, "sha256": self.source.sha256,
                       "s3_uri": self.source_uri},
        })


def plan(spec: JobSpec | LoadedSpec | str | Path, *, job_name: str | None = None, boto: Any | None = None,
         max_source_bytes: int = DEFAULT_MAX_BYTES) -> Plan:
    """Plans a job: the notebook API and `smtrain plan`.

    Args:
        spec: a JobSpec, a LoadedSpec, or the path of a spec file.
        job_name: the exact job name; default: the spec's name plus the SDK's timestamp suffix.
        boto: the boto3 session used to resolve the region (and, when the spec lacks them, the role and
            output path from the infra stack).

    Raises:
        SpecError / CapabilityError: the spec cannot be submitted; nothing was sent.
    """
    loaded = load(spec) if isinstance(spec, (str, Path)) else spec
    job_spec = loaded.spec if isinstance(loaded, LoadedSpec) else loaded
    findings = loaded.findings if isinstance(loaded, LoadedSpec) else check(job_spec)
    errors = [finding for finding in findings if finding.severity == "error"]
    if errors:
        raise CapabilityError("\n".join(f"{finding.field}: {finding.message}" for finding in errors),
                              fix="; ".join(finding.fix for finding in errors))
    _require_s3_inputs(job_spec)
    target = resolve_target(job_spec, boto)
    if target.region_is_fallback:
        findings = [*findings, Finding(rule="region-fallback", severity="notice", field="region",
                                       message=f"no AWS region configured; planned for {target.region}",
                                       fix="set region: in the spec or AWS_REGION", source="boto3 region chain")]
    instance = lookup(job_spec.instance.type)
    source = package(job_spec.source_dir, max_source_bytes)
    kwargs = estimator_kwargs(job_spec, target, source.s3_uri(target.code_location))
    name = job_name or timestamped_job_name(job_spec.name)
    request = capture_create_training_job(kwargs, name, dict(job_spec.inputs), target.region, target.bucket)
    return Plan(spec=job_spec, job_name=name, target=target, instance=instance, topology=topology(job_spec, instance),
                source=source, estimator_kwargs=kwargs, create_training_job_request=request,
                cost=worst_case_cost(job_spec, instance), findings=findings)


def _require_s3_inputs(spec: JobSpec) -> None:
    local = [name for name, location in spec.inputs.items() if not location.startswith("s3://")]
    if local:
        raise CapabilityError(
            f"inputs {', '.join(local)} point at local paths; a SageMaker job reads channels from S3",
            fix="upload the data and give its s3:// prefix, or run the job here with `smtrain local`",
        )
