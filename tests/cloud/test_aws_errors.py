"""One translation of AWS failures for every command: the same failure gets the same advice whether a job
command or `smtrain infra` met it (botocore's Stubber: real clients, canned errors, no network)."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.stub import Stubber
from job_fakes import shared_loader_session

from orchestrator.cloud import infra
from orchestrator.cloud.jobs import JobClient
from orchestrator.errors import AwsError, EnvironmentProblem

DENIED = ("User: arn:aws:iam::123456789012:user/dev is not authorized to perform: {action} on resource: "
          "arn:aws:{service}:us-east-1:123456789012:thing because no identity-based policy allows it")


def _session_answering(service: str, method: str, code: str, message: str) -> Any:
    session = shared_loader_session(region_name="us-east-1", aws_access_key_id="testing",
                                    aws_secret_access_key="testing")
    client = session.client(service)
    stubber = Stubber(client)
    stubber.add_client_error(method, service_error_code=code, service_message=message, http_status_code=403)
    stubber.activate()
    session.client = lambda *args, **kwargs: client  # cloud.sdk.client() asks the session for its client
    return session


def _failure(call, service: str, method: str, code: str, action: str) -> AwsError:
    session = _session_answering(service, method, code, DENIED.format(action=action, service=service))
    with pytest.raises(AwsError) as raised:
        call(session)
    return raised.value


def test_access_denied_gets_the_same_advice_from_infra_and_job_commands():
    from_infra = _failure(lambda session: infra.stack_outputs(session=session), "cloudformation",
                          "describe_stacks", "AccessDenied", "cloudformation:DescribeStacks")
    from_jobs = _failure(lambda session: JobClient("tiny-1", session).status(), "sagemaker",
                         "describe_training_job", "AccessDeniedException", "sagemaker:DescribeTrainingJob")

    assert "reading CloudFormation stack smtrain: DescribeStacks failed: AccessDenied" in str(from_infra)
    assert "not authorized to perform: cloudformation:DescribeStacks" in str(from_infra)
    assert "DescribeTrainingJob failed: AccessDeniedException" in str(from_jobs)
    assert from_infra.fix == from_jobs.fix
    assert "action named above" in from_infra.fix and "docs/sagemaker.md" in from_infra.fix
    assert from_infra.exit_code == from_jobs.exit_code == 1


def test_missing_region_gets_the_same_advice_from_infra_and_job_commands(monkeypatch):
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    bare = shared_loader_session(aws_access_key_id="testing", aws_secret_access_key="testing")
    problems = []
    for call in (lambda: infra.stack_outputs(session=bare), lambda: JobClient("tiny-1", bare).status()):
        with pytest.raises(EnvironmentProblem, match="no AWS region configured") as raised:
            call()
        problems.append(raised.value.fix)

    assert problems[0] == problems[1]
    assert "AWS_REGION" in problems[0] and "--region" in problems[0]


@pytest.mark.parametrize("service, method, code", [
    ("sagemaker", "describe_training_job", "UnrecognizedClientException"),  # an unknown key, JSON protocol
    ("sagemaker", "describe_training_job", "InvalidSignatureException"),  # a wrong secret, JSON protocol
    ("cloudformation", "describe_stacks", "InvalidClientTokenId"),  # an unknown key, query protocol
    ("cloudformation", "describe_stacks", "SignatureDoesNotMatch"),  # a wrong secret, query protocol and S3
])
def test_credentials_aws_does_not_accept_get_advice_that_names_them(service, method, code):
    """A mistyped key or secret used to print only AWS's words ("The security token included in the request is
    invalid"), with no fix."""
    session = _session_answering(service, method, code, "The security token included in the request is invalid.")
    call = (lambda: JobClient("tiny-1", session).status()) if service == "sagemaker" else (
        lambda: infra.stack_outputs(session=session))

    with pytest.raises(AwsError, match=code) as raised:
        call()

    assert raised.value.fix is not None and "`aws sts get-caller-identity`" in raised.value.fix


def _client_error(code: str, message: str = "", status: int = 400, operation: str = "AnyCall") -> Exception:
    from botocore.exceptions import ClientError

    return ClientError({"Error": {"Code": code, "Message": message},
                        "ResponseMetadata": {"HTTPStatusCode": status}}, operation)


def test_the_aws_error_path_masks_secret_looking_flags_as_the_rest_does():
    """An AWS message can quote the command line it was given: `--api_key abc` is masked with no secret known."""
    from orchestrator.cloud.aws_errors import aws_errors
    from orchestrator.redact import MASK, mask_text

    quoted = "Value 'train.py --api_key abc --epochs 3' at 'hyperParameters' failed"
    with pytest.raises(AwsError) as raised, aws_errors("creating training job tiny-1"):
        raise _client_error("ValidationException", quoted, operation="CreateTrainingJob")

    assert f"--api_key {MASK} --epochs 3" in str(raised.value) and "abc" not in str(raised.value)
    assert mask_text(quoted) in str(raised.value)


def test_expected_failures_are_told_apart_by_the_translator_alone():
    """submit, tuning, jobs, logs, infra, check and the default bucket ask these instead of reading responses."""
    from botocore.exceptions import NoRegionError

    from orchestrator.cloud import aws_errors as translator

    assert translator.is_transient(_client_error("ThrottlingException"))
    assert translator.is_transient(_client_error("InternalFailure", status=503))
    assert not translator.is_transient(_client_error("ValidationException"))
    assert translator.is_name_taken(_client_error("ResourceInUse"))
    assert translator.is_not_found(_client_error("ValidationException", "Requested resource not found."))
    assert not translator.is_not_found(_client_error("ValidationException", "Value at 'roleArn' failed"))
    assert translator.is_missing_in_s3(_client_error("404", status=404))
    assert translator.is_missing_in_s3(_client_error("NoSuchBucket", status=404))
    assert not translator.is_missing_in_s3(_client_error("403", status=403))
    assert translator.is_missing_stack(_client_error("ValidationError", "Stack with id smtrain does not exist"))
    assert translator.error_code(_client_error("AccessDenied")) == "AccessDenied"
    assert translator.error_code(NoRegionError()) == "NoRegionError"
    assert translator.error_message(_client_error("X", "why")) == "why"


def test_a_call_still_throttled_after_botocores_retries_gets_a_fix(stubbed):
    """`smtrain stop j1` answered ThrottlingException used to print only AWS's "Rate exceeded", with no fix."""
    from click.testing import CliRunner
    from job_fakes import described

    from orchestrator.cli.main import main

    sagemaker = stubbed.stubbers["sagemaker"]
    sagemaker.add_response("describe_training_job", described("j1", "InProgress", "Training"))
    sagemaker.add_client_error("stop_training_job", service_error_code="ThrottlingException",
                               service_message="Rate exceeded", http_status_code=400)
    sagemaker.add_response("describe_training_job", described("j1", "InProgress", "Training"))

    result = CliRunner().invoke(main, ["stop", "sagemaker:j1"], obj=stubbed)

    assert result.exit_code == 1
    assert "StopTrainingJob failed: ThrottlingException: Rate exceeded\n  To fix: AWS throttled the call and " \
           "botocore's retries ran out: wait a minute and run it again;" in result.stderr
    assert "per account and region" in result.stderr
