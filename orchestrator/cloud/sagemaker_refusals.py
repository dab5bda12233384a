"""What a SageMaker Create call's refusal means where its error code alone does not say, and what to do.

SageMaker answers a role it cannot assume with the ValidationException it gives a malformed field, and an instance
type the region does not offer with the ResourceLimitExceeded it gives a spent quota; only the message tells them
apart, and each needs another fix. The patterns are the texts users met (quoted, with their threads, in
tests/cloud/test_sagemaker_refusals.py); a message none matches keeps the advice its code gets (aws_errors).
"""

from __future__ import annotations

import re
from collections.abc import Callable

_TRUST = "let its trust policy allow sts:AssumeRole to the service principal sagemaker.amazonaws.com"


def _role_fix(found: re.Match[str]) -> str:
    role = found["role"]
    name = role.rsplit("/", 1)[-1]
    return (f"SageMaker cannot assume {role}: check that a role of exactly this ARN exists, its path included "
            f"(`aws iam get-role --role-name {name}` prints its ARN; a role the console made is "
            f"`role/service-role/{name}`), give `role:` that ARN, and {_TRUST}; `smtrain check SPEC` checks both")


def _instance_type_fix(found: re.Match[str]) -> str:
    return (f"SageMaker does not train on {found['type']} in this region: pick a type it offers here (`smtrain "
            "check SPEC` finds no training quota for a type the region lacks), or run the job in a region that has "
            "it (`--set region=REGION`, for `smtrain check` too)")


def _quota_fix(found: re.Match[str]) -> str:
    quota, used, needed = found["quota"], int(found["used"]), int(found["used"]) + int(found["delta"])
    running = f"; or wait until the jobs that use {used} of it end" if used else ""
    return (f"ask for '{quota}' of at least {needed} in Service Quotas (console: Service Quotas > Amazon SageMaker, "
            "or `aws service-quotas request-service-quota-increase --service-code sagemaker --quota-code CODE "
            f"--desired-value {needed}`; `smtrain check SPEC` prints the instance type's CODE), or use fewer or "
            f"other instances{running}")


_REFUSALS: tuple[tuple[str, re.Pattern[str], Callable[[re.Match[str]], str]], ...] = (
    # `Could not assume role arn:aws:iam::...:role/NAME. Please ensure that the role exists and allows principal
    # 'sagemaker.amazonaws.com' to assume the role.`: a role name may hold dots, the sentence's full stop ends it.
    ("ValidationException", re.compile(r"Could not assume role (?P<role>arn:\S+?)\.?(?:\s|$)"), _role_fix),
    ("ValidationException", re.compile(r"Unsupported instance type (?P<type>ml\.[\w.-]+?)\.?(?:\s|$)"),
     _instance_type_fix),
    ("ResourceLimitExceeded",
     re.compile(r"requested resource training-job/(?P<type>ml\.[\w.-]+?) is not available in this region"),
     _instance_type_fix),
    ("ResourceLimitExceeded",
     re.compile(r"service limit '(?P<quota>[^']+)' is \d+ Instances?, with current utilization of (?P<used>\d+) "
                r"Instances? and a request delta of (?P<delta>\d+)"), _quota_fix),
)


def refusal_fix(code: str, message: str) -> str | None:
    """The fix for a refusal its message names (None: the code's own advice is all there is)."""
    for refused_with, pattern, fix in _REFUSALS:
        if code == refused_with and (found := pattern.search(message)):
            return fix(found)
    return None
