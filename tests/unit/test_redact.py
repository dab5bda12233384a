from orchestrator.redact import MASK, redact


def test_redact_masks_secret_looking_names_everywhere():
    document = {
        "Environment": {"WANDB_API_KEY": "abc", "NCCL_DEBUG": "WARN", "DB_PASSWORD": "pw"},
        "HyperParameters": {"hf-token": "\"t\"", "epochs": "3"},
        "nested": [{"aws_secret_access_key": "s"}],
    }
    assert redact(document) == {
        "Environment": {"WANDB_API_KEY": MASK, "NCCL_DEBUG": "WARN", "DB_PASSWORD": MASK},
        "HyperParameters": {"hf-token": MASK, "epochs": "3"},
        "nested": [{"aws_secret_access_key": MASK}],
    }
