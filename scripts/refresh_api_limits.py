"""Regenerates orchestrator/specs/data/api_limits.yaml from the installed botocore's service models.

The job spec's and the tuning spec's limits (lengths, counts, patterns, ranges, the training instance types) are SageMaker's
CreateTrainingJob limits and IAM's role-name rule as botocore states them. Loading botocore's sagemaker model
costs ~0.3 s, so `smtrain validate` reads this small extract instead; tests/specs/test_capabilities.py
regenerates it in memory and fails when it differs from the file (a botocore upgrade that moved a limit).

    python scripts/refresh_api_limits.py          # rewrite the file
    python scripts/refresh_api_limits.py --check  # exit 1 if the file is stale
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

TARGET = Path(__file__).resolve().parents[1] / "orchestrator" / "specs" / "data" / "api_limits.yaml"

# Members of the CreateTrainingJob input that the spec writes, as paths: `.` a structure member, `[]` a list's
# item, `{key}`/`{value}` a map's keys or values.
SAGEMAKER_MEMBERS = (
    "TrainingJobName",
    "RoleArn",
    "HyperParameters", "HyperParameters{key}", "HyperParameters{value}",
    "Environment", "Environment{key}", "Environment{value}",
    "InputDataConfig", "InputDataConfig[].ChannelName", "InputDataConfig[].DataSource.S3DataSource.S3Uri",
    "OutputDataConfig.S3OutputPath",
    "CheckpointConfig.S3Uri", "CheckpointConfig.LocalPath",
    "ResourceConfig.InstanceCount", "ResourceConfig.VolumeSizeInGB", "ResourceConfig.KeepAlivePeriodInSeconds",
    "StoppingCondition.MaxRuntimeInSeconds", "StoppingCondition.MaxWaitTimeInSeconds",
    "AlgorithmSpecification.TrainingImage", "AlgorithmSpecification.MetricDefinitions",
    "AlgorithmSpecification.MetricDefinitions[].Name", "AlgorithmSpecification.MetricDefinitions[].Regex",
    "Tags", "Tags[].Key", "Tags[].Value",
    "VpcConfig.Subnets", "VpcConfig.Subnets[]", "VpcConfig.SecurityGroupIds", "VpcConfig.SecurityGroupIds[]",
    # Channel options, heterogeneous clusters, capacity, resilience, tracking and encryption (issue 22).
    "AlgorithmSpecification.TrainingInputMode", "InputDataConfig[].InputMode",
    "InputDataConfig[].DataSource.S3DataSource.S3DataType",
    "InputDataConfig[].DataSource.S3DataSource.S3DataDistributionType",
    "InputDataConfig[].DataSource.S3DataSource.InstanceGroupNames",
    "InputDataConfig[].CompressionType", "InputDataConfig[].ContentType",
    "ResourceConfig.InstanceGroups", "ResourceConfig.InstanceGroups[].InstanceGroupName",
    "ResourceConfig.InstanceGroups[].InstanceCount",
    "ResourceConfig.TrainingPlanArn", "ResourceConfig.InstancePreferences",
    "ResourceConfig.InstancePreferences[].InstanceCount", "ResourceConfig.InstancePreferences[].TrainingPlanArns",
    "ResourceConfig.InstancePlacementConfig.PlacementSpecifications",
    "ResourceConfig.InstancePlacementConfig.PlacementSpecifications[].UltraServerId",
    "ResourceConfig.InstancePlacementConfig.PlacementSpecifications[].InstanceCount",
    "ResourceConfig.VolumeKmsKeyId", "OutputDataConfig.KmsKeyId", "OutputDataConfig.CompressionType",
    "StoppingCondition.MaxPendingTimeInSeconds",
    "RetryStrategy.MaximumRetryAttempts",
    "TensorBoardOutputConfig.S3OutputPath", "TensorBoardOutputConfig.LocalPath",
    "MlflowConfig.MlflowResourceArn", "MlflowConfig.MlflowExperimentName", "MlflowConfig.MlflowRunName",
    "ExperimentConfig.ExperimentName", "ExperimentConfig.TrialName", "ExperimentConfig.TrialComponentDisplayName",
    "ExperimentConfig.RunName",
)
# Members of the CreateHyperParameterTuningJob input that a tuning spec writes, paths as above.
TUNING_MEMBERS = (
    "HyperParameterTuningJobName",
    "HyperParameterTuningJobConfig.ResourceLimits.MaxNumberOfTrainingJobs",
    "HyperParameterTuningJobConfig.ResourceLimits.MaxParallelTrainingJobs",
    "HyperParameterTuningJobConfig.ResourceLimits.MaxRuntimeInSeconds",
    "HyperParameterTuningJobConfig.ParameterRanges.IntegerParameterRanges",
    "HyperParameterTuningJobConfig.ParameterRanges.ContinuousParameterRanges",
    "HyperParameterTuningJobConfig.ParameterRanges.CategoricalParameterRanges",
    "HyperParameterTuningJobConfig.ParameterRanges.CategoricalParameterRanges[].Values",
    "HyperParameterTuningJobConfig.ParameterRanges.CategoricalParameterRanges[].Values[]",
    "HyperParameterTuningJobConfig.ParameterRanges.IntegerParameterRanges[].MinValue",
    "HyperParameterTuningJobConfig.StrategyConfig.HyperbandStrategyConfig.MinResource",
    "HyperParameterTuningJobConfig.StrategyConfig.HyperbandStrategyConfig.MaxResource",
    "HyperParameterTuningJobConfig.TuningJobCompletionCriteria.BestObjectiveNotImproving"
    ".MaxNumberOfTrainingJobsNotImproving",
    "HyperParameterTuningJobConfig.RandomSeed",
    "TrainingJobDefinition.StaticHyperParameters",
    "TrainingJobDefinition.Environment",
    "WarmStartConfig.ParentHyperParameterTuningJobs",
    "Tags",
)
# The training definition's structure: each member and, for a structure, its members. The tuning request
# copies a single job's request into it by these names (planning/tuning.py), so a job setting the definition
# has is carried, and one it lacks is refused or named, never dropped unseen.
DEFINITION = "TrainingJobDefinition"
# MaxRuntimeInSeconds has no `max` trait; its documentation states it ("The maximum value is 28 days.").
DOCUMENTED_MAXIMA = {"StoppingCondition.MaxRuntimeInSeconds": re.compile(r"The maximum value is (\d+) days\.")}
# MaxResource has none either; its documentation states it ("The maximum value is 20,000 epochs.").
TUNING_DOCUMENTED_MAXIMA = {
    "HyperParameterTuningJobConfig.StrategyConfig.HyperbandStrategyConfig.MaxResource":
        re.compile(r"The maximum value is ([\d,]+) epochs\."),
}
_UNITS = {"days": 86400, "epochs": 1}
_TRAITS = ("min", "max", "pattern")
_STEP = re.compile(r"\.?([A-Za-z0-9]+)|(\[\])|\{(key|value)\}")


def _shape_at(shape: Any, path: str) -> Any:
    position = 0
    while position < len(path):
        step = _STEP.match(path, position)
        if step is None:
            raise ValueError(f"bad member path {path!r} at {position}")
        member, item, map_part = step.groups()
        if member:
            shape = shape.members[member]
        elif item:
            shape = shape.member
        else:
            shape = shape.key if map_part == "key" else shape.value
        position = step.end()
    return shape


def _limits(shape: Any, path: str, tuning: bool = False) -> dict[str, Any]:
    limits: dict[str, Any] = {trait: shape.metadata[trait] for trait in _TRAITS if trait in shape.metadata}
    if getattr(shape, "enum", None):
        limits["enum"] = list(shape.enum)
    documented = (TUNING_DOCUMENTED_MAXIMA if tuning else DOCUMENTED_MAXIMA).get(path)
    if documented is not None:
        found = documented.search(shape.documentation or "")
        if found is None:
            raise SystemExit(f"{path}: the documented maximum ({documented.pattern}) is gone from botocore's "
                             "documentation; read the new text and update DOCUMENTED_MAXIMA")
        unit = next(factor for word, factor in _UNITS.items() if word in documented.pattern)
        limits["documented_max"] = int(found.group(1).replace(",", "")) * unit
    return limits


def _structure(shape: Any) -> dict[str, list[str] | None]:
    return {name: sorted(member.members) if member.type_name == "structure" else None
            for name, member in shape.members.items()}


def extract(session: Any) -> dict[str, Any]:
    """The limits the spec uses, from a botocore session's service models."""
    sagemaker = session.get_service_model("sagemaker")
    iam = session.get_service_model("iam")
    create = sagemaker.operation_model("CreateTrainingJob").input_shape
    tuning = sagemaker.operation_model("CreateHyperParameterTuningJob").input_shape
    role_name = iam.operation_model("GetRole").input_shape.members["RoleName"]
    return {
        "CreateTrainingJob": {path: _limits(_shape_at(create, path), path) for path in SAGEMAKER_MEMBERS},
        "CreateHyperParameterTuningJob": {path: _limits(_shape_at(tuning, path), path, tuning=True)
                                          for path in TUNING_MEMBERS},
        "HyperParameterTrainingJobDefinition": _structure(tuning.members[DEFINITION]),
        "GetRole": {"RoleName": _limits(role_name, "RoleName")},
        "TrainingInstanceType": sorted(sagemaker.shape_for("TrainingInstanceType").enum),
    }


def render(session: Any) -> str:
    """The file's text, deterministic for a given botocore."""
    import botocore
    import yaml

    sagemaker_version = session.get_service_model("sagemaker").api_version
    iam_version = session.get_service_model("iam").api_version
    header = (
        f"# Generated by scripts/refresh_api_limits.py from botocore {botocore.__version__}'s service models\n"
        f"# (sagemaker {sagemaker_version}: CreateTrainingJob and CreateHyperParameterTuningJob input; iam {iam_version}:\n"
        "# GetRole RoleName). Do not edit; run `python scripts/refresh_api_limits.py`. Patterns are the API's, matched whole (re.fullmatch).\n"
        "# documented_max: a limit stated in the member's documentation, not as a trait.\n"
    )
    body = yaml.safe_dump({"botocore": botocore.__version__, **extract(session)}, sort_keys=False,
                          default_flow_style=None, width=116, allow_unicode=True)
    return header + body


def main(argv: list[str]) -> int:
    import botocore.session

    text = render(botocore.session.get_session())
    if "--check" in argv:
        if TARGET.read_text(encoding="utf-8") != text:
            print(f"{TARGET} is stale: run python scripts/refresh_api_limits.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
