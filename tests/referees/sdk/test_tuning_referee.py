"""smtrain's CreateHyperParameterTuningJob request against SDK v2's own: the real `HyperparameterTuner` over the
plan's real v2 estimator, given what a v2 user would write for the same tuning spec, captured with no network
(botocore events: parameters recorded, the call answered by a fake, any HTTP refused).

The requests are equal key for key, except where smtrain differs on purpose:
* ResourceConfig: v2 sends the estimator's instances as HyperParameterTuningResourceConfig, which has no place
  for a warm pool, instance groups, a training plan or instance preferences; smtrain sends the job's own
  ResourceConfig (the same member CreateTrainingJob takes), so those settings reach the trials too.
* Grid: v2 sends MaxNumberOfTrainingJobs as given, and without one botocore refuses its None; smtrain leaves it
  out (Grid runs every combination), so v2 is given the number of combinations here.
* MetricDefinitions: v2 sends only what is given to the tuner (its `metric_definitions`), which a v2 user must
  repeat there for a framework estimator; smtrain takes the job's. The v2 tuner here is given them.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse
from tuning_specs import TARGET, TUNING_SPECS

from orchestrator.cloud.estimator import build
from orchestrator.cloud.sdk import boto_session, import_sagemaker, sagemaker_session
from orchestrator.planning.tuning import build_tuning_plan
from orchestrator.specs.loader import load_tuning
from orchestrator.specs.tuning import CategoricalRange, ContinuousRange, Strategy, TuningSpec

REPO = Path(__file__).resolve().parents[3]


class _EmptyBody:
    def stream(self, **_: Any) -> Any:
        yield b""


def _v2_request(tuning_plan: Any) -> dict[str, Any]:
    """What v2's HyperparameterTuner sends for the same search, written as a v2 user writes it."""
    import_sagemaker()
    from sagemaker import tuner as v2

    captured: dict[str, Any] = {}
    boto = boto_session("us-east-1", aws_access_key_id="REFEREE", aws_secret_access_key="REFEREE")

    def record(params: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name != "CreateHyperParameterTuningJob":
            raise AssertionError(f"v2 made another call: {model.name}")
        captured.update(copy.deepcopy(params))

    def answer(model: Any, params: dict[str, Any], **_: Any) -> tuple[Any, dict[str, Any]]:
        arn = "arn:aws:sagemaker:us-east-1:123456789012:hyper-parameter-tuning-job/x"
        return AWSResponse(params["url"], 200, {}, _EmptyBody()), {"HyperParameterTuningJobArn": arn}

    def refuse(request: Any, **_: Any) -> None:
        raise AssertionError(f"HTTP attempted to {request.url}")

    boto.events.register("before-parameter-build", record)
    boto.events.register("before-call", answer)
    boto.events.register("before-send", refuse)
    session = sagemaker_session(boto, TARGET.bucket)
    estimator = build(tuning_plan.job, session)
    spec: TuningSpec = tuning_plan.spec
    tuner = v2.HyperparameterTuner(
        estimator, spec.objective.metric, _v2_ranges(spec), objective_type=spec.objective.type,
        metric_definitions=estimator.metric_definitions, strategy=spec.strategy.value,
        max_jobs=spec.total_jobs(), max_parallel_jobs=spec.max_parallel_jobs,
        max_runtime_in_seconds=spec.max_runtime_seconds, early_stopping_type=spec.early_stopping,
        random_seed=spec.random_seed, tags=[{"Key": key, "Value": value} for key, value in spec.tags.items()] or None,
        strategy_config=v2.StrategyConfig(v2.HyperbandStrategyConfig(
            max_resource=spec.hyperband.max_resource, min_resource=spec.hyperband.min_resource))
        if spec.hyperband else None,
        completion_criteria_config=v2.TuningJobCompletionCriteriaConfig(
            max_number_of_training_jobs_not_improving=spec.completion.max_jobs_not_improving,
            complete_on_convergence=spec.completion.complete_on_convergence,
            target_objective_metric_value=spec.completion.target_objective) if spec.completion else None,
        warm_start_config=v2.WarmStartConfig(v2.WarmStartTypes(spec.warm_start.type), set(spec.warm_start.parents))
        if spec.warm_start else None,
    )
    tuner.fit(inputs=tuning_plan.job.inputs or None, job_name=tuning_plan.name, wait=False,
              include_cls_metadata=False)
    return captured


def _v2_ranges(spec: TuningSpec) -> dict[str, Any]:
    from sagemaker import tuner as v2

    ranges: dict[str, Any] = {}
    for name, item in spec.parameters.items():
        if isinstance(item, CategoricalRange):
            ranges[name] = v2.CategoricalParameter(list(item.values))
        elif isinstance(item, ContinuousRange):
            ranges[name] = v2.ContinuousParameter(item.min, item.max, scaling_type=item.scaling.value)
        else:
            ranges[name] = v2.IntegerParameter(item.min, item.max, scaling_type=item.scaling.value)
    return ranges


@pytest.mark.parametrize("strategy", list(TUNING_SPECS))
def test_tuning_request_is_what_sdk_v2s_tuner_sends(tmp_path, strategy):
    path = tmp_path / "search.yaml"
    path.write_text(TUNING_SPECS[strategy])
    tuning_plan = build_tuning_plan(load_tuning(path), TARGET, name="referee-tuning")
    ours = copy.deepcopy(tuning_plan.request)
    assert ours["HyperParameterTuningJobConfig"]["Strategy"] == Strategy(ours["HyperParameterTuningJobConfig"]
                                                                          ["Strategy"]).value

    theirs = _v2_request(tuning_plan)

    if strategy == "grid":
        limits = theirs["HyperParameterTuningJobConfig"]["ResourceLimits"]
        assert limits.pop("MaxNumberOfTrainingJobs") == tuning_plan.spec.total_jobs() == 2 * 3 * 2  # optimizer x batch-size x lr
    definition, their_definition = ours["TrainingJobDefinition"], theirs["TrainingJobDefinition"]
    assert their_definition.pop("HyperParameterTuningResourceConfig") == definition.pop("ResourceConfig")
    assert ours["HyperParameterTuningJobConfig"] == theirs["HyperParameterTuningJobConfig"], (ours["HyperParameterTuningJobConfig"], theirs["HyperParameterTuningJobConfig"])
    assert ours == theirs
