"""`smtrain submit` refused by CreateTrainingJob itself: SageMaker's words, and the fix its message calls for.

S3 is moto's server, so the source is really uploaded. moto creates every training job it is sent and refuses
none, so CreateTrainingJob's answer is SageMaker's own: an HTTP 400 with its JSON error body, returned to botocore
by a `before-send` hook and parsed as botocore parses the real one. The messages are the ones users met, quoted
from the threads each case's id names."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from botocore.awsrequest import AWSResponse
from click.testing import CliRunner

from orchestrator.cli.main import main

ROLE = "arn:aws:iam::123456789012:role/PredictiveMaintenance-NotebookInstanceExecutionRol-YVBYTBKPP92H"


class _Body:
    def __init__(self, data: bytes) -> None:
        self._data = data

    def stream(self, **_: object) -> Iterator[bytes]:
        yield self._data


def _refused_by_sagemaker(session, code: str, message: str) -> None:
    """CreateTrainingJob answers as SageMaker does: HTTP 400, `{"__type": code, "message": ...}`."""
    body = json.dumps({"__type": code, "message": message}).encode()

    def answer(request, **_):
        return AWSResponse(request.url, 400, {"Content-Type": "application/x-amz-json-1.1",
                                              "x-amzn-RequestId": "5f1c2e"}, _Body(body))

    session.events.register("before-send.sagemaker.CreateTrainingJob", answer)


@pytest.mark.parametrize(("code", "message", "fix"), [
    pytest.param("ValidationException",
                 f"Could not assume role {ROLE}. Please ensure that the role exists and allows principal "
                 "'sagemaker.amazonaws.com' to assume the role.",
                 [f"SageMaker cannot assume {ROLE}: check that a role of exactly this ARN exists, its path included",
                  "`role/service-role/PredictiveMaintenance-NotebookInstanceExecutionRol-YVBYTBKPP92H`",
                  "trust policy allow sts:AssumeRole to the service principal sagemaker.amazonaws.com",
                  "`smtrain check SPEC`"],
                 id="https://github.com/awslabs/predictive-maintenance-using-machine-learning/issues/3"),
    pytest.param("ValidationException", "Unsupported instance type ml.p3dn.24xlarge",
                 ["SageMaker does not train on ml.p3dn.24xlarge in this region", "--set region=REGION"],
                 id="https://github.com/aws/amazon-sagemaker-examples/issues/3494"),
    pytest.param("ResourceLimitExceeded",
                 "The requested resource training-job/ml.p2.xlarge is not available in this region",
                 ["SageMaker does not train on ml.p2.xlarge in this region"],
                 id="https://github.com/aws/amazon-sagemaker-examples/issues/1001"),
    pytest.param("ResourceLimitExceeded",
                 "The account-level service limit 'ml.p4d.24xlarge for training job usage' is 0 Instances, with "
                 "current utilization of 0 Instances and a request delta of 2 Instances. Please contact AWS "
                 "support to request an increase for this limit.",
                 ["ask for 'ml.p4d.24xlarge for training job usage' of at least 2 in Service Quotas",
                  "request-service-quota-increase --service-code sagemaker --quota-code CODE --desired-value 2",
                  "or use fewer or other instances"],
                 id="https://github.com/gabehollombe-aws/jupyter-notebooks/issues/1"),
    pytest.param("ResourceLimitExceeded",
                 "The account-level service limit 'ml.p3.8xlarge for training job usage' is 2 Instances, with "
                 "current utilization of 3 Instances and a request delta of 1 Instances. Please contact AWS "
                 "support to request an increase for this limit.",
                 ["'ml.p3.8xlarge for training job usage' of at least 4", "wait until the jobs that use 3 of it end"],
                 id="https://github.com/aws/amazon-sagemaker-examples/issues/1543"),
])
def test_a_submit_that_createtrainingjob_refuses_shows_sagemakers_words_and_the_fix_they_call_for(
        write_spec, bucket, calls, code, message, fix):
    """Before: AWS's message alone (ValidationException had no fix), or for every ResourceLimitExceeded one advice
    about a quota, also where the region does not offer the type at all. Now the fix the message calls for."""
    session, _ = calls
    _refused_by_sagemaker(session, code, message)

    result = CliRunner().invoke(main, ["submit", str(write_spec())], obj=session)

    assert result.exit_code == 1, result.output
    shown = " ".join(result.stderr.split())
    assert f"CreateTrainingJob failed: {code}: {message}" in shown
    assert "Traceback" not in result.output
    for words in fix:
        assert words in shown.partition("To fix:")[2]
