"""What the job settings beyond the basics produced, read from DescribeTrainingJob: the instance type an instance
preference list selected, the instance groups, a spot job's interruptions, restarts against the retry strategy, where TensorBoard and MLflow
output goes, and the command that opens a shell in a remotely debuggable container."""

from __future__ import annotations

from typing import Any

from orchestrator.wording import counted

# AWS Systems Manager's target for a training container (SageMaker developer guide, "Access a training container
# through AWS Systems Manager for remote debugging"; docs/sagemaker-contract.md §12).
REMOTE_DEBUG_COMMAND = "aws ssm start-session --target sagemaker-training-job:{job}_algo-1 --region {region}"


def setting_rows(described: dict[str, Any], region: str) -> list[tuple[str, str]]:
    """(label, text) for each setting the job has; none for a job without them."""
    resources = described.get("ResourceConfig", {})
    rows: list[tuple[str, str]] = []
    if resources.get("InstanceGroups"):
        groups = resources["InstanceGroups"]
        rows.append(("instance groups", ", ".join(
            f"{group['InstanceGroupName']} {group['InstanceCount']} x {group['InstanceType']}" for group in groups)))
    if resources.get("InstancePreferences"):
        offered = ", ".join(item["InstanceType"] for item in resources["InstancePreferences"])
        selected = resources.get("SelectedInstanceType")
        count = resources.get("SelectedInstanceCount", "?")
        rows.append(("instance preference", f"selected {count} x {selected} (of {offered})" if selected
                     else f"not selected yet (of {offered})"))
    if resources.get("TrainingPlanArn"):
        rows.append(("training plan", resources["TrainingPlanArn"]))
    if described.get("EnableManagedSpotTraining"):
        rows.append(("spot", spot_interruptions(described)))
    if described.get("RetryStrategy"):
        transitions = described.get("SecondaryStatusTransitions", [])
        restarts = sum(1 for item in transitions if item["Status"] == "Restarting")
        limit = described["RetryStrategy"]["MaximumRetryAttempts"]
        rows.append(("retries", f"{counted(restarts, 'restart')} so far, at most {limit} retries"))
    if described.get("TensorBoardOutputConfig"):
        config = described["TensorBoardOutputConfig"]
        local = config.get("LocalPath", "/opt/ml/output/tensorboard")
        rows.append(("tensorboard", f"{config['S3OutputPath']} (written to {local} in the container; "
                                    f"tensorboard --logdir {config['S3OutputPath']})"))
    if described.get("MlflowConfig"):
        config, details = described["MlflowConfig"], described.get("MlflowDetails", {})
        labels = (("experiment id", "MlflowExperimentId"), ("run id", "MlflowRunId"))
        where = ", ".join(f"{label} {details[key]}" for label, key in labels if key in details)
        rows.append(("mlflow", config["MlflowResourceArn"] + (f" ({where})" if where else "")))
    if described.get("RemoteDebugConfig", {}).get("EnableRemoteDebug"):
        rows.append(("remote debug", REMOTE_DEBUG_COMMAND.format(job=described["TrainingJobName"], region=region)))
    return rows


def spot_interruptions(described: dict[str, Any]) -> str:
    """A managed spot job's interruptions in one line (`interrupted 2 times, resumed from checkpoint s3://...`),
    counted from SecondaryStatusTransitions' `Interrupted` entries, so the full history need not be read for it."""
    transitions = [item["Status"] for item in described.get("SecondaryStatusTransitions", [])]
    interrupted = transitions.count("Interrupted")
    if not interrupted:
        return "managed spot, not interrupted"
    said = f"interrupted {counted(interrupted, 'time')}"
    if transitions[-1] == "Interrupted":
        return f"{said}, waiting for spot capacity to resume"
    checkpoints = described.get("CheckpointConfig", {}).get("S3Uri")
    if checkpoints:
        return f"{said}, resumed from checkpoint ({checkpoints})"
    return f"{said}, restarted without a checkpoint (no checkpoint.s3_uri): each restart trained from the start"
