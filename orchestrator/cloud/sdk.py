"""The one place that imports the SageMaker SDK and boto3: lazily, quietly, with telemetry off.

`smtrain --help` and `smtrain validate` never reach this module. Everything here follows docs/sdk-facts.md §7-8:
the v2 deprecation warning and config chatter are silenced before import, the SDK's module that calls
`logging.basicConfig` is imported while the root logger holds a handler (so that call is a no-op and the user's own
`basicConfig` still works), telemetry is opted out through the session's config, and every session gets a default
bucket so the SDK never needs STS to find one.
"""

from __future__ import annotations

import functools
import os
from typing import Any

TELEMETRY_OPT_OUT = {"SchemaVersion": "1.0", "SageMaker": {"PythonSDK": {"Modules": {"TelemetryOptOut": True}}}}
# botocore's standard retry mode: exponential backoff with jitter on throttling and transient errors.
MAX_ATTEMPTS = 5
RETRY_CONFIG = {"retries": {"mode": "standard", "max_attempts": MAX_ATTEMPTS}}


def import_sagemaker() -> Any:
    """Imports `sagemaker` (v2) with its import-time noise off; returns the module.

    Raises:
        EnvironmentProblem: SDK v2 is not installed (SDK v3 has no `sagemaker.pytorch.PyTorch`).
    """
    import logging  # here, not at the top: `smtrain plan` reaches this module and needs no logging (5 ms)

    os.environ.setdefault("SAGEMAKER_SUPPRESS_V2_WARNING", "1")
    for name in ("sagemaker", "sagemaker.config", "sagemaker.telemetry"):
        logger = logging.getLogger(name)
        if logger.level == logging.NOTSET:
            logger.setLevel(logging.WARNING)
    # The import of sagemaker.experiments (by `fit()`, through sagemaker.utils) runs its _metrics module's
    # `logging.basicConfig(level=INFO)` once: importing it now, while the root logger holds a handler, makes that
    # call a no-op; the handler goes again so that the user's own `basicConfig` still configures the root.
    root = logging.getLogger()
    placeholder = logging.NullHandler()
    if not root.handlers:
        root.addHandler(placeholder)
    try:
        # SDK v3 is importable as `sagemaker` (a namespace over sagemaker.train, .core, ...) but has no
        # sagemaker.pytorch: the second import is the test for v2.
        import sagemaker
        import sagemaker.experiments._metrics
        import sagemaker.pytorch  # the estimator smtrain builds
    except ImportError:
        raise _no_sdk_v2() from None
    finally:
        root.removeHandler(placeholder)

    _validate_config_once(sagemaker)
    return sagemaker


def _no_sdk_v2() -> Exception:
    import shlex
    from importlib.metadata import PackageNotFoundError, version

    from orchestrator.errors import EnvironmentProblem, install_extra, smtrain_source

    try:
        installed = version("sagemaker")
    except PackageNotFoundError:
        return EnvironmentProblem(
            "the SageMaker Python SDK v2 is not installed (orchestrator.build_estimator needs it)",
            fix=f"{install_extra('sdk')}; plan, submit, status, logs, stop and list work without it",
        )
    return EnvironmentProblem(
        f"sagemaker {installed} is installed here, which has no sagemaker.pytorch.PyTorch: "
        "orchestrator.build_estimator needs the SageMaker Python SDK v2",
        fix="use smtrain plan/submit (or orchestrator.plan/submit), which need no SDK; or install "
        f"{shlex.quote(f'{smtrain_source()}[sdk]')} in a separate virtualenv: v2 and v3 share the distribution "
        "name, so installing v2 here would replace v3",
    )


def _validate_config_once(sagemaker: Any) -> None:
    """Makes the SDK check its config schema once instead of at every validation.

    The SDK validates with `jsonschema.validate`, which checks the schema itself against the meta-schema first
    (~0.13-0.36 s here): on each of the ~23 config lookups of one estimator build and fit
    (`sagemaker.utils.get_sagemaker_config_value`), at each `Session(sagemaker_config=...)` and for each defaults
    file `load_sagemaker_config` reads, 3 s of every plan for the same four-key telemetry opt-out. The validator
    built once raises the error `jsonschema.validate` would (the best match) for every document, the same or not.
    """
    config = sagemaker.config.config
    if getattr(config.validate_sagemaker_config, "smtrain_checked_once", False):
        return
    import jsonschema

    schema = config.SAGEMAKER_PYTHON_SDK_CONFIG_SCHEMA
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    validator = validator_class(schema)

    def validate(sagemaker_config: dict | None = None) -> None:
        error = jsonschema.exceptions.best_match(validator.iter_errors(sagemaker_config))
        if error is not None:
            raise error

    validate.smtrain_checked_once = True  # type: ignore[attr-defined]
    for module in (config, sagemaker.config, sagemaker.utils, sagemaker.session):  # each calls its own reference
        module.validate_sagemaker_config = validate


def boto_session(region: str | None = None, **credentials: str) -> Any:
    """A boto3 session on the usual credential chain (AWS_ENDPOINT_URL is honoured by every client it makes).

    The region: the one given, else $AWS_REGION (which the AWS CLI v2 and SageMaker's own containers set, but
    boto3 does not read), else boto3's chain (AWS_DEFAULT_REGION, the profile).
    """
    import boto3
    import botocore.session

    core = botocore.session.get_session()
    core.register_component("data_loader", _shared_data_loader())
    return boto3.Session(botocore_session=core, region_name=region or os.environ.get("AWS_REGION") or None,
                         **credentials)


def session_in(region: str | None, boto: Any | None, *, named_by: str) -> Any:
    """The boto3 session for work in `region`: `boto` when given (its region must be `region`:
    `refuse_other_region`), else boto3's chain there (`boto_session`)."""
    refuse_other_region(boto, region, named_by=named_by)
    return boto or boto_session(region)


def refuse_other_region(boto: Any | None, region: str | None, *, named_by: str) -> None:
    """A session given for another region than `region` is refused rather than used beside it: a job's request,
    its bucket and its log and metric reads would go half to one region and half to the other. Neither wins
    silently: the user said two things and is asked for one. `named_by`: what names `region` ("region=", "the
    plan", "the spec's `region:`"), as the message says it.

    Raises:
        SpecError: `boto`'s region is not `region`; nothing was sent.
    """
    if boto is None or region is None or boto.region_name == region:
        return
    from orchestrator.errors import SpecError

    has = f"is for {boto.region_name}" if boto.region_name else "names no region"
    by_keyword = named_by == "region=" and boto.region_name
    instead = f", or leave out region= to work in {boto.region_name}" if by_keyword else ""
    raise SpecError(f"the boto3 session given as boto= {has}, but {named_by} names {region}: a job's request, "
                    "bucket and logs are in one region, so smtrain takes neither over the other",
                    fix=f'pass boto=boto3.Session(region_name="{region}") (with the same profile or keys), or leave '
                        f"boto= out to use boto3's credential chain in {region}{instead}")

@functools.lru_cache(maxsize=1)
def _shared_data_loader() -> Any:
    """One botocore loader per process: each new session otherwise re-parses the service models (~0.3 s for
    SageMaker's), once per plan and again per submit. Sessions still get their own event hooks."""
    import botocore.session

    return botocore.session.get_session().get_component("data_loader")


def client(session: Any, service: str, max_attempts: int = MAX_ATTEMPTS) -> Any:
    """A client in standard retry mode.

    `max_attempts` has botocore's meaning, retries after the first attempt: 0 for a call that must not be
    repeated blindly.
    """
    from botocore.config import Config

    return session.client(service, config=Config(retries={**RETRY_CONFIG["retries"], "max_attempts": max_attempts}))


def sagemaker_session(boto: Any, default_bucket: str, sagemaker_client: Any | None = None) -> Any:
    """A SageMaker v2 Session that never calls STS or ListBuckets to find its bucket and sends no telemetry."""
    sagemaker = import_sagemaker()
    return sagemaker.session.Session(
        boto_session=boto,
        sagemaker_client=sagemaker_client or client(boto, "sagemaker"),
        default_bucket=default_bucket,
        sagemaker_config=TELEMETRY_OPT_OUT,
    )
