"""What the execution role must be allowed for a job to run and be seen: CloudWatch Logs (a role that cannot write
them gives a job with no logs at all, the commonest reason one shows none), and S3 on the job's output path, its
uploaded code, channels and checkpoints. IAM's policy simulator (SimulatePrincipalPolicy) answers for the role's own policies
before anything is submitted: SageMaker finds out only once the job runs, after its instances were paid for."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from orchestrator.cloud.logs import LOG_GROUP
from orchestrator.contract import ROLE_LOG_WRITES
from orchestrator.planning.target import S3Uri
from orchestrator.specs.model import JobSpec

ALLOWED = "allowed"


@dataclass(frozen=True)
class Grant:
    """Actions the role needs on one resource, and what the job loses without them."""

    resource: str
    actions: tuple[str, ...]
    purpose: str


@dataclass(frozen=True)
class Refusal:
    """A grant's actions the simulator did not allow; `explicit`: a Deny statement (the role's, a permissions
    boundary's or an SCP's) refuses one, which no added Allow overrides."""

    grant: Grant
    actions: tuple[str, ...]
    explicit: bool


def needed_grants(role_arn: str, region: str, output_path: str | None, code_location: str | None,
                  spec: JobSpec | None) -> list[Grant]:
    """The role's grants a job needs, in the role's partition: the logs, the output path, the code submit uploads
    under `code_location` (each host's toolkit downloads `<sha256>/sourcedir.tar.gz` from there with the role's
    credentials), and with a spec its S3 channels, checkpoints and TensorBoard output (a local channel is uploaded
    by submit, not read from here)."""
    partition, account = role_arn.split(":")[1], role_arn.split(":")[4]
    grants = [Grant(f"arn:{partition}:logs:{region}:{account}:log-group:{LOG_GROUP}:*", ROLE_LOG_WRITES,
                    f"CloudWatch Logs {LOG_GROUP}: without them the job shows no logs")]
    if output_path and output_path.startswith("s3://"):
        grants.append(_objects(partition, output_path, ("s3:PutObject",), "the output path: the model is saved there"))
    if code_location and code_location.startswith("s3://"):
        grants.append(_objects(partition, f"{code_location.rstrip('/')}/", ("s3:GetObject",),
                               "the uploaded code: each host downloads sourcedir.tar.gz from there"))
    if spec is None:
        return grants
    for name, location in spec.channel_locations().items():
        if location.startswith("s3://"):
            grants.append(_objects(partition, location, ("s3:GetObject",), f"channel {name}'s data"))
            grants.append(Grant(f"arn:{partition}:s3:::{S3Uri.parse(location).bucket}", ("s3:ListBucket",),
                                f"channel {name}'s objects, listed before they are copied"))
    if spec.checkpoint and spec.checkpoint.s3_uri.startswith("s3://"):
        grants.append(_objects(partition, spec.checkpoint.s3_uri, ("s3:GetObject", "s3:PutObject"),
                               "the checkpoints, synced both ways"))
    if spec.tensorboard and spec.tensorboard.s3_uri.startswith("s3://"):
        grants.append(_objects(partition, spec.tensorboard.s3_uri, ("s3:PutObject",), "the TensorBoard output"))
    return grants


def _objects(partition: str, uri: str, actions: tuple[str, ...], purpose: str) -> Grant:
    location = S3Uri.parse(uri)
    return Grant(f"arn:{partition}:s3:::{location.bucket}/{location.key}*", actions, f"{uri} ({purpose})")


def refusals(iam: Any, role_arn: str, grants: Iterable[Grant]) -> list[Refusal]:
    """Each grant the simulator does not allow in full: one SimulatePrincipalPolicy per grant, since the simulator
    decides every action against every resource of a call.

    Raises:
        ClientError, BotoCoreError: the simulation could not be run (AccessDenied: the caller may not run it).
    """
    found = []
    for grant in grants:
        results = iam.simulate_principal_policy(PolicySourceArn=role_arn, ActionNames=list(grant.actions),
                                                ResourceArns=[grant.resource])["EvaluationResults"]
        refused = [result for result in results if result["EvalDecision"] != ALLOWED]
        if refused:
            found.append(Refusal(grant, tuple(result["EvalActionName"] for result in refused),
                                 any(result["EvalDecision"] == "explicitDeny" for result in refused)))
    return found


def refusals_detail(role_name: str, found: list[Refusal]) -> str:
    return f"role {role_name} may not " + "; ".join(
        f"{', '.join(refusal.actions)} on {refusal.grant.purpose}" for refusal in found)


def refusals_fix(role_name: str, found: list[Refusal]) -> str:
    """The statements to add to the role, one per resource; a Deny is named apart, since an Allow cannot lift it."""
    allow = "; ".join(f"{', '.join(refusal.actions)} on {refusal.grant.resource}"
                      for refusal in found if not refusal.explicit)
    deny = "; ".join(f"{', '.join(refusal.actions)} on {refusal.grant.resource}"
                     for refusal in found if refusal.explicit)
    parts = [f"add to role {role_name}'s policy an Allow of {allow}"] if allow else []
    if deny:
        parts.append(f"a Deny (the role's policies, its permissions boundary or an organization SCP) refuses {deny}: "
                     "lift it for this role")
    if any(refusal.grant.actions == ROLE_LOG_WRITES for refusal in found):
        parts.append("the role `smtrain infra deploy` creates has the CloudWatch Logs ones (infra/smtrain.yaml)")
    return "; ".join(parts)
