"""botocore failures as user errors that say what to do, with secret values masked out of every message.

The one translation for every AWS call smtrain makes (jobs, logs, submit, the infra stack), so the same
failure always gets the same advice. AWS error messages can quote what was sent (a validation error on
`Environment` quotes the value), so each message passes through redact's `mask_text` before it is raised.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from orchestrator.errors import AwsError, EnvironmentProblem
from orchestrator.redact import mask_text

# AWS's AccessDenied message names the action that was refused, so one advice fits every call.
_ACCESS_FIX = ("allow your credentials the action named above: the README's permissions section lists every "
               "action smtrain calls, `smtrain infra deploy`'s included")
_EXPIRED_FIX = "refresh your credentials (`aws sso login`, or new keys)"
_FIXES = {
    "AccessDenied": _ACCESS_FIX,
    "AccessDeniedException": _ACCESS_FIX,
    "UnauthorizedOperation": _ACCESS_FIX,
    "NoSuchBucket": "create the bucket, point output_path/code_location at an existing one, "
    "or run `smtrain infra deploy`",
    "NoSuchEntity": "check the role's name, give its full ARN (arn:aws:iam::<account>:role/<name>), "
    "or create one with `smtrain infra deploy`",
    "ResourceLimitExceeded": "request a SageMaker quota increase for this instance type, or use another type",
    "ExpiredToken": _EXPIRED_FIX,
    "ExpiredTokenException": _EXPIRED_FIX,
}
_NO_CREDENTIALS_FIX = "run `aws configure` or `aws sso login`, or set AWS_PROFILE"
_NO_REGION_FIX = ("set AWS_REGION (or pass --region), `region:` in the spec, or a profile region "
                 "(`aws configure set region <region>`)")


@contextmanager
def aws_errors(doing: str, secrets: Iterable[str] = ()) -> Iterator[None]:
    """Turns botocore exceptions raised inside into EnvironmentProblem (exit 2) or AwsError (exit 1).

    Args:
        doing: what was being done, for the message ("reading the status of job x").
        secrets: values to mask in the message.
    """
    from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError, NoRegionError

    try:
        yield
    except NoCredentialsError:
        raise EnvironmentProblem("no AWS credentials found", fix=_NO_CREDENTIALS_FIX) from None
    except NoRegionError:
        raise EnvironmentProblem("no AWS region configured", fix=_NO_REGION_FIX) from None
    except ClientError as exc:
        error = exc.response.get("Error", {})
        code = error.get("Code", "")
        message = f"{doing}: {exc.operation_name} failed: {code}: {error.get('Message', '')}"
        raise AwsError(mask_text(message, secrets), fix=_FIXES.get(code)) from None
    except BotoCoreError as exc:
        raise AwsError(
            mask_text(f"{doing}: {exc}", secrets), fix="check the network, the region and AWS_ENDPOINT_URL"
        ) from None
