"""Submitting a plan: upload the source once, then create exactly the job `smtrain plan` showed, exactly once.

* The request is the plan's: `plan.create_training_job_request` goes to boto3's `create_training_job` as is.
* One submit creates at most one job: CreateTrainingJob goes out through create_once.py (botocore's retries
  off; after a failure that may be transient the job is looked up by name, and adopted when it is the plan's).
* The source tarball is content-addressed (packaging.py): HeadObject first, uploaded only when it is absent, by
  boto3's managed transfer from the package's temporary file (multipart above `TransferConfig`'s threshold, so a
  tarball over 5 GB goes too; a transfer cut short aborts its multipart upload, so S3 keeps no parts), reporting
  its progress as the `uploading` stage (planning/source_progress.py).
"""

from __future__ import annotations

import base64
import hashlib
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from orchestrator.cloud.aws_errors import (
    NO_CREDENTIALS_FIX,
    aws_errors,
    error_code,
    is_access_denied,
    is_missing_in_s3,
)
from orchestrator.cloud.create_once import Creation, create_once, same_training_definition
from orchestrator.cloud.jobs import JobClient
from orchestrator.observing.job_status import console_url
from orchestrator.errors import AwsError, EnvironmentProblem
from orchestrator.planning.packaging import SourcePackage
from orchestrator.planning.plan import Plan
from orchestrator.planning.source_progress import stage
from orchestrator.planning.target import S3Uri
from orchestrator.redact import secret_values

logger = logging.getLogger(__name__)

@dataclass(frozen=True)
class Submission:
    """What a submit did, besides creating the job: the plan it sent and whether the source was uploaded."""

    plan: Plan
    source_uploaded: bool
    bucket_created: bool = False
    """The SDK's default bucket did not exist and this submit created it."""

    def to_dict(self) -> dict[str, Any]:
        job_plan = self.plan
        return {
            "job_name": job_plan.job_name,
            "region": job_plan.target.region,
            "console_url": console_url(job_plan.target.region, job_plan.job_name),
            "world_size": job_plan.topology.world_size,
            "instance_type": job_plan.spec.instance_type,
            "instance_count": job_plan.spec.host_count,
            "cost": job_plan.cost.to_dict(),
            "bucket_created": job_plan.target.bucket if self.bucket_created else None,
            "source": {
                "s3_uri": job_plan.source_uri,
                "size_bytes": job_plan.source.size_bytes,
                "sha256": job_plan.source.sha256,
                "uploaded": self.source_uploaded,
            },
        }

    def summary_rows(self) -> list[tuple[str, str]]:
        from rich.filesize import decimal

        cost = self.plan.cost
        worst = "no price on record" if cost.max_total is None else f"{cost.currency} {cost.max_total:,.2f}"
        source = "uploaded" if self.source_uploaded else "reused (already in S3)"
        created = [("bucket", f"{self.plan.target.bucket} (created)")] if self.bucket_created else []
        return [
            *created,
            ("world size", str(self.plan.topology.world_size)),
            ("worst-case cost", worst),
            ("source", f"{decimal(self.plan.source.size_bytes)}, {source}"),
        ]


def submit(job_plan: Plan, *, boto: Any | None = None, say: Callable[[str], None] | None = None) -> JobClient:
    """Uploads the plan's source (once) and creates exactly its job, exactly once.

    Args:
        job_plan: the plan to send (`orchestrator.plan(...)`).
        boto: the boto3 session to use; its region must be the plan's. Default: boto3's chain in that region.
        say: told, before it happens, that the SDK's default bucket is about to be created (default: a
            warning on the `orchestrator` logger).

    Returns:
        The client of the created job, with `.submission` saying what was sent.

    Raises:
        CapabilityError: the plan has blocking findings; nothing was sent.
        EnvironmentProblem: no region was configured (the plan fell back to one); nothing was sent.
        SpecError: `boto` is a session for another region than the plan's (`sdk.session_in`); nothing was sent.
        AwsError: an AWS call failed; the message says whether the job may exist.
    """
    from orchestrator.cloud.sdk import session_in

    refuse_blocking_findings(job_plan)
    region = job_plan.target.region
    refuse_unready(job_plan, boto)
    boto = session_in(region, boto, named_by="the plan")
    name = job_plan.job_name
    with _noted_if_interrupted(f"{name} was not created: nothing runs on SageMaker (S3 keeps no part of an "
                               "upload cut short; a source uploaded whole is reused by the next submit)"):
        job_plan = _with_role_arn(job_plan, boto)
        created = _ensure_default_bucket(job_plan, boto, say or logger.warning)
        refuse_bucket_elsewhere(job_plan, boto)
        uploaded = ensure_source_uploaded(job_plan, boto)
    with _noted_if_interrupted(f"{name} may have been created: `smtrain status {name}` says, "
                               f"`smtrain stop {name}` stops it"):
        _create_training_job_once(job_plan, boto)
    return JobClient(name, boto, Submission(job_plan, uploaded, created))


@contextmanager
def _noted_if_interrupted(note: str) -> Iterator[None]:
    """Ctrl-C mid-submit carries a note saying whether a job exists, which the command line prints."""
    try:
        yield
    except KeyboardInterrupt as interrupt:
        interrupt.add_note(note)
        raise


def _ensure_default_bucket(job_plan: Plan, boto: Any, say: Callable[[str], None]) -> bool:
    """The SDK's default bucket (from the SDK defaults, or sagemaker-<region>-<account>) exists, or is made."""
    from orchestrator.cloud.default_bucket import ensure_bucket
    from orchestrator.planning.provenance import FALLBACK

    bucket = job_plan.target.bucket_to_create
    if bucket is None:
        return False
    source = job_plan.target.sources.get("output_path")
    return ensure_bucket(boto, bucket, say, generated=source is not None and source.kind == FALLBACK)


def _with_role_arn(job_plan: Plan, boto: Any) -> Plan:
    """A role given by name becomes its ARN through IAM GetRole, as the SDK's `expand_role` does."""
    import dataclasses

    from orchestrator.cloud.sdk import client

    role = job_plan.create_training_job_request["RoleArn"]
    if role.startswith("arn:"):
        return job_plan
    with aws_errors(f"looking up the ARN of the execution role {role!r} (iam:GetRole)"):
        arn = client(boto, "iam").get_role(RoleName=role.rsplit("/", 1)[-1])["Role"]["Arn"]
    request = {**job_plan.create_training_job_request, "RoleArn": arn}
    return dataclasses.replace(job_plan, create_training_job_request=request,
                               target=dataclasses.replace(job_plan.target, role=arn),
                               estimator_kwargs={**job_plan.estimator_kwargs, "role": arn})


def refuse_bucket_elsewhere(job_plan: Plan, boto: Any) -> None:
    """EnvironmentProblem (exit 2) before the upload when the output bucket is in another region than the job:
    SageMaker cannot write the job's outputs there, so the job would bill and then fail. One HeadBucket call; a
    bucket that is missing or may not be listed is left to the upload to report."""
    from botocore.exceptions import ClientError

    from orchestrator.cloud.sdk import client

    bucket, region = job_plan.target.bucket, job_plan.target.region
    with aws_errors(f"looking up the region of S3 bucket {bucket}"):
        try:
            elsewhere = client(boto, "s3").head_bucket(Bucket=bucket).get("BucketRegion", region)
        except ClientError as exc:
            if is_missing_in_s3(exc) or error_code(exc) == "403" or is_access_denied(exc):
                return
            raise
    if elsewhere != region:
        words = job_plan.loaded.field_words
        raise EnvironmentProblem(
            f"not submitted: the output bucket {bucket} is in {elsewhere}, the job would run in {region}, and "
            "SageMaker writes a job's outputs only to a bucket in the job's region",
            fix=f"{words.set('output_path', f's3://<a bucket in {region}>/outputs/')}, or run the job in "
                f"{elsewhere}: {words.set('region', elsewhere)}")


def refuse_unready(job_plan: Plan, boto: Any | None) -> None:
    """EnvironmentProblem (exit 2, nothing sent) naming, all at once, what a submit lacks: a region (a plan may
    assume one to show a request; a billable job goes only where someone said), credentials, and what planning
    could not find (a role, an output path)."""
    from orchestrator.cloud.sdk import boto_session

    target = job_plan.target
    problems = [(f"no AWS region configured: the plan assumed {target.region}",
                 f"{job_plan.loaded.field_words.name_region()}, or AWS_REGION / a profile region")
                ] if target.region_is_fallback else []
    if (boto or boto_session(target.region)).get_credentials() is None:
        problems.append(("no AWS credentials found", NO_CREDENTIALS_FIX))
    problems += [(item.message, item.fix) for item in target.missing]
    if len(problems) == 1:
        raise EnvironmentProblem(*problems[0])
    if problems:
        raise EnvironmentProblem(f"not submitted, {len(problems)} things are missing: "
                                 + "; ".join(f"({number}) {message}" for number, (message, _) in
                                             enumerate(problems, 1)),
                                 fix="; ".join(f"({number}) {fix}" for number, (_, fix) in enumerate(problems, 1)))


def refuse_blocking_findings(job_plan: Plan) -> None:
    """CapabilityError (exit 2) when a finding blocks: an error, or `unverified` without allow_unverified; each at
    its place in the spec, with its fix in the user's words (a function job's are its decorator's keywords)."""
    blocking = job_plan.blocking_findings()
    if blocking:
        raise job_plan.loaded.refusal(blocking)


def ensure_source_uploaded(job_plan: Plan, boto: Any, transfer: Any | None = None) -> bool:
    """Puts the plan's source tarball at `plan.source_uri` unless the object there has these very bytes.

    The key holds the SHA-256 of the tarball, but anyone who may write the prefix could replace the object:
    it is reused only when S3's own SHA-256 checksum of it (sent with the upload, verified by S3) is the
    tarball's: the whole tarball's for one PutObject, its parts' for a multipart upload.
    Any other object there (replaced, uploaded without a checksum or in other parts) is overwritten.

    Args:
        transfer: boto3's `TransferConfig` (default: boto3's, 8 MiB parts above 8 MiB, on its own threads).

    Returns:
        True when uploaded now, False when reused.
    """
    from boto3.s3.transfer import TransferConfig

    from orchestrator.cloud.sdk import client

    config = transfer or TransferConfig(preferred_transfer_client="classic")
    package, location = job_plan.source, S3Uri.parse(job_plan.source_uri)
    multipart = package.size_bytes >= config.multipart_threshold
    with aws_errors(f"uploading the source to {job_plan.source_uri}"):
        s3 = client(boto, "s3")
        stored = _stored_checksum(s3, location.bucket, location.key)
        # A multipart object's is `<base64>-<parts>` (moto's HeadObject leaves out the suffix; the digests fix it)
        if stored is not None and stored.partition("-")[0] == (_parts_checksum(package, config) if multipart
                                                               else package.checksum_sha256):
            return False
        # A whole-object SHA-256 exists for one PutObject only; S3 checks each part's for a multipart upload.
        extra = {"ContentType": "application/gzip", "ChecksumAlgorithm": "SHA256",
                 **({} if multipart else {"ChecksumSHA256": package.checksum_sha256})}
        with stage("uploading", package.size_bytes) as advance, package.tarball.open("rb") as body:
            s3.upload_fileobj(body, location.bucket, location.key, ExtraArgs=extra, Config=config,
                              Callback=lambda sent: advance(sent, 0))
    return True


def _parts_checksum(package: SourcePackage, config: Any) -> str:
    """S3's checksum of the tarball uploaded in `config`'s parts (without its `-<parts>`): the SHA-256 of the
    parts' SHA-256 digests; the part size is s3transfer's own choice for this size (at most 10,000 parts)."""
    from s3transfer.utils import ChunksizeAdjuster

    part_size = ChunksizeAdjuster().adjust_chunksize(config.multipart_chunksize, package.size_bytes)
    digests = []
    with package.tarball.open("rb") as tarball:
        while part := tarball.read(part_size):
            digests.append(hashlib.sha256(part).digest())
    return base64.b64encode(hashlib.sha256(b"".join(digests)).digest()).decode("ascii")


def _stored_checksum(s3: Any, bucket: str, key: str) -> str | None:
    """S3's SHA-256 checksum of the object (None: no object, or one stored without that checksum)."""
    from botocore.exceptions import ClientError

    try:
        head = s3.head_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
    except ClientError as exc:
        if is_missing_in_s3(exc):
            return None
        raise
    return head.get("ChecksumSHA256")


def _create_training_job_once(job_plan: Plan, boto: Any) -> None:
    """CreateTrainingJob with the plan's request, exactly once (create_once.py)."""
    from orchestrator.cloud.sdk import client

    request = job_plan.create_training_job_request
    single_attempt, sagemaker = client(boto, "sagemaker", max_attempts=0), client(boto, "sagemaker")
    create_once(Creation(
        what=f"training job {job_plan.job_name}", operation="CreateTrainingJob",
        send=lambda: single_attempt.create_training_job(**request),
        describe=lambda: sagemaker.describe_training_job(TrainingJobName=job_plan.job_name),
        is_ours=lambda described: same_training_definition(described, request, "HyperParameters"),
        name_clash=_name_clash(job_plan),
        secrets=secret_values(request.get("Environment", {}), request.get("HyperParameters", {}))))


def _name_clash(job_plan: Plan) -> AwsError:
    return AwsError(
        f"a training job named {job_plan.job_name} already exists in {job_plan.target.region}",
        fix="submit under another name (leave out --job-name for a timestamped one); "
        f"`smtrain status {job_plan.job_name}` shows the existing job",
    )
