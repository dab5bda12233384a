"""`smtrain check SPEC`: each check's ✗ with its fix, and all ✓, against moto's server (the `aws` fixture).

moto has no Service Quotas for SageMaker (its servicequotas backend lists defaults of a few other services), so the
`service-quotas` client of these sessions answers from botocore's Stubber; nor IAM's SimulatePrincipalPolicy (its
server answers HTTP 500), which answers from a Stubber too (`SimulatingIam`); every other call goes to moto. The one
case moto cannot play, a bucket that refuses a write (moto enforces no bucket policy), stubs S3's PutObject too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from click.testing import CliRunner
from job_fakes import BUCKET, shared_loader_core, write_spec_file

from orchestrator.cli.main import main

ACCOUNT = "123456789012"  # moto's account
TRUST_SAGEMAKER = {"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": {"Service": "sagemaker.amazonaws.com"}, "Action": "sts:AssumeRole"}]}
TRUST_EC2 = {"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}]}
QUOTA = "ml.c5.2xlarge for training job usage"
ROLE_ARN = f"arn:aws:iam::{ACCOUNT}:role/SageMakerExecution"
LOGS_ARN = f"arn:aws:logs:us-east-1:{ACCOUNT}:log-group:/aws/sagemaker/TrainingJobs:*"
LOG_WRITES = ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"]


class SimulatingIam:
    """moto's IAM, but for SimulatePrincipalPolicy, which moto lacks: botocore's Stubber checks each request
    against IAM's model and answers it with `decisions` (action -> EvalDecision; every other action allowed), or
    with the error `refusal` (code, HTTP status). `requests` keeps what was asked, in order."""

    def __init__(self, moto_iam: Any, simulator: Any, decisions: dict[str, str],
                 refusal: tuple[str, int] | None) -> None:
        self.moto_iam, self.simulator, self.decisions, self.refusal = moto_iam, simulator, decisions, refusal
        self.stubber = Stubber(simulator)
        self.stubber.activate()
        self.requests: list[dict[str, Any]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.moto_iam, name)

    def simulate_principal_policy(self, **request: Any) -> dict[str, Any]:
        self.requests.append(request)
        if self.refusal:
            self.stubber.add_client_error("simulate_principal_policy", *self.refusal, expected_params=request)
        else:
            results = [{"EvalActionName": action, "EvalResourceName": request["ResourceArns"][0],
                        "EvalDecision": self.decisions.get(action, "allowed")} for action in request["ActionNames"]]
            self.stubber.add_response("simulate_principal_policy", {"EvaluationResults": results,
                                                                   "IsTruncated": False}, request)
        return self.simulator.simulate_principal_policy(**request)


class QuotaSession(boto3.Session):
    """moto for everything but Service Quotas, IAM's policy simulator (and, where given, S3), which answer from
    Stubbers."""

    def __init__(self, quota_value: float | None = 4, region: str | None = "us-east-1",
                 stub_s3: Any = None, decisions: dict[str, str] | None = None,
                 simulate_refusal: tuple[str, int] | None = None) -> None:
        super().__init__(region_name=region, botocore_session=shared_loader_core())
        self.iam = SimulatingIam(super().client("iam"), super().client("iam"), decisions or {}, simulate_refusal)
        self.quotas = super().client("service-quotas", region_name=region or "us-east-1")
        stubber = Stubber(self.quotas)
        quotas = [] if quota_value is None else [
            {"ServiceCode": "sagemaker", "QuotaCode": "L-3F53BB0B", "QuotaName": QUOTA, "Value": quota_value}]
        for _ in range(2 if region else 0):  # _check runs the command twice: -o json, then text
            stubber.add_response("list_service_quotas", {"Quotas": quotas}, {"ServiceCode": "sagemaker"})
        stubber.activate()
        self.stub_s3 = stub_s3

    def client(self, service_name: str, *args: Any, **kwargs: Any) -> Any:
        if service_name == "service-quotas":
            return self.quotas
        if service_name == "iam":
            return self.iam
        if service_name == "s3" and self.stub_s3 is not None:
            return self.stub_s3
        return super().client(service_name, *args, **kwargs)


@pytest.fixture
def account(aws: str) -> None:
    """A role SageMaker may assume and the output bucket, in us-east-1."""
    boto3.client("iam").create_role(RoleName="SageMakerExecution", AssumeRolePolicyDocument=json.dumps(TRUST_SAGEMAKER))
    boto3.client("s3").create_bucket(Bucket=BUCKET)


def _check(spec: Path, session: boto3.Session, *options: str) -> tuple[int, dict[str, dict[str, Any]], str]:
    result = CliRunner().invoke(main, ["check", str(spec), *options, "-o", "json"], obj=session)
    text = CliRunner().invoke(main, ["check", str(spec), *options], obj=session) if not options else None
    document = json.loads(result.stdout)
    assert document["passed"] is (result.exit_code == 0)
    return result.exit_code, {item["name"]: item for item in document["checks"]}, text.stdout if text else ""


def test_all_pass_on_a_ready_account(account, tmp_path):
    spec = write_spec_file(tmp_path, framework_version="2.10.0", py_version="py313")
    session = QuotaSession()
    result = CliRunner().invoke(main, ["check", str(spec)], obj=session)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert [line.split()[:2] for line in lines] == [["✓", name] for name in ("credentials", "region", "role", "bucket",
                                                                           "permissions", "image", "quota")]
    assert f"account {ACCOUNT}" in lines[0] and "us-east-1" in lines[1]
    assert "assumable by sagemaker.amazonaws.com" in lines[2] and f"{BUCKET} in us-east-1, writable" in lines[3]
    assert "role SageMakerExecution may write the job's CloudWatch Logs and use its S3 locations" in lines[4]
    assert "pytorch-training:2.10.0-cpu-py313" in lines[5] and f"'{QUOTA}' is 4 >= 2" in lines[6]
    assert [(request["ActionNames"], request["ResourceArns"]) for request in session.iam.requests] == [
        (LOG_WRITES, [LOGS_ARN]),
        (["s3:PutObject"], [f"arn:aws:s3:::{BUCKET}/outputs/*"]),
        (["s3:GetObject"], [f"arn:aws:s3:::{BUCKET}/code/*"]),
        (["s3:GetObject"], [f"arn:aws:s3:::{BUCKET}/data/train/*"]),
        (["s3:ListBucket"], [f"arn:aws:s3:::{BUCKET}"]),
    ]
    assert {request["PolicySourceArn"] for request in session.iam.requests} == {ROLE_ARN}
    assert list(boto3.client("s3").list_objects_v2(Bucket=BUCKET).get("Contents", [])) == []  # the probe is gone


def test_a_role_that_cannot_write_logs_or_the_output_path(account, tmp_path):
    """A role without CloudWatch Logs writes gives a job that shows no logs at all, and one that may not write the
    output path a job whose model is lost: SageMaker finds out only once the job runs. Before: all ✓ (the bucket
    check writes with the caller's credentials, never the role's)."""
    refused = {"logs:CreateLogStream": "implicitDeny", "logs:PutLogEvents": "implicitDeny",
               "s3:PutObject": "implicitDeny"}
    code, checks, text = _check(write_spec_file(tmp_path), QuotaSession(decisions=refused))

    assert code == 1
    assert [name for name, item in checks.items() if not item["ok"]] == ["permissions"]
    assert checks["permissions"]["detail"] == (
        "role SageMakerExecution may not logs:CreateLogStream, logs:PutLogEvents on CloudWatch Logs "
        "/aws/sagemaker/TrainingJobs: without them the job shows no logs; s3:PutObject on "
        f"s3://{BUCKET}/outputs/ (the output path: the model is saved there)")
    assert checks["permissions"]["fix"] == (
        f"add to role SageMakerExecution's policy an Allow of logs:CreateLogStream, logs:PutLogEvents on {LOGS_ARN}; "
        f"s3:PutObject on arn:aws:s3:::{BUCKET}/outputs/*; the role `smtrain infra deploy` creates has the "
        "CloudWatch Logs ones (infra/smtrain.yaml)")
    assert "✗ permissions" in text and "fix: add to role SageMakerExecution's policy" in text


@pytest.mark.parametrize(("fields", "sdk_session", "code"), [
    ({}, None, f"s3://{BUCKET}/code/"),
    ({"code_location": f"s3://{BUCKET}/team/src"}, None, f"s3://{BUCKET}/team/src/"),
    ({"output_path": None}, {"DefaultS3Bucket": BUCKET, "DefaultS3ObjectKeyPrefix": "team-a"},
     f"s3://{BUCKET}/team-a/code/"),
], ids=["beside-the-output-path", "code_location", "sdk-defaults-prefix"])
def test_a_role_that_cannot_read_the_uploaded_code(account, tmp_path, monkeypatch, fields, sdk_session, code):
    """Each host's training toolkit downloads the code submit uploads (`<sha256>/sourcedir.tar.gz` under
    code_location, else `code` beside the output path) with the role's credentials: a role that may not read it
    fails the job after its instances started. Before: ✓ permissions, the code's prefix never simulated."""
    if sdk_session:
        config = tmp_path / "admin.yaml"
        config.write_text(json.dumps({"SchemaVersion": "1.0", "SageMaker": {"PythonSDK": {"Modules": {
            "Session": sdk_session}}}}))
        monkeypatch.setenv("SAGEMAKER_ADMIN_CONFIG_OVERRIDE", str(config))
    session = QuotaSession(decisions={"s3:GetObject": "implicitDeny"})
    code_arn = f"arn:aws:s3:::{code.removeprefix('s3://')}*"
    _, checks, _ = _check(write_spec_file(tmp_path, inputs={}, **fields), session)

    assert checks["permissions"]["detail"] == (
        f"role SageMakerExecution may not s3:GetObject on {code} (the uploaded code: each host downloads "
        "sourcedir.tar.gz from there)")
    assert checks["permissions"]["fix"] == (f"add to role SageMakerExecution's policy an Allow of s3:GetObject on "
                                            f"{code_arn}")
    assert (["s3:GetObject"], [code_arn]) in [(request["ActionNames"], request["ResourceArns"])
                                              for request in session.iam.requests]


def test_a_deny_is_named_apart_from_a_missing_allow(account, tmp_path):
    """An explicit Deny (a permissions boundary, an SCP) is not lifted by adding an Allow, so the fix says so."""
    code, checks, _ = _check(write_spec_file(tmp_path), QuotaSession(decisions={"s3:GetObject": "explicitDeny"}))

    assert code == 1
    assert checks["permissions"]["detail"] == (
        f"role SageMakerExecution may not s3:GetObject on s3://{BUCKET}/code/ (the uploaded code: each host downloads "
        f"sourcedir.tar.gz from there); s3:GetObject on s3://{BUCKET}/data/train/ (channel train's data)")
    assert checks["permissions"]["fix"] == (
        "a Deny (the role's policies, its permissions boundary or an organization SCP) refuses s3:GetObject on "
        f"arn:aws:s3:::{BUCKET}/code/*; s3:GetObject on arn:aws:s3:::{BUCKET}/data/train/*: lift it for this role")


def test_a_caller_who_may_not_simulate_the_role_gets_not_checked(account, tmp_path):
    """Many callers may read a role but not run IAM's policy simulator on it: the line says what was not checked
    and why, and check still passes on the rest."""
    code, checks, _ = _check(write_spec_file(tmp_path), QuotaSession(simulate_refusal=("AccessDenied", 403)))

    assert code == 0, checks
    assert checks["permissions"] == {"name": "permissions", "ok": True, "fix": None, "detail": (
        "not checked (your credentials may not simulate the role's policy: iam:SimulatePrincipalPolicy)")}


def test_a_throttled_simulation_fails_with_the_throttling_advice(account, tmp_path):
    code, checks, _ = _check(write_spec_file(tmp_path), QuotaSession(simulate_refusal=("Throttling", 400)))

    assert code == 1
    assert checks["permissions"]["detail"] == "cannot simulate role SageMakerExecution's policy: Throttling"
    assert checks["permissions"]["fix"].startswith("AWS throttled the call")
    assert checks["permissions"]["fix"].endswith("; or read the role's policies in the IAM console")


def test_no_credentials(aws, tmp_path, monkeypatch):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    code, checks, _ = _check(write_spec_file(tmp_path), QuotaSession())
    assert code == 1
    assert not checks["credentials"]["ok"] and "aws configure" in checks["credentials"]["fix"]
    assert checks["role"]["detail"] == "not checked: needs working credentials"


def test_no_region(aws, tmp_path, monkeypatch):
    monkeypatch.delenv("AWS_REGION")
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    code, checks, _ = _check(write_spec_file(tmp_path), QuotaSession(region=None))
    assert code == 1
    assert not checks["region"]["ok"] and "export AWS_REGION=" in checks["region"]["fix"]
    assert "pass --region <region>" in checks["region"]["fix"]  # the command line's one spelling of a region


def test_missing_role(aws, tmp_path):
    boto3.client("s3").create_bucket(Bucket=BUCKET)
    code, checks, text = _check(write_spec_file(tmp_path), QuotaSession())
    assert code == 1
    assert checks["role"]["detail"] == f"role SageMakerExecution does not exist in account {ACCOUNT}"
    assert "smtrain infra deploy" in checks["role"]["fix"]
    assert "✗ role" in text and "fix: check the name or ARN" in text
    assert [name for name, item in checks.items() if not item["ok"]] == ["role", "permissions"]
    assert checks["permissions"]["detail"] == "not checked: needs the role above"


def test_role_sagemaker_may_not_assume(aws, tmp_path):
    boto3.client("iam").create_role(RoleName="SageMakerExecution", AssumeRolePolicyDocument=json.dumps(TRUST_EC2))
    boto3.client("s3").create_bucket(Bucket=BUCKET)
    code, checks, _ = _check(write_spec_file(tmp_path), QuotaSession())
    assert code == 1
    assert "trust policy does not let SageMaker assume it" in checks["role"]["detail"]
    assert "sagemaker.amazonaws.com" in checks["role"]["fix"]


def test_a_role_arn_without_the_roles_path(aws, tmp_path):
    """The console makes execution roles under `service-role/`; an ARN without that path names no role SageMaker
    can assume, and the job fails with `ClientError: SageMaker was unable to assume the role ...`
    (https://github.com/aws/sagemaker-python-sdk/issues/43). Before: ✓, IAM found the role by its name alone."""
    boto3.client("iam").create_role(RoleName="SageMakerExecution", Path="/service-role/",
                                    AssumeRolePolicyDocument=json.dumps(TRUST_SAGEMAKER))
    boto3.client("s3").create_bucket(Bucket=BUCKET)
    code, checks, _ = _check(write_spec_file(tmp_path), QuotaSession())
    assert code == 1
    assert checks["role"]["detail"].startswith(f"arn:aws:iam::{ACCOUNT}:role/SageMakerExecution names role "
                                               "SageMakerExecution, whose ARN is "
                                               f"arn:aws:iam::{ACCOUNT}:role/service-role/SageMakerExecution")
    assert checks["role"]["fix"].startswith(f"set `role: arn:aws:iam::{ACCOUNT}:role/service-role/SageMakerExecution`")


def test_missing_bucket(aws, tmp_path):
    boto3.client("iam").create_role(RoleName="SageMakerExecution",
                                    AssumeRolePolicyDocument=json.dumps(TRUST_SAGEMAKER))
    code, checks, _ = _check(write_spec_file(tmp_path), QuotaSession())
    assert code == 1
    assert checks["bucket"]["detail"] == f"bucket {BUCKET} does not exist"
    assert f"aws s3 mb s3://{BUCKET} --region us-east-1" in checks["bucket"]["fix"]


def test_bucket_in_another_region(aws, tmp_path):
    boto3.client("iam").create_role(RoleName="SageMakerExecution",
                                    AssumeRolePolicyDocument=json.dumps(TRUST_SAGEMAKER))
    boto3.client("s3", region_name="eu-west-1").create_bucket(
        Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    code, checks, _ = _check(write_spec_file(tmp_path), QuotaSession())
    assert code == 1
    assert f"bucket {BUCKET} is in eu-west-1, the job runs in us-east-1" in checks["bucket"]["detail"]
    assert "use a bucket in us-east-1" in checks["bucket"]["fix"]


def test_bucket_not_writable(account, tmp_path):
    """Stubber for S3 here: moto's server enforces no bucket policy, so it cannot refuse the probe write."""
    s3 = boto3.client("s3")
    stubber = Stubber(s3)
    stubber.add_response("get_bucket_location", {"LocationConstraint": "us-east-1"}, {"Bucket": BUCKET})
    stubber.add_client_error("put_object", "AccessDenied", "Access Denied", 403)
    stubber.activate()
    code, checks, _ = _check(write_spec_file(tmp_path), QuotaSession(stub_s3=s3))
    assert code == 1
    assert checks["bucket"]["detail"] == f"cannot write to s3://{BUCKET}/outputs/: AccessDenied"
    assert f"s3:PutObject on arn:aws:s3:::{BUCKET}/*" in checks["bucket"]["fix"]


def test_custom_image_missing_from_this_accounts_ecr(account, tmp_path):
    boto3.client("ecr").create_repository(repositoryName="my-trainer")
    uri = f"{ACCOUNT}.dkr.ecr.us-east-1.amazonaws.com/my-trainer:v1"
    spec = write_spec_file(tmp_path, framework_version=None, py_version=None, image_uri=uri)
    code, checks, _ = _check(spec, QuotaSession())
    assert code == 1
    assert checks["image"]["detail"] == f"{uri}: ImageNotFoundException"
    assert f"docker push {uri}" in checks["image"]["fix"]


def test_quota_below_the_instance_count(account, tmp_path):
    code, checks, _ = _check(write_spec_file(tmp_path), QuotaSession(quota_value=1))
    assert code == 1
    assert "is 1 in us-east-1; the spec needs 2: CreateTrainingJob would fail with ResourceLimitExceeded" in \
        checks["quota"]["detail"]
    assert "--quota-code L-3F53BB0B --desired-value 2" in checks["quota"]["fix"]


def test_quota_missing_for_the_instance_type(account, tmp_path):
    code, checks, _ = _check(write_spec_file(tmp_path), QuotaSession(quota_value=None))
    assert code == 1
    assert f"no quota '{QUOTA}' in us-east-1" in checks["quota"]["detail"]


def test_a_bad_spec_is_exit_2_before_any_call(aws, tmp_path):
    spec = write_spec_file(tmp_path, instanse={"type": "ml.c5.xlarge"})
    result = CliRunner().invoke(main, ["check", str(spec), "-o", "json"], obj=QuotaSession())
    assert result.exit_code == 2
    assert json.loads(result.stdout)["error"]["field"] == "instanse"


def test_check_reports_the_sdk_default_bucket_and_reads_the_sdk_defaults_role(aws, tmp_path, monkeypatch):
    import yaml

    boto3.client("iam").create_role(RoleName="PlatformTraining", AssumeRolePolicyDocument=json.dumps(TRUST_SAGEMAKER))
    config = tmp_path / "admin.yaml"
    config.write_text(yaml.safe_dump({"SchemaVersion": "1.0", "SageMaker": {"TrainingJob": {
        "RoleArn": f"arn:aws:iam::{ACCOUNT}:role/PlatformTraining"}}}))
    monkeypatch.setenv("SAGEMAKER_ADMIN_CONFIG_OVERRIDE", str(config))
    spec = write_spec_file(tmp_path, framework_version="2.10.0", py_version="py313")
    document = yaml.safe_load(spec.read_text())
    del document["role"], document["output_path"]
    spec.write_text(yaml.safe_dump(document))
    default = f"sagemaker-us-east-1-{ACCOUNT}"

    code, checks, _ = _check(spec, QuotaSession())
    assert code == 0, checks
    assert checks["role"]["ok"] and "PlatformTraining" in checks["role"]["detail"]
    assert checks["bucket"]["detail"] == (f"no output path named anywhere: submit creates the SageMaker SDK's default "
                                          f"bucket {default} in us-east-1 (as the SDK does) and writes there")
    boto3.client("s3").create_bucket(Bucket=default)
    code, checks, _ = _check(spec, QuotaSession())
    assert checks["bucket"]["detail"] == f"{default} in us-east-1, writable at s3://{default}/"


@pytest.mark.parametrize("region", [None, "us-east-1"], ids=["spec-without-region", "spec-in-us-east-1"])
def test_region_checks_the_job_where_submit_region_runs_it_as_set_region_does(aws, tmp_path, monkeypatch, region):
    """`check --region eu-west-1` is the job's region, as `submit --region eu-west-1` (and `--set region=`, still
    taken) is: every line about eu-west-1, the region every client called, and a pass. Before, it checked
    eu-west-1 but failed the region line, the job running where the spec or $AWS_REGION said: --region meant
    another thing on check than on every other command."""
    sessions: list[QuotaSession] = []
    monkeypatch.setattr("orchestrator.cloud.sdk.boto_session",
                        lambda region=None: sessions.append(QuotaSession(region=region)) or sessions[-1])
    boto3.client("iam").create_role(RoleName="SageMakerExecution", AssumeRolePolicyDocument=json.dumps(TRUST_SAGEMAKER))
    boto3.client("s3", region_name="eu-west-1").create_bucket(
        Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    spec = write_spec_file(tmp_path, framework_version="2.10.0", py_version="py313", region=region)

    flagged = CliRunner().invoke(main, ["check", str(spec), "--region", "eu-west-1", "-o", "json"])
    moved = CliRunner().invoke(main, ["check", str(spec), "--set", "region=eu-west-1", "-o", "json"])

    assert flagged.exit_code == 0, flagged.output
    checks = {item["name"]: item for item in json.loads(flagged.stdout)["checks"]}
    assert checks["region"]["detail"] == "eu-west-1"
    assert checks["bucket"]["detail"].startswith(f"{BUCKET} in eu-west-1, writable")
    assert ".dkr.ecr.eu-west-1.amazonaws.com/" in checks["image"]["detail"]
    assert sessions[0].quotas.meta.region_name == "eu-west-1"
    assert moved.exit_code == 0 and json.loads(moved.stdout) == json.loads(flagged.stdout)


class RefusingSession(boto3.Session):
    """moto, but for IAM's GetRole and Service Quotas' ListServiceQuotas, which answer `code` (HTTP `status`)."""

    def __init__(self, code: str, status: int) -> None:
        super().__init__(region_name="us-east-1", botocore_session=shared_loader_core())
        self.refusing = {}
        for service, method in (("iam", "get_role"), ("service-quotas", "list_service_quotas")):
            client = super().client(service)
            stubber = Stubber(client)
            stubber.add_client_error(method, code, "refused", status)
            stubber.activate()
            self.refusing[service] = client

    def client(self, service_name: str, *args: Any, **kwargs: Any) -> Any:
        return self.refusing.get(service_name) or super().client(service_name, *args, **kwargs)


@pytest.mark.parametrize("code, status, advice", [
    ("AccessDenied", 403, "allow your credentials "),
    ("ThrottlingException", 400, "AWS throttled the call and botocore's retries ran out"),
    ("InternalFailure", 500, "AWS failed on its side (HTTP 5xx)"),  # what moto's server answers for the quotas
])
def test_only_a_denied_read_gets_permission_advice(aws, tmp_path, code, status, advice):
    """The role and quota lines said "allow your credentials <permission>" whatever AWS answered (against moto:
    `cannot read the SageMaker quotas: 500` → `fix: allow your credentials servicequotas:ListServiceQuotas`)."""
    boto3.client("s3").create_bucket(Bucket=BUCKET)

    exit_code, checks, _ = _check(write_spec_file(tmp_path), RefusingSession(code, status))

    assert exit_code == 1
    assert checks["role"]["detail"] == f"cannot read role SageMakerExecution: {code}"
    assert checks["quota"]["detail"] == f"cannot read the SageMaker quotas: {code}"
    for line, permission, otherwise in (("role", "iam:GetRole", "check the role in the IAM console"),
                                        ("quota", "servicequotas:ListServiceQuotas",
                                         f"look up '{QUOTA}' in the Service Quotas console")):
        fix = checks[line]["fix"]
        assert fix.startswith(advice) and fix.endswith(f"; or {otherwise}"), fix
        assert (permission in fix) is (code == "AccessDenied"), fix
