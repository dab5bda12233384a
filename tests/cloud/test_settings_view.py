"""`smtrain status` and `Job` show what the further job settings produced, read from DescribeTrainingJob."""

from __future__ import annotations

from orchestrator.observing.job_status import JobStatus
from orchestrator.observing.settings_view import setting_rows

PLAN_ARN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/p5-reserved"
MLFLOW_ARN = "arn:aws:sagemaker:us-east-1:123456789012:mlflow-tracking-server/team"


def _described(**extra):
    return {"TrainingJobName": "job-1", "TrainingJobStatus": "InProgress", "ResourceConfig": {}, **extra}


def test_a_job_without_further_settings_has_no_rows():
    assert setting_rows(_described(ResourceConfig={"InstanceType": "ml.c5.2xlarge", "InstanceCount": 1}),
                        "us-east-1") == []


def test_each_setting_shows_what_it_produced():
    described = _described(
        ResourceConfig={"InstancePreferences": [{"InstanceType": "ml.p5.48xlarge", "InstanceCount": 1},
                                                {"InstanceType": "ml.p4d.24xlarge", "InstanceCount": 2}],
                        "SelectedInstanceType": "ml.p4d.24xlarge", "SelectedInstanceCount": 2,
                        "TrainingPlanArn": PLAN_ARN},
        RetryStrategy={"MaximumRetryAttempts": 3},
        SecondaryStatusTransitions=[{"Status": "Training"}, {"Status": "Restarting"}, {"Status": "Training"}],
        TensorBoardOutputConfig={"S3OutputPath": "s3://b/tb/", "LocalPath": "/opt/ml/output/tensorboard"},
        MlflowConfig={"MlflowResourceArn": MLFLOW_ARN}, MlflowDetails={"MlflowRunId": "r-1"},
        RemoteDebugConfig={"EnableRemoteDebug": True})
    rows = dict(setting_rows(described, "eu-west-1"))
    assert rows["instance preference"] == "selected 2 x ml.p4d.24xlarge (of ml.p5.48xlarge, ml.p4d.24xlarge)"
    assert rows["training plan"] == PLAN_ARN
    assert rows["retries"] == "1 restart so far, at most 3 retries"
    assert rows["tensorboard"].startswith("s3://b/tb/ (written to /opt/ml/output/tensorboard")
    assert rows["mlflow"] == f"{MLFLOW_ARN} (run id r-1)"
    assert rows["remote debug"] == ("aws ssm start-session --target sagemaker-training-job:job-1_algo-1 "
                                    "--region eu-west-1")


def test_instance_groups_and_a_preference_not_yet_selected():
    described = _described(ResourceConfig={
        "InstanceGroups": [{"InstanceGroupName": "data", "InstanceType": "ml.c5.2xlarge", "InstanceCount": 1},
                           {"InstanceGroupName": "train", "InstanceType": "ml.g5.12xlarge", "InstanceCount": 2}]})
    assert setting_rows(described, "us-east-1") == [
        ("instance groups", "data 1 x ml.c5.2xlarge, train 2 x ml.g5.12xlarge")]
    pending = _described(ResourceConfig={"InstancePreferences": [{"InstanceType": "ml.p5.48xlarge"}]})
    assert dict(setting_rows(pending, "us-east-1"))["instance preference"] == "not selected yet (of ml.p5.48xlarge)"


def test_job_status_carries_the_rows_into_its_json():
    status = JobStatus.from_description(_described(RemoteDebugConfig={"EnableRemoteDebug": True}), "us-east-1")
    assert status.to_dict()["settings"] == {
        "remote debug": "aws ssm start-session --target sagemaker-training-job:job-1_algo-1 --region us-east-1"}


def test_the_instances_row_names_the_selected_preference_or_the_groups():
    selected = JobStatus.from_description(_described(ResourceConfig={
        "InstancePreferences": [{"InstanceType": "ml.p5.48xlarge"}], "InstanceCount": 2,
        "SelectedInstanceType": "ml.p5.48xlarge", "SelectedInstanceCount": 2}), "us-east-1")
    assert selected.instances == "2 x ml.p5.48xlarge"
    groups = JobStatus.from_description(_described(ResourceConfig={"InstanceGroups": [
        {"InstanceGroupName": "data", "InstanceType": "ml.c5.2xlarge", "InstanceCount": 1},
        {"InstanceGroupName": "train", "InstanceType": "ml.g5.12xlarge", "InstanceCount": 2}]}), "us-east-1")
    assert groups.instances == "3 in instance groups"
