"""The cloud side masks with redact.py's one mechanism, as `smtrain local` does."""

from __future__ import annotations

from job_fakes import described

from orchestrator.cloud.jobs import JobClient
from orchestrator.redact import MASK


def test_the_cloud_side_masks_secret_looking_assignments_the_spec_never_held(stubbed):
    """`smtrain status`'s failure reason: a token the job read from elsewhere, printed as HF_TOKEN=... or given to
    a --db-password flag, is masked as it is on this machine, not only the request's own values."""
    stubbed.stubbers["sagemaker"].add_response("describe_training_job", described(
        "tiny-x", "Failed", "Failed", TrainingEndTime=described("x", "Failed", "Failed")["CreationTime"],
        FailureReason="AlgorithmError: HF_TOKEN=hf_abcdefgh1234 rejected; cmd: train.py --db-password s3cr3t-pw"))

    reason = JobClient("tiny-x", stubbed).status().failure_reason

    assert "hf_abcdefgh1234" not in reason and "s3cr3t-pw" not in reason
    assert reason == f"AlgorithmError: HF_TOKEN={MASK} rejected; cmd: train.py --db-password {MASK}"
