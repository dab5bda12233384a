from orchestrator.redact import MASK, redact


def test_redact_masks_secret_looking_entries_of_user_maps():
    document = {
        "Environment": {"WANDB_API_KEY": "abc", "NCCL_DEBUG": "WARN", "DB_PASSWORD": "pw"},
        "HyperParameters": {"hf-token": "\"t\"", "epochs": "3"},
        "Tags": [{"Key": "team", "Value": "ml"}, {"Key": "deploy-token", "Value": "t0k"}],
        "spec": {"environment": {"AWS_SECRET_ACCESS_KEY": "s"}, "tags": {"team": "ml", "api_key": "k"}},
    }
    assert redact(document) == {
        "Environment": {"WANDB_API_KEY": MASK, "NCCL_DEBUG": "WARN", "DB_PASSWORD": MASK},
        "HyperParameters": {"hf-token": MASK, "epochs": "3"},
        "Tags": [{"Key": "team", "Value": "ml"}, {"Key": "deploy-token", "Value": MASK}],
        "spec": {"environment": {"AWS_SECRET_ACCESS_KEY": MASK}, "tags": {"team": "ml", "api_key": MASK}},
    }


def test_redact_leaves_api_field_names_alone():
    request = {"OutputDataConfig": {"KmsKeyId": "arn:aws:kms:us-east-1:1:key/abc", "S3OutputPath": "s3://b/"},
               "ResourceConfig": {"VolumeKmsKeyId": "k"}}
    assert redact(request) == request
