"""create_once: the one loop that creates a training or tuning job exactly once (throttling, lost responses,
name clashes, giving up), tested against a fake SageMaker that records what it was asked."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError, ConnectionClosedError

from orchestrator.cloud import create_once as module
from orchestrator.cloud.create_once import Creation, create_once, same_training_definition
from orchestrator.errors import AwsError

OURS = {"HyperParameters": {"sagemaker_job_name": '"j"'}, "RoleArn": "arn:aws:iam::1:role/r",
        "AlgorithmSpecification": {"TrainingImage": "image:1"}}


def _error(code: str, status: int = 400, message: str = "") -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message or code},
                        "ResponseMetadata": {"HTTPStatusCode": status}}, "CreateTrainingJob")


class FakeSageMaker:
    """Answers each create with the next outcome (an exception, or None: created); keeps what exists."""

    def __init__(self, *outcomes: Exception | None, existing: dict | None = None) -> None:
        self.outcomes, self.existing, self.calls = list(outcomes), existing, []

    def send(self) -> None:
        self.calls.append("create")
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, ConnectionClosedError):  # the server created it; the response was lost
            self.existing = OURS
        if outcome is not None:
            raise outcome
        self.existing = OURS

    def describe(self) -> dict:
        self.calls.append("describe")
        if self.existing is None:
            raise _error("ValidationException", message="Requested resource not found.")
        return self.existing

    def creation(self) -> Creation:
        return Creation(what="training job j", operation="CreateTrainingJob", send=self.send,
                        describe=self.describe,
                        is_ours=lambda described: same_training_definition(described, OURS, "HyperParameters"),
                        name_clash=AwsError("a training job named j already exists", fix="another name"),
                        secrets=frozenset({"hunter2"}))


def test_throttling_is_retried_after_looking_the_job_up():
    fake, pauses = FakeSageMaker(_error("ThrottlingException"), None), []
    create_once(fake.creation(), sleep=pauses.append)
    assert fake.calls == ["create", "describe", "create"]
    assert len(pauses) == 1 and 0 <= pauses[0] <= module.BACKOFF_BASE_SECONDS


def test_a_lost_response_adopts_the_job_it_created_without_a_second_create():
    fake = FakeSageMaker(ConnectionClosedError(endpoint_url="http://sagemaker"))
    create_once(fake.creation(), sleep=pytest.fail)
    assert fake.calls == ["create", "describe"]


def test_resource_in_use_on_the_first_call_is_a_clash_even_when_the_job_looks_like_ours():
    fake = FakeSageMaker(_error("ResourceInUse"), existing=OURS)
    with pytest.raises(AwsError, match="already exists"):
        create_once(fake.creation(), sleep=pytest.fail)
    assert fake.calls == ["create"]


def test_resource_in_use_after_an_unknown_outcome_adopts_only_our_own_job():
    ours = FakeSageMaker(_error("ServiceUnavailable", 503), _error("ResourceInUse"))
    create_once(ours.creation(), sleep=lambda _: setattr(ours, "existing", OURS))  # created meanwhile
    assert ours.calls == ["create", "describe", "create", "describe"]

    theirs = FakeSageMaker(_error("ServiceUnavailable", 503), _error("ResourceInUse"))
    someone_elses = {**OURS, "RoleArn": "arn:aws:iam::1:role/other"}
    with pytest.raises(AwsError, match="already exists"):
        create_once(theirs.creation(), sleep=lambda _: setattr(theirs, "existing", someone_elses))


def test_gives_up_after_the_last_attempt_saying_a_resubmit_is_safe_with_secrets_masked():
    fake = FakeSageMaker(*[_error("ThrottlingException", message="Rate exceeded for hunter2")] * module.CREATE_ATTEMPTS)
    with pytest.raises(AwsError) as raised:
        create_once(fake.creation(), sleep=lambda _: None)
    assert fake.calls.count("create") == module.CREATE_ATTEMPTS
    assert f"failed {module.CREATE_ATTEMPTS} times" in str(raised.value) and "hunter2" not in str(raised.value)
    assert "submitting again is safe" in raised.value.fix


def test_a_non_transient_error_is_raised_at_once():
    fake = FakeSageMaker(_error("ValidationException", message="RoleArn is not valid"))
    with pytest.raises(AwsError, match="RoleArn is not valid"):
        create_once(fake.creation(), sleep=pytest.fail)
    assert fake.calls == ["create"]
