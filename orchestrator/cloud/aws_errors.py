"""botocore failures as user errors that say what to do, with secret values masked out of every message.

The one translation for every AWS call smtrain makes (jobs, logs, submit, tuning, the infra stack, check), so
the same failure always gets the same advice; and the one reader of a ClientError's answer (its code, message
and HTTP status): the modules that handle an expected failure themselves (a missing object, a name taken, a
throttled call) ask the predicates below instead of taking the response apart. AWS error messages can quote what was sent (a validation error on
`Environment` quotes the value), so each message passes through redact's `mask_text` before it is raised.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from orchestrator.cloud.sagemaker_refusals import refusal_fix
from orchestrator.errors import AwsError, EnvironmentProblem
from orchestrator.redact import mask_text

_DENIED_ACTION = re.compile(r"not authorized to perform: ([\w-]+:[\w*]+)")


def access_fix(action: str) -> str:
    """The advice for a refused call: AWS's AccessDenied message names the action, so one wording fits every call
    (`the action named above`), and a short row that names the action itself gives it here."""
    return (f"allow your credentials {action}: docs/sagemaker.md (\"Permissions the caller needs\") lists every "
            "action smtrain calls, `smtrain infra deploy`'s included")


def denied_action(message: str) -> str | None:
    """The action an AccessDenied message says was refused (`logs:DescribeLogStreams`); None where it names none."""
    found = _DENIED_ACTION.search(message)
    return found[1] if found else None


_ACCESS_FIX = access_fix("the action named above")
_EXPIRED_FIX = "refresh your credentials (`aws sso login`, or new keys)"
_THROTTLING_FIX = ("AWS throttled the call and botocore's retries ran out: wait a minute and run it again; AWS "
                   "throttles each API per account and region, so if it keeps happening, look for what else calls "
                   "it there (scripts or dashboards polling SageMaker or CloudWatch, several `smtrain watch` at "
                   "once) and poll less often (--poll-seconds)")
_SERVER_ERROR_FIX = ("AWS failed on its side (HTTP 5xx) and botocore's retries ran out: run it again in a few "
                     "minutes; if it keeps failing, see the AWS Health Dashboard for the service and region")
# S3 gives no reason for a refused HEAD request (no body, so the code is the bare status): both causes are named.
_HEAD_FORBIDDEN_FIX = ("S3 refused the HEAD request without saying why: either AWS did not accept your credentials "
                       "(`aws sts get-caller-identity` shows whether it does and whose they are), or they may not "
                       "read the bucket named above (allow them s3:GetObject on its objects and s3:ListBucket on it)")
_INVALID_CREDENTIALS_FIX = ("AWS does not know the access key, or the secret does not match it: see which credentials "
                            "are used with `aws sts get-caller-identity` (AWS_PROFILE, AWS_ACCESS_KEY_ID), then "
                            "`aws configure` or `aws sso login`")
# S3 says SlowDown (HTTP 503) where the other services say ThrottlingException or Throttling.
_THROTTLING_CODES = frozenset({"ThrottlingException", "Throttling", "TooManyRequestsException", "SlowDown"})
_ACCESS_DENIED_CODES = frozenset({"AccessDenied", "AccessDeniedException", "UnauthorizedOperation"})
_FIXES = {
    **dict.fromkeys(_THROTTLING_CODES, _THROTTLING_FIX),
    **dict.fromkeys(_ACCESS_DENIED_CODES, _ACCESS_FIX),
    "403": _HEAD_FORBIDDEN_FIX,
    "NoSuchBucket": "create the bucket, point output_path/code_location at an existing one, "
    "or run `smtrain infra deploy`",
    "NoSuchEntity": "check the role's name, give its full ARN (arn:aws:iam::<account>:role/<name>), "
    "or create one with `smtrain infra deploy`",
    "ResourceLimitExceeded": "request a SageMaker quota increase for this instance type, or use another type",
    "ExpiredToken": _EXPIRED_FIX,
    "ExpiredTokenException": _EXPIRED_FIX,
    # Each protocol's words for an unknown key (JSON: SageMaker, Logs; query: STS, IAM; S3) and a wrong secret.
    "UnrecognizedClientException": _INVALID_CREDENTIALS_FIX,
    "InvalidClientTokenId": _INVALID_CREDENTIALS_FIX,
    "InvalidAccessKeyId": _INVALID_CREDENTIALS_FIX,
    "InvalidSignatureException": _INVALID_CREDENTIALS_FIX,
    "SignatureDoesNotMatch": _INVALID_CREDENTIALS_FIX,
}
_NAME_TAKEN_CODES = frozenset({"ResourceInUse", "ResourceInUseException"})
# S3 answers HEAD requests with the bare status as the code; GET-style calls name it.
_S3_MISSING_CODES = frozenset({"404", "NotFound", "NoSuchKey", "NoSuchBucket"})
NO_CREDENTIALS_FIX = "run `aws configure` or `aws sso login`, or set AWS_PROFILE"
NETWORK_FIX = "check the network, the region and AWS_ENDPOINT_URL"
NO_REGION_FIX = ("set AWS_REGION (or pass --region), `region:` in the spec, or a profile region "
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
        raise EnvironmentProblem("no AWS credentials found", fix=NO_CREDENTIALS_FIX) from None
    except NoRegionError:
        raise EnvironmentProblem("no AWS region configured", fix=NO_REGION_FIX) from None
    except ClientError as exc:
        code = _error(exc).get("Code", "")
        message = f"{doing}: {exc.operation_name} failed: {code}: {error_message(exc)}"
        raise AwsError(mask_text(message, secrets), fix=fix_for(exc)) from None
    except BotoCoreError as exc:
        raise AwsError(mask_text(f"{doing}: {exc}", secrets), fix=NETWORK_FIX) from None


def fix_for(exc: Exception) -> str | None:
    """What to do about a failed call, where its message, code or HTTP status says (None: AWS's message is all
    there is). The message comes first: SageMaker gives one code to refusals that need different fixes."""
    code = error_code(exc)
    return (refusal_fix(code, error_message(exc)) or _FIXES.get(code)
            or (_SERVER_ERROR_FIX if _status(exc) >= 500 else None))


def is_access_denied(exc: Exception) -> bool:
    """AWS refused the call for want of a permission: the one failure a permission fixes."""
    return error_code(exc) in _ACCESS_DENIED_CODES


def error_code(exc: Exception) -> str:
    """A ClientError's AWS error code (`NoSuchBucket`, `404`); for any other failure (a BotoCoreError has no
    code) the exception's class name."""
    return _error(exc).get("Code") or type(exc).__name__


def error_message(exc: Exception) -> str:
    """A ClientError's AWS error message ("" for any other failure)."""
    return _error(exc).get("Message", "")


def is_transient(exc: Exception) -> bool:
    """Throttled, or a server-side failure (HTTP 5xx): worth another attempt."""
    return error_code(exc) in _THROTTLING_CODES or _status(exc) >= 500


def is_name_taken(exc: Exception) -> bool:
    """A create call refused because a resource of that name exists."""
    return error_code(exc) in _NAME_TAKEN_CODES


def is_not_found(exc: Exception) -> bool:
    """SageMaker answers a Describe call for an unknown name with a ValidationException, not a 404."""
    message = error_message(exc).lower()
    return error_code(exc) in ("ValidationException", "ResourceNotFound") and (
        "not found" in message or "could not find" in message
    )


def is_missing_in_s3(exc: Exception) -> bool:
    """S3 says the bucket or the object does not exist."""
    return error_code(exc) in _S3_MISSING_CODES


def is_missing_stack(exc: Exception) -> bool:
    """CloudFormation says the stack does not exist (a ValidationError, told apart by its message)."""
    return "does not exist" in error_message(exc)


def _status(exc: Exception) -> int:
    return getattr(exc, "response", {}).get("ResponseMetadata", {}).get("HTTPStatusCode", 0)


def _error(exc: Exception) -> dict[str, str]:
    return getattr(exc, "response", {}).get("Error", {})
