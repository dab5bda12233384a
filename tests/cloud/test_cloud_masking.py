"""The cloud side masks with redact.py's one mechanism, as `smtrain local` does."""

from __future__ import annotations

import json

from click.testing import CliRunner
from job_fakes import NOW, SECRET, described

from orchestrator.cli.main import main
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


HF_TOKEN_VALUE = "hf_" + "a1B2c3D4e5" * 4
"""A Hugging Face token by its form: masked whatever name it was given, or none."""
SCRIPT_FAILURE = ('AlgorithmError: ExecuteUserScriptError:\nExitCode 1\nErrorMessage "ValueError: bad token '
                  f'{HF_TOKEN_VALUE}\n"\nCommand "/opt/conda/bin/python3.10 train.py --api-key XYZ-1234", exit code: 1')
"""The toolkit's FailureReason for a script that failed: its last error and its command line."""


def test_status_masks_what_sagemaker_says_of_a_job_beside_its_failure_reason(stubbed_sagemaker):
    """`smtrain status NAME` (text and JSON): the status history's messages and the cause read from the failure
    reason (the job's streams expired or were never written) quote the job as the failure reason does; each is
    masked as it is, for the job's own secret values and every credential-looking value."""
    sagemaker = stubbed_sagemaker.stubbers["sagemaker"]
    for _ in ("text", "json"):
        sagemaker.add_response("describe_training_job", described(
            "tiny-failed", "Failed", "Failed", TrainingEndTime=NOW,
            HyperParameters={"sagemaker_program": '"train.py"', "wandb-key": SECRET}, FailureReason=SCRIPT_FAILURE,
            SecondaryStatusTransitions=[{"Status": "Failed", "StartTime": NOW, "StatusMessage":
                                         f"Training job failed: train.py --api-key XYZ-1234 (token {SECRET})"}]))

    text = CliRunner().invoke(main, ["status", "tiny-failed"], obj=stubbed_sagemaker)
    document = json.loads(CliRunner().invoke(main, ["status", "tiny-failed", "-o", "json"],
                                             obj=stubbed_sagemaker).stdout)

    assert text.exit_code == 0, text.output
    for leaked in (SECRET, HF_TOKEN_VALUE, "XYZ-1234"):
        assert leaked not in text.output and leaked not in json.dumps(document), leaked
    assert f"Training job failed: train.py --api-key {MASK} (token {MASK})" in text.output
    assert document["history"][0]["message"] == f"Training job failed: train.py --api-key {MASK} (token {MASK})"
    assert document["failure_cause"]["exception"] == f"ValueError: bad token {MASK}"
