"""botocore failures as user errors that say what to do, with secret values masked out of every message.

The one translation for every AWS call smtrain makes (jobs, logs, submit, the infra stack), so the same
failure always gets the same advice. AWS error messages can quote what was sent (a validation error on `Environment` quotes the value), so each
message passes through `mask_secrets` before it is raised or printed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager

from orchestrator.errors import AwsError, EnvironmentProblem
from orchestrator.redact import MASK, is_secret_name

# Values shorter than this are not masked: masking "1" or "on" everywhere would garble every log line, and a
# secret that short protects nothing anyway.
MIN_MASKED_LENGTH = 4

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


def secret_values(*mappings: Mapping[str, str]) -> set[str]:
    """The values of secret-looking names, also JSON-decoded (SageMaker hyperparameters are JSON strings)."""
    values: set[str] = set()
    for mapping in mappings:
        for name, value in mapping.items():
            if not is_secret_name(name):
                continue
            values.add(value)
            try:
                decoded = json.loads(value)
            except ValueError:
                continue
            values.add(str(decoded))
    return {value for value in values if len(value) >= MIN_MASKED_LENGTH}


def mask_secrets(text: str, secrets: Iterable[str]) -> str:
    for value in sorted(secrets, key=len, reverse=True):
        text = text.replace(value, MASK)
    return text


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
        raise AwsError(mask_secrets(message, secrets), fix=_FIXES.get(code)) from None
    except BotoCoreError as exc:
        raise AwsError(
            mask_secrets(f"{doing}: {exc}", secrets), fix="check the network, the region and AWS_ENDPOINT_URL"
        ) from None
