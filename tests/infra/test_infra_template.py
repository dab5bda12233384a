"""infra/smtrain.yaml: cfn-lint clean, and no IAM wildcard without a written reason.

The wildcard convention is documented at the top of the template. `wildcard_problems` enforces it on every
policy document in the template; the mutation tests prove it catches what it should.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

TEMPLATE = Path(__file__).resolve().parents[2] / "infra" / "smtrain.yaml"
NO_VALUE = {"Ref": "AWS::NoValue"}


def _branches(node: Any) -> Iterator[Any]:
    """Every value a node can take: both branches of Fn::If, without AWS::NoValue, lists flattened."""
    if isinstance(node, dict) and set(node) == {"Fn::If"}:
        _, if_true, if_false = node["Fn::If"]
        yield from _branches(if_true)
        yield from _branches(if_false)
    elif isinstance(node, list):
        for item in node:
            yield from _branches(item)
    elif node != NO_VALUE:
        yield node


def _policy_documents(node: Any) -> Iterator[dict[str, Any]]:
    """Every value under a key ending in PolicyDocument (Role trust and inline policies, ManagedPolicy,
    BucketPolicy, ...), so a new resource type is covered without naming it here."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key.endswith("PolicyDocument"):
                yield value
            else:
                yield from _policy_documents(value)
    elif isinstance(node, list):
        for item in node:
            yield from _policy_documents(item)


def _statements(template: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for logical_id, resource in template["Resources"].items():
        for document in _policy_documents(resource.get("Properties", {})):
            for statement in _branches(document["Statement"]):
                yield logical_id, statement


def wildcard_problems(template: dict[str, Any]) -> list[str]:
    """Statements that break the template's wildcard convention; empty when it holds.

    Only literal "*" values count: a value from a parameter (!Ref, !Sub) is constrained by the parameter's
    AllowedPattern instead.
    """
    problems = []
    kept_wildcards: dict[str, set[str]] = {}
    for logical_id, statement in _statements(template):
        sid = statement.get("Sid")
        where = f"{logical_id} statement {sid or '(no Sid)'}"
        # A Deny grants nothing: a wildcard there widens the denial (the TLS-only bucket policy needs s3:*).
        if statement["Effect"] == "Deny":
            continue
        for key in ("NotAction", "NotResource"):
            if key in statement:
                problems.append(f"{where}: Allow with {key} grants everything it does not list")
        for action in _branches(statement.get("Action", [])):
            if action == "*" or (isinstance(action, str) and action.endswith(":*")):
                problems.append(f"{where}: Action {action!r} grants every action")
        if "*" in list(_branches(statement.get("Resource", []))):
            if sid is None:
                problems.append(f"{where}: Resource '*' needs a Sid and a reason in wildcard-reasons")
            else:
                kept_wildcards.setdefault(logical_id, set()).add(sid)
    for logical_id, resource in template["Resources"].items():
        reasons = resource.get("Metadata", {}).get("smtrain", {}).get("wildcard-reasons", {})
        kept = kept_wildcards.get(logical_id, set())
        for sid in sorted(kept - {sid for sid, reason in reasons.items() if str(reason).strip()}):
            problems.append(
                f"{logical_id} statement {sid}: Resource '*' without a reason in wildcard-reasons"
            )
        for sid in sorted(set(reasons) - kept):
            problems.append(f"{logical_id}: wildcard-reasons names {sid}, which keeps no Resource '*'")
    return problems


def template_reader() -> Any:
    """cfn-lint's template reader, imported when a test reads the template: importing cfn-lint costs 0.6 CPU-s,
    which every xdist worker would pay collecting this module; worker_groups.py keeps the modules that read the
    template on one worker."""
    from cfnlint.decode import cfn_yaml as reader

    return reader


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    """The template as plain dicts, with short-form tags (!Ref, !If) in their long form (Ref, Fn::If)."""
    return json.loads(json.dumps(template_reader().load(str(TEMPLATE))))


def _statement(template: dict[str, Any], sid: str) -> dict[str, Any]:
    return next(statement for _, statement in _statements(template) if statement.get("Sid") == sid)


def _reasons(template: dict[str, Any]) -> dict[str, str]:
    return template["Resources"]["ExecutionPolicy"]["Metadata"]["smtrain"]["wildcard-reasons"]


def test_template_passes_cfn_lint():
    from cfnlint.api import lint_file  # imported here: see template_reader()

    matches = lint_file(TEMPLATE)
    assert not matches, "cfn-lint:\n" + "\n".join(str(match) for match in matches)


def test_template_has_no_unexplained_wildcards(template):
    assert wildcard_problems(template) == []


MUTATIONS: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "every action": (
        lambda t: _statement(t, "ReadBucketObjects").update(Action="*"),
        "ReadBucketObjects: Action '*' grants every action",
    ),
    "every action of a service": (
        lambda t: _statement(t, "ListBucket").update(Action=["s3:ListBucket", "s3:*"]),
        "ListBucket: Action 's3:*' grants every action",
    ),
    "every action in the trust policy": (
        lambda t: _statement(t, "SageMakerAssumesRole").update(Action="sts:*"),
        "ExecutionRole statement SageMakerAssumesRole: Action 'sts:*'",
    ),
    "unexplained resource wildcard": (
        lambda t: _statement(t, "PullTrainingImages").update(Resource="*"),
        "PullTrainingImages: Resource '*' without a reason",
    ),
    "unexplained resource wildcard behind a condition": (
        lambda t: _statement(t, "ManageTrainingNetworkInterfaces").update(Resource=["*"]),
        "ManageTrainingNetworkInterfaces: Resource '*' without a reason",
    ),
    "resource wildcard without a Sid": (
        lambda t: _statement(t, "GetEcrAuthorizationToken").pop("Sid"),
        "(no Sid): Resource '*' needs a Sid",
    ),
    "empty reason": (
        lambda t: _reasons(t).update(GetEcrAuthorizationToken=" "),
        "GetEcrAuthorizationToken: Resource '*' without a reason",
    ),
    "reason for a statement without a wildcard": (
        lambda t: _reasons(t).update(ListBucket="not needed"),
        "wildcard-reasons names ListBucket, which keeps no Resource '*'",
    ),
    "NotAction in an Allow": (
        lambda t: _statement(t, "WriteTrainingLogs").update(NotAction=["iam:*"]),
        "WriteTrainingLogs: Allow with NotAction",
    ),
    "bucket policy turned into an Allow": (
        lambda t: _statement(t, "DenyInsecureTransport").update(Effect="Allow"),
        "BucketPolicy statement DenyInsecureTransport: Action 's3:*' grants every action",
    ),
}


@pytest.mark.parametrize("mutation", MUTATIONS.values(), ids=MUTATIONS.keys())
def test_wildcard_check_catches(template, mutation):
    mutate, expected = mutation
    mutated = copy.deepcopy(template)
    mutate(mutated)
    problems = wildcard_problems(mutated)
    assert any(expected in problem for problem in problems), problems


def test_template_bucket_is_private_encrypted_and_tls_only(template):
    """Settings the deploy tests cannot see: moto 5.2.5's CloudFormation applies only BucketEncryption and
    Tags to a bucket and skips AWS::S3::BucketPolicy altogether."""
    resources = template["Resources"]
    bucket = resources["Bucket"]["Properties"]
    assert set(bucket["PublicAccessBlockConfiguration"].values()) == {True}
    assert len(bucket["PublicAccessBlockConfiguration"]) == 4
    assert bucket["OwnershipControls"]["Rules"] == [{"ObjectOwnership": "BucketOwnerEnforced"}]
    assert bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]["ServerSideEncryptionByDefault"]
    expiring = {
        rule.get("Prefix") for rule in bucket["LifecycleConfiguration"]["Rules"] if "ExpirationInDays" in rule
    }
    assert expiring == {"checkpoints/", "code/"}
    deny = _statement(template, "DenyInsecureTransport")
    assert deny["Effect"] == "Deny" and deny["Principal"] == "*"
    assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    assert deny["Resource"] == [{"Fn::GetAtt": ["Bucket", "Arn"]}, {"Fn::Sub": "${Bucket.Arn}/*"}]
    assert resources["BucketPolicy"]["Properties"]["Bucket"] == {"Ref": "Bucket"}


def test_role_deletes_objects_only_under_the_checkpoint_prefix(template):
    """SageMaker's checkpoint sync deletes in S3 what the script deletes locally; nothing else a job does needs
    a delete, so outputs, code and data stay out of its reach."""
    deleting = [(statement.get("Sid"), list(_branches(statement["Resource"])))
                for _, statement in _statements(template)
                if statement["Effect"] == "Allow"
                and any(str(action).startswith(("s3:Delete", "s3:*")) or action == "*"
                        for action in _branches(statement.get("Action", [])))]
    assert deleting == [("DeleteCheckpoints", [{"Fn::Sub": "${Bucket.Arn}/checkpoints/*"}])]
    outputs = template["Outputs"]
    assert outputs["CheckpointPrefix"]["Value"] == {"Fn::Sub": "s3://${Bucket}/checkpoints/"}


def test_a_failed_first_deploy_leaves_no_bucket_while_deleting_the_stack_keeps_it(template):
    """Plain Retain also keeps a bucket whose stack's creation rolls back (a role the caller may not create, a bad
    DataBucketArns): every retry after `delete-stack` left one more empty bucket. moto never rolls a failed create
    back, so this asserts the policy CloudFormation applies."""
    bucket = template["Resources"]["Bucket"]
    assert bucket["DeletionPolicy"] == "RetainExceptOnCreate"
    assert bucket["UpdateReplacePolicy"] == "Retain"


def test_the_role_opens_a_remote_debug_shell_only_when_the_stack_allows_it(template):
    """A job with `remote_debug: true` runs the SSM agent, which opens the shell's channels as the job's role;
    without these permissions `aws ssm start-session` never connects."""
    [(condition, debug)] = [(node["Fn::If"][0], node["Fn::If"][1])
                            for node in template["Resources"]["ExecutionPolicy"]["Properties"]["PolicyDocument"]
                            ["Statement"] if isinstance(node, dict) and "Fn::If" in node
                            and node["Fn::If"][1].get("Sid") == "OpenRemoteDebugChannels"]
    assert template["Conditions"][condition] == {"Fn::Equals": [{"Ref": "EnableRemoteDebug"}, "true"]}
    assert template["Parameters"]["EnableRemoteDebug"]["Default"] == "false"
    assert sorted(debug["Action"]) == ["ssmmessages:CreateControlChannel", "ssmmessages:CreateDataChannel",
                                       "ssmmessages:OpenControlChannel", "ssmmessages:OpenDataChannel"]


def test_the_role_has_the_log_writes_smtrain_check_simulates(template):
    """`smtrain check`'s fix for a role that cannot write CloudWatch Logs says the stack's role has them: every
    action it simulates is allowed, on a resource that covers the one it simulates."""
    from fnmatch import fnmatchcase

    from orchestrator.cloud.role_grants import needed_grants
    from orchestrator.contract import ROLE_LOG_WRITES as LOG_WRITES

    simulated = needed_grants("arn:aws:iam::123456789012:role/smtrain-ExecutionRole", "eu-west-1", None, None,
                              None)[0]
    allowing = [statement for _, statement in _statements(template) if statement["Effect"] == "Allow"
                and set(LOG_WRITES) <= set(_branches(statement["Action"]))]
    resources = [resource["Fn::Sub"].replace("${AWS::Partition}", "aws").replace("${AWS::Region}", "eu-west-1")
                 .replace("${AWS::AccountId}", "123456789012")
                 for statement in allowing for resource in _branches(statement["Resource"])]
    assert simulated.actions == LOG_WRITES
    assert any(fnmatchcase(simulated.resource, resource) for resource in resources), (simulated.resource, resources)
