"""The tuning spec: strict, frozen data describing one hyperparameter search over one job spec.

A tuning spec names its job spec (`job: train.yaml`) instead of being a section of it. The job spec stays one
job: `validate`, `plan`, `local` and `submit` keep their meaning for it, several searches (a coarse random one,
then a Bayesian one warm-started from it) share it, and the tuning spec cannot express a job setting at all, so
the training definition of the tuning job can only come from the single-job request builder (planning/tuning.py).

Rules that need only this file live here (ranges, scaling against bounds, strategy against ranges, limits
from botocore's model in api_limits.yaml); rules between fields are in `strategy_problems`;
rules that need the job spec too (the objective among its metric
definitions, a tuned hyperparameter also given a static value) are in `job_problems`, which the loader runs.
"""

from __future__ import annotations

import json
import math
import re
from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from orchestrator.contract import DEFAULT_METRIC_DEFINITIONS
from orchestrator.specs.datafiles import load_data_file
from orchestrator.specs.model import JOB_NAME_RULE, JobSpec, TagKey, TagValue, hyperparameter_name

_LIMITS: dict[str, dict[str, Any]] = load_data_file("api_limits.yaml")["CreateHyperParameterTuningJob"]
_CONFIG = "HyperParameterTuningJobConfig."
_RANGES = _CONFIG + "ParameterRanges."


def tuning_limit(member: str, trait: str) -> Any:
    """A CreateHyperParameterTuningJob member's limit, e.g. `tuning_limit("Tags", "max")` -> 50."""
    return _LIMITS[member][trait]


MAX_TUNING_JOB_NAME = tuning_limit("HyperParameterTuningJobName", "max")
_TUNING_JOB_NAME = re.compile(_LIMITS["HyperParameterTuningJobName"]["pattern"], re.ASCII)
# "The maximum number of items specified for Array Members refers to the maximum number of hyperparameters for
# each range and also the maximum for the hyperparameter tuning job itself" (ParameterRanges, botocore's doc).
MAX_TUNED = tuning_limit(_RANGES + "ContinuousParameterRanges", "max")
MAX_CATEGORICAL_VALUES = tuning_limit(_RANGES + "CategoricalParameterRanges[].Values", "max")
MAX_ENVIRONMENT = tuning_limit("TrainingJobDefinition.Environment", "max")
# HyperbandStrategyConfig.MaxResource: inferred from the first of these static hyperparameters when not given.
HYPERBAND_EPOCH_KEYS = ("epochs", "numepochs", "n-epochs", "n_epochs", "num_epochs")


def _invalid(message: str, fix: str) -> PydanticCustomError:
    """A validation error whose fix the loader prints on its own `fix:` line."""
    return PydanticCustomError("spec_value", "{message}", {"message": message, "fix": fix})


class Strategy(str, Enum):
    """How SageMaker picks each trial's values (HyperParameterTuningJobConfig.Strategy)."""

    Bayesian = "Bayesian"
    Random = "Random"
    Grid = "Grid"
    Hyperband = "Hyperband"


class Scaling(str, Enum):
    Auto = "Auto"
    Linear = "Linear"
    Logarithmic = "Logarithmic"
    ReverseLogarithmic = "ReverseLogarithmic"


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)  # field docstrings: field_docs.py


class Objective(_Spec):
    """The metric the search optimises: one of the job spec's metric definitions."""

    metric: str = Field(min_length=1)
    """A metric name of the job spec's `metrics` (default metrics: train:loss, train:samples_per_sec,
    train:epoch)."""

    type: Literal["Minimize", "Maximize"]
    """`Minimize` (a loss) or `Maximize` (an accuracy)."""


class ContinuousRange(_Spec):
    """Real values between min and max."""

    type: Literal["continuous"]
    min: float = Field(strict=False, allow_inf_nan=False)
    """Smallest value (inclusive)."""
    max: float = Field(strict=False, allow_inf_nan=False)
    """Largest value (inclusive)."""
    scaling: Scaling = Field(default=Scaling.Auto, strict=False)
    """Auto | Linear | Logarithmic (needs min > 0) | ReverseLogarithmic (needs 0 <= min < max < 1)."""

    @model_validator(mode="after")
    def _bounds_fit_the_scaling(self) -> ContinuousRange:
        _ordered(self.min, self.max)
        if self.scaling is Scaling.Logarithmic and self.min <= 0:
            raise _invalid(f"Logarithmic scaling needs values above 0; min is {self.min:g}",
                           "raise min above 0 (e.g. 1e-5), or use scaling: Linear")
        if self.scaling is Scaling.ReverseLogarithmic and not (0 <= self.min and self.max < 1):
            raise _invalid(f"ReverseLogarithmic scaling needs 0 <= min < max < 1; the range is "
                           f"[{self.min:g}, {self.max:g}]", "keep the range within [0, 1), or use scaling: Linear")
        return self


class IntegerRange(_Spec):
    """Whole numbers between min and max."""

    type: Literal["integer"]
    min: int
    """Smallest value (inclusive)."""
    max: int
    """Largest value (inclusive)."""
    scaling: Scaling = Field(default=Scaling.Auto, strict=False)
    """Auto | Linear | Logarithmic (needs min > 0). SageMaker offers ReverseLogarithmic for continuous ranges only."""

    @model_validator(mode="after")
    def _bounds_fit_the_scaling(self) -> IntegerRange:
        _ordered(self.min, self.max)
        if self.scaling is Scaling.Logarithmic and self.min <= 0:
            raise _invalid(f"Logarithmic scaling needs values above 0; min is {self.min}",
                           "raise min to 1 or more, or use scaling: Linear")
        if self.scaling is Scaling.ReverseLogarithmic:
            raise _invalid("ReverseLogarithmic scaling is for continuous ranges within [0, 1), not integers",
                           "use scaling: Linear or Logarithmic, or make it type: continuous")
        return self


CategoricalValue = Annotated[str | int | float | bool, Field(union_mode="left_to_right")]


class CategoricalRange(_Spec):
    """One of a list of values."""

    type: Literal["categorical"]
    values: list[CategoricalValue] = Field(min_length=1, max_length=MAX_CATEGORICAL_VALUES)
    """The values to choose from, e.g. `[sgd, adam]` or `[32, 64, 128]` (sent as text, as SDK v2 sends them)."""

    @field_validator("values")
    @classmethod
    def _distinct_and_short(cls, values: list[Any]) -> list[str]:
        # Text, as SDK v2's CategoricalParameter makes them (`to_string`): `32` is sent as "32" and reaches the
        # script as the argument `--batch-size 32` either way, here and in SageMaker alike.
        values = [value if isinstance(value, str) else str(value) for value in values]
        encoded = [encode_value(value) for value in values]
        repeated = sorted({text for text in encoded if encoded.count(text) > 1})
        if repeated:
            raise _invalid(f"values repeat: {', '.join(repeated)}", "list each value once")
        limit = tuning_limit(_RANGES + "CategoricalParameterRanges[].Values[]", "max")
        long = [text for text in encoded if len(text) > limit]
        if long:
            raise _invalid(f"a value is {len(long[0])} characters once JSON-encoded; SageMaker allows {limit}",
                           "use shorter values (e.g. a name the script maps to the long value)")
        return values


ParameterRange = Annotated[ContinuousRange | IntegerRange | CategoricalRange, Field(discriminator="type")]


class Hyperband(_Spec):
    """Hyperband's budget per trial, in the resource the objective is reported per (epochs)."""

    min_resource: int = Field(default=1, ge=tuning_limit(_CONFIG + "StrategyConfig.HyperbandStrategyConfig."
                                                                   "MinResource", "min"))
    """Epochs every trial gets before Hyperband may stop it."""
    max_resource: int | None = Field(default=None, ge=1, le=tuning_limit(
        _CONFIG + "StrategyConfig.HyperbandStrategyConfig.MaxResource", "documented_max"))
    """Epochs after which a trial is stopped. Default: the job's `epochs` hyperparameter (as SageMaker infers it
    from epochs, numepochs, n-epochs, n_epochs or num_epochs)."""

    @model_validator(mode="after")
    def _min_below_max(self) -> Hyperband:
        if self.max_resource is not None and self.min_resource > self.max_resource:
            raise _invalid(f"min_resource {self.min_resource} is above max_resource {self.max_resource}",
                           "make min_resource at most max_resource")
        return self


class Completion(_Spec):
    """When SageMaker may end the search before max_jobs (TuningJobCompletionCriteria)."""

    target_objective: float | None = Field(default=None, strict=False)
    """End once a trial's objective reaches this value (at or below it when minimizing)."""
    max_jobs_not_improving: int | None = Field(default=None, ge=tuning_limit(
        _CONFIG + "TuningJobCompletionCriteria.BestObjectiveNotImproving.MaxNumberOfTrainingJobsNotImproving",
        "min"))
    """End after this many trials in a row did not improve on the best."""
    complete_on_convergence: bool | None = None
    """End when SageMaker detects that the search has converged (true), or never for that reason (false)."""


class WarmStart(_Spec):
    """Start from what earlier tuning jobs learned."""

    type: Literal["IdenticalDataAndAlgorithm", "TransferLearning"]
    """IdenticalDataAndAlgorithm (same data and image, other ranges) or TransferLearning (anything may differ)."""
    parents: list[str] = Field(min_length=tuning_limit("WarmStartConfig.ParentHyperParameterTuningJobs", "min"),
                               max_length=tuning_limit("WarmStartConfig.ParentHyperParameterTuningJobs", "max"))
    """Names of earlier tuning jobs (`smtrain tune list`)."""

    @field_validator("parents")
    @classmethod
    def _tuning_job_names(cls, parents: list[str]) -> list[str]:
        for name in parents:
            if not _TUNING_JOB_NAME.fullmatch(name):
                raise _invalid(f"{name!r} is not a tuning job name (letters, digits and hyphens, at most "
                               f"{MAX_TUNING_JOB_NAME})", "copy the name from `smtrain tune list`")
        return parents


class TuningSpec(_Spec):
    """One hyperparameter search over the job of `job`."""

    job: str = Field(min_length=1)
    """The job spec to tune, relative to this file. Every setting of it is carried into each trial."""

    name: str | None = Field(default=None, min_length=1)
    """Base tuning job name (default: the job's name); submit appends a short timestamp and a random tag, and
    trims the base as the SDK does to fit SageMaker's 32 characters."""

    objective: Objective
    """The metric to optimise and its direction."""

    parameters: dict[str, ParameterRange] = Field(min_length=1)
    """Hyperparameter name -> range: `{type: continuous|integer, min, max, scaling}` or
    `{type: categorical, values: [...]}`. Leave these names out of the job spec's hyperparameters."""

    strategy: Strategy = Field(default=Strategy.Bayesian, strict=False)
    """Bayesian (default), Random, Grid (categorical ranges only: every combination once) or Hyperband."""

    hyperband: Hyperband | None = None
    """Hyperband's min and max resource (epochs); only with strategy Hyperband."""

    max_jobs: int | None = Field(default=None, ge=tuning_limit(_CONFIG + "ResourceLimits.MaxNumberOfTrainingJobs",
                                                                "min"))
    """Trials to run at most. Required, except with Grid, which runs every combination."""

    max_parallel_jobs: int = Field(default=1, ge=tuning_limit(_CONFIG + "ResourceLimits.MaxParallelTrainingJobs",
                                                              "min"))
    """Trials running at once."""

    max_runtime_seconds: int | None = Field(
        default=None, ge=tuning_limit(_CONFIG + "ResourceLimits.MaxRuntimeInSeconds", "min"),
        le=tuning_limit(_CONFIG + "ResourceLimits.MaxRuntimeInSeconds", "max"))
    """Stop the whole search after this long."""

    early_stopping: Literal["Off", "Auto"] = "Off"
    """Auto: SageMaker stops trials unlikely to beat the completed ones (not with Hyperband, which has its own)."""

    completion: Completion | None = None
    """Criteria that end the search early."""

    warm_start: WarmStart | None = None
    """Earlier tuning jobs to learn from."""

    random_seed: int | None = Field(default=None, ge=tuning_limit(_CONFIG + "RandomSeed", "min"))
    """Seed of the search's choices, for reproducible Random, Bayesian and Hyperband searches."""

    tags: dict[TagKey, TagValue] = Field(default_factory=dict)
    """Tags on the tuning job, beside the job spec's (which SageMaker also puts on every trial)."""

    @field_validator("name")
    @classmethod
    def _tuning_job_name(cls, value: str | None) -> str | None:
        if value is not None and not _TUNING_JOB_NAME.fullmatch(value[:MAX_TUNING_JOB_NAME]):
            raise _invalid(f"{value!r} is not a valid tuning job name", f"use {JOB_NAME_RULE}")
        return value

    @field_validator("parameters")
    @classmethod
    def _parameter_names(cls, parameters: dict[str, Any]) -> dict[str, Any]:
        if len(parameters) > MAX_TUNED:
            raise _invalid(f"{len(parameters)} parameters; a tuning job searches at most {MAX_TUNED}",
                           "tune fewer hyperparameters at once")
        reserved = [name for name in parameters if name.startswith(("sagemaker_", "_tuning"))]
        if reserved:
            raise _invalid(f"{reserved[0]!r} is a name SageMaker and the SDK keep for themselves",
                           "tune the script's own hyperparameters")
        for name in parameters:  # a tuned name reaches the script as a job's does, by the same rules
            hyperparameter_name(name)
        return parameters

    def total_jobs(self) -> int:
        """How many trials the search runs at most."""
        return grid_size(self) if self.strategy is Strategy.Grid else int(self.max_jobs or 0)


def _ordered(low: float, high: float) -> None:
    if not (math.isfinite(low) and math.isfinite(high)):
        raise _invalid("min and max must be finite numbers", "give numbers such as 0.001 and 0.1")
    if low >= high:
        raise _invalid(f"min {low:g} is not below max {high:g}", "make min smaller than max (a single value is a "
                                                                 "static hyperparameter of the job spec)")


def grid_size(spec: TuningSpec) -> int:
    return math.prod(len(item.values) for item in spec.parameters.values() if isinstance(item, CategoricalRange))


def encode_value(value: Any) -> str:
    """A value as the request carries it: JSON, as SDK v2 encodes a framework job's hyperparameters."""
    return json.dumps(value)


def strategy_problems(spec: TuningSpec) -> list[tuple[str, str, str]]:
    """Rules between the strategy and the other fields: (field, message, fix)."""
    problems = []
    if spec.strategy is Strategy.Grid:
        numeric = [name for name, item in spec.parameters.items() if not isinstance(item, CategoricalRange)]
        if numeric:
            problems.append(("strategy", f"strategy Grid takes categorical ranges only; {', '.join(numeric)} "
                                         f"{'is' if len(numeric) == 1 else 'are'} not",
                             f"list the values to try, e.g. {numeric[0]}: {{type: categorical, values: [...]}}, "
                             "or use strategy Random or Bayesian"))
        elif spec.max_jobs is not None:
            problems.append(("max_jobs", f"strategy Grid runs every combination ({grid_size(spec)}); max_jobs is "
                                         "not taken", "remove max_jobs"))
    elif spec.max_jobs is None:
        problems.append(("strategy", f"strategy {spec.strategy.value} needs max_jobs",
                         "add `max_jobs: 20` (the trials at most)"))
    if spec.hyperband is not None and spec.strategy is not Strategy.Hyperband:
        problems.append(("hyperband", "hyperband settings are only for strategy Hyperband",
                         "remove hyperband:, or set strategy: Hyperband"))
    if spec.strategy is Strategy.Hyperband and spec.early_stopping != "Off":
        problems.append(("early_stopping", "Hyperband stops trials itself: SageMaker needs early_stopping Off "
                                           "with it", "remove early_stopping (or set it Off)"))
    if spec.max_jobs is not None and spec.max_parallel_jobs > spec.max_jobs:
        problems.append(("max_parallel_jobs", f"max_parallel_jobs {spec.max_parallel_jobs} is more than max_jobs "
                                              f"{spec.max_jobs}", f"set max_parallel_jobs to at most {spec.max_jobs}"))
    return problems


def job_problems(spec: TuningSpec, job: JobSpec) -> list[tuple[str, str, str]]:
    """Rules between the tuning spec and its job spec: (field of the tuning spec or `job:<field>`, message, fix)."""
    problems = []
    metrics = ([metric.name for metric in job.metrics] if job.metrics is not None
               else [item["Name"] for item in DEFAULT_METRIC_DEFINITIONS])
    if spec.objective.metric not in metrics:
        problems.append(("objective.metric", f"{spec.objective.metric!r} is not among the job's metric definitions "
                                             f"({', '.join(metrics) or 'none'})",
                         f"use one of them, or add it to `metrics:` of {spec.job} with the regex that reads it"))
    for name in spec.parameters:
        if name in job.hyperparameters:
            problems.append((f"job:hyperparameters.{name}",
                             f"{name!r} is tuned and also given the static value {_shown(name, job)} in the job spec",
                             f"remove {name} from the hyperparameters of {spec.job} (each trial gets the search's "
                             "value), or remove it from parameters"))
    if len(job.environment) > MAX_ENVIRONMENT:
        problems.append(("job:environment", f"{len(job.environment)} environment variables; a tuning job's training "
                                            f"definition takes at most {MAX_ENVIRONMENT} (a single job 100)",
                         "pass fewer variables, e.g. in a file in source_dir"))
    if spec.strategy is Strategy.Hyperband and (spec.hyperband is None or spec.hyperband.max_resource is None):
        if not any(key in job.hyperparameters for key in HYPERBAND_EPOCH_KEYS):
            problems.append(("hyperband.max_resource", "Hyperband needs max_resource, and the job has no epochs "
                                                       "hyperparameter to infer it from",
                             "add `hyperband: {max_resource: 20}` (epochs), or an epochs hyperparameter"))
    return problems


def _shown(name: str, job: JobSpec) -> str:
    from orchestrator.redact import MASK, is_secret_name

    return MASK if is_secret_name(name) else repr(job.hyperparameters[name])
