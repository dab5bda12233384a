"""The tuning plan: the exact CreateHyperParameterTuningJob request, computed before anything is sent.

Its training definition is not built here. The single job's plan (`build_plan`, the same request builder
`smtrain plan` and `submit` use) builds the CreateTrainingJob request, and `training_definition` moves it into
the definition member by member, by the names botocore's model gives the definition (api_limits.yaml). A job
setting the definition has a place for is carried without this module naming it (channels, environment,
checkpoints, spot, VPC, isolation, encryption, warm pool, retries, whatever a later change adds); one it has
no place for is either in NOT_CARRIED with the reason, or planning stops with an error naming it. So a tuning
job cannot silently lose a setting of its job, which is what SDK v3's ModelTrainer-based tuner did to input
channels and environment variables.
"""

from __future__ import annotations

import math
import re
import secrets
import time
from dataclasses import dataclass
from typing import Any

from orchestrator.errors import CapabilityError
from orchestrator.planning.packaging import DEFAULT_MAX_BYTES
from orchestrator.planning.plan import Plan, build_plan
from orchestrator.planning.request import offline_request
from orchestrator.planning.target import Target
from orchestrator.redact import is_secret_name, masks_its_repr, redact
from orchestrator.specs.datafiles import load_data_file
from orchestrator.specs.model import JobSpec
from orchestrator.specs.tuning import (
    MAX_TUNING_JOB_NAME,
    CategoricalRange,
    ContinuousRange,
    Strategy,
    TuningSpec,
    encode_value,
    tuning_limit,
)
from orchestrator.specs.loader import LoadedTuning

DEFINITION_MEMBERS: dict[str, list[str] | None] = load_data_file("api_limits.yaml")["HyperParameterTrainingJobDefinition"]
# CreateTrainingJob members (and nested members) the definition has no place for, and why that loses nothing.
NOT_CARRIED = {
    "TrainingJobName": "SageMaker names each trial after the tuning job",
    "HyperParameters": "sent as StaticHyperParameters, less the tuned names",
    "Tags": "sent as the tuning job's Tags, which SageMaker puts on every trial",
    "DebugHookConfig": "a training definition has no Debugger member (SDK v2's tuner sends none either)",
    "ProfilerConfig": "a training definition has no Profiler member (SDK v2's tuner sends none either)",
    "AlgorithmSpecification.EnableSageMakerMetricsTimeSeries": (
        "a definition's algorithm specification has no such member; the tuning job reads the metric definitions"),
}
# sagemaker/tuner.py `_prepare_static_hyperparameters`: for a framework estimator v2 adds its class and module, so
# `HyperparameterTuner.attach` can rebuild the estimator; smtrain sends them too, for SDK users attaching to it.
ESTIMATOR_CLASS_KEYS = {"sagemaker_estimator_class_name": '"PyTorch"',
                        "sagemaker_estimator_module": '"sagemaker.pytorch.estimator"'}
# `-YYMMDD-HHMMSS-xxxx`: the SDK's short stamp (`name_from_base(short=True)`) with seconds and a random tag.
_SUFFIX_LENGTH = 19
_TAG_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"


def tuning_job_name(base: str) -> str:
    """`base-YYMMDD-HHMMSS-xxxx`, the base trimmed (as the SDK trims it) to fit the API's 32 characters."""
    stamp = time.strftime("%y%m%d-%H%M%S", time.gmtime())
    tag = "".join(secrets.choice(_TAG_ALPHABET) for _ in range(4))
    return f"{_trimmed(base)}-{stamp}-{tag}"


def is_named_after(name: str, base: str) -> bool:
    """Whether `name` is one `tuning_job_name(base)` gives: how a search's base name finds its results folders."""
    return re.fullmatch(rf"{re.escape(_trimmed(base))}-\d{{6}}-\d{{6}}-[{_TAG_ALPHABET}]{{4}}", name) is not None


def _trimmed(base: str) -> str:
    return base[:MAX_TUNING_JOB_NAME - _SUFFIX_LENGTH].rstrip("-")


@dataclass(frozen=True)
class TuningCost:
    """The most the search can cost: every trial at its single job's worst case."""

    per_trial: float | None
    trials: int
    parallel: int
    currency: str
    basis: str

    @property
    def max_total(self) -> float | None:
        return None if self.per_trial is None else self.per_trial * self.trials

    def to_dict(self) -> dict[str, Any]:
        return {"max_total": self.max_total, "per_trial": self.per_trial, "trials": self.trials,
                "parallel": self.parallel, "currency": self.currency, "basis": self.basis}


def _tuning_secrets(plan: TuningPlan) -> frozenset[str]:
    """The trial job's secrets, and the values searched for a secret-looking hyperparameter."""
    searched = {str(value) for name, item in plan.spec.parameters.items() if is_secret_name(name)
                for value in getattr(item, "values", ())}
    return plan.job.spec.secret_values() | searched


@masks_its_repr(_tuning_secrets)
@dataclass(frozen=True)
class TuningPlan:
    """A tuning job ready to submit: its request, the single-job plan its definition came from, the cost."""

    spec: TuningSpec
    job: Plan
    """The plan of one trial as a single job (named after the tuning job, as SDK v2 names it)."""
    name: str
    request: dict[str, Any]
    cost: TuningCost

    def to_dict(self) -> dict[str, Any]:
        """The printable plan (`smtrain tune plan --output json`), secret-looking values masked."""
        return redact({
            "tuning_job_name": self.name,
            "strategy": self.spec.strategy.value,
            "jobs": self.spec.total_jobs(),
            "parallel_jobs": self.spec.max_parallel_jobs,
            "create_hyper_parameter_tuning_job_request": self.request,
            "not_carried": dict(NOT_CARRIED),
            "cost": self.cost.to_dict(),
            "warnings": [finding.__dict__ for finding in self.job.findings],
            "source": {"s3_uri": self.job.source_uri, "sha256": self.job.source.sha256,
                       "size_bytes": self.job.source.size_bytes},
        })


def build_tuning_plan(loaded: LoadedTuning, target: Target, *, name: str | None = None,
                      max_source_bytes: int = DEFAULT_MAX_BYTES) -> TuningPlan:
    """The plan for a tuning spec going to `target`. Pure: no AWS call, no SDK.

    Raises:
        SpecError / CapabilityError: the spec cannot be planned; nothing was sent.
    """
    spec = loaded.spec
    tuning_name = name or tuning_job_name(spec.name or loaded.job.spec.name)
    job_plan = build_plan(loaded.job, target, job_name=tuning_name, max_source_bytes=max_source_bytes)
    request = create_tuning_job_request(spec, job_plan.create_training_job_request, tuning_name)
    job_cost = job_plan.cost
    cost = TuningCost(per_trial=job_cost.max_total, trials=spec.total_jobs(), parallel=spec.max_parallel_jobs,
                      currency=job_cost.currency, basis=f"trials x ({job_cost.basis})")
    return TuningPlan(spec=spec, job=job_plan, name=tuning_name, request=request, cost=cost)


def check_offline(spec: TuningSpec, job: JobSpec) -> None:
    """What `build_tuning_plan` refuses once the requests are built (the trial's request limits, a job setting the
    training definition has no place for, too many static hyperparameters or tags), checked on requests built
    offline with placeholders: `tune validate` refuses what `tune plan` refuses, with no credentials.

    Raises:
        CapabilityError: naming the setting and the fix.
    """
    create_tuning_job_request(spec, offline_request(job), spec.name or job.name)


def create_tuning_job_request(spec: TuningSpec, training_request: dict[str, Any], name: str) -> dict[str, Any]:
    """The CreateHyperParameterTuningJob API parameters, as botocore receives them."""
    config: dict[str, Any] = {"Strategy": spec.strategy.value}
    if spec.strategy is Strategy.Hyperband:
        config["StrategyConfig"] = {"HyperbandStrategyConfig": _hyperband(spec)}
    config["HyperParameterTuningJobObjective"] = {"Type": spec.objective.type, "MetricName": spec.objective.metric}
    limits: dict[str, Any] = {"MaxParallelTrainingJobs": spec.max_parallel_jobs}
    if spec.max_jobs is not None:
        limits["MaxNumberOfTrainingJobs"] = spec.max_jobs
    if spec.max_runtime_seconds is not None:
        limits["MaxRuntimeInSeconds"] = spec.max_runtime_seconds
    config["ResourceLimits"] = limits
    config["ParameterRanges"] = parameter_ranges(spec)
    config["TrainingJobEarlyStoppingType"] = spec.early_stopping
    if spec.completion is not None:
        config["TuningJobCompletionCriteria"] = _completion(spec)
    if spec.random_seed is not None:
        config["RandomSeed"] = spec.random_seed
    request: dict[str, Any] = {
        "HyperParameterTuningJobName": name,
        "HyperParameterTuningJobConfig": config,
        "TrainingJobDefinition": training_definition(training_request, set(spec.parameters)),
    }
    if spec.warm_start is not None:
        request["WarmStartConfig"] = {
            "ParentHyperParameterTuningJobs": [{"HyperParameterTuningJobName": parent}
                                               for parent in spec.warm_start.parents],
            "WarmStartType": spec.warm_start.type}
    tags = tuning_tags(spec, {item["Key"]: item["Value"] for item in training_request.get("Tags", [])})
    request["Tags"] = [{"Key": key, "Value": value} for key, value in tags.items()]
    return request


def tuning_tags(spec: TuningSpec, job_tags: dict[str, str]) -> dict[str, str]:
    """SDK v2's order (tuner.py `_prepare_tags_for_tuning`): the tuning job's own tags, then the job's others.

    Raises:
        CapabilityError: more than a tuning job takes.
    """
    tags = dict(spec.tags) | {key: value for key, value in job_tags.items() if key not in spec.tags}
    limit = tuning_limit("Tags", "max")
    if len(tags) > limit:
        raise CapabilityError(f"tags: the job's and the tuning spec's make {len(tags)}; a tuning job takes {limit}",
                              fix="drop some tags from either file")
    return tags


def training_definition(training_request: dict[str, Any], tuned: set[str]) -> dict[str, Any]:
    """A single job's CreateTrainingJob request as a tuning job's TrainingJobDefinition.

    Raises:
        CapabilityError: the request has a setting the definition cannot carry and NOT_CARRIED does not explain.
    """
    definition: dict[str, Any] = {}
    unplaced: list[str] = []
    for member, value in training_request.items():
        if member in NOT_CARRIED:
            continue
        if member not in DEFINITION_MEMBERS:
            unplaced.append(member)
            continue
        nested = DEFINITION_MEMBERS[member]
        if nested is not None and isinstance(value, dict):
            left = [f"{member}.{key}" for key in value if key not in nested]
            unplaced += [path for path in left if path not in NOT_CARRIED]
            value = {key: item for key, item in value.items() if key in nested}
        definition[member] = value
    if unplaced:
        raise CapabilityError(
            f"the job sets {', '.join(unplaced)}, which a tuning job's training definition has no place for: "
            "its trials would run without it",
            fix="remove that setting from the job spec to tune it, or run the trials as single jobs")
    static = {key: text for key, text in training_request["HyperParameters"].items() if key not in tuned}
    static.update(ESTIMATOR_CLASS_KEYS)
    limit = tuning_limit("TrainingJobDefinition.StaticHyperParameters", "max")
    if len(static) > limit:
        own = sum(1 for key in static if not key.startswith("sagemaker_"))
        raise CapabilityError(f"hyperparameters: {own} static ones of the job plus {len(static) - own} sagemaker_* "
                              f"keys make {len(static)}; a tuning job takes at most {limit}",
                              fix=f"drop {len(static) - limit} hyperparameters, or pass them in a file in source_dir")
    return {"StaticHyperParameters": static, **definition}


def parameter_ranges(spec: TuningSpec) -> dict[str, list[dict[str, Any]]]:
    """The three range lists as SDK v2 sends them for a framework job: numbers as text, categorical values as
    JSON-encoded text (the toolkit json.loads every hyperparameter, so `"sgd"` reaches the script as sgd)."""
    ranges: dict[str, list[dict[str, Any]]] = {
        "ContinuousParameterRanges": [], "CategoricalParameterRanges": [], "IntegerParameterRanges": []}
    for name, item in spec.parameters.items():
        if isinstance(item, CategoricalRange):
            ranges["CategoricalParameterRanges"].append(
                {"Name": name, "Values": [encode_value(value) for value in item.values]})
        else:
            kind = "ContinuousParameterRanges" if isinstance(item, ContinuousRange) else "IntegerParameterRanges"
            ranges[kind].append({"Name": name, "MinValue": _number(item.min), "MaxValue": _number(item.max),
                                 "ScalingType": item.scaling.value})
    return ranges


def _number(value: float | int) -> str:
    """As SDK v2's `to_string`: str(), so 0.001 stays 0.001 and 1e-05 reads as Python writes it."""
    return str(value)


def _hyperband(spec: TuningSpec) -> dict[str, Any]:
    settings = spec.hyperband
    config: dict[str, Any] = {"MinResource": settings.min_resource if settings else 1}
    if settings and settings.max_resource is not None:
        config["MaxResource"] = settings.max_resource
    return config


def _completion(spec: TuningSpec) -> dict[str, Any]:
    assert spec.completion is not None
    criteria: dict[str, Any] = {}
    if spec.completion.target_objective is not None:
        criteria["TargetObjectiveMetricValue"] = spec.completion.target_objective
    if spec.completion.max_jobs_not_improving is not None:
        criteria["BestObjectiveNotImproving"] = {
            "MaxNumberOfTrainingJobsNotImproving": spec.completion.max_jobs_not_improving}
    if spec.completion.complete_on_convergence is not None:
        criteria["ConvergenceDetected"] = {
            "CompleteOnConvergence": "Enabled" if spec.completion.complete_on_convergence else "Disabled"}
    return criteria


def hyperband_max_resource(spec: TuningSpec, static: dict[str, Any]) -> int | None:
    """MaxResource as SageMaker settles it: the spec's, else the first epochs-like static hyperparameter."""
    from orchestrator.specs.tuning import HYPERBAND_EPOCH_KEYS

    if spec.hyperband is not None and spec.hyperband.max_resource is not None:
        return spec.hyperband.max_resource
    for key in HYPERBAND_EPOCH_KEYS:
        if key in static:
            value = static[key]
            return int(value) if isinstance(value, (int, float)) and math.isfinite(value) else None
    return None
