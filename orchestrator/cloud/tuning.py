"""Tuning jobs on SageMaker: submit once, then status, trials, stop and the list of recent ones.

Submitting follows single jobs (submission.py): the plan's source is uploaded once (content-addressed), and
CreateHyperParameterTuningJob goes out through create_once.py, so one submit never creates two searches.
`TuningClient` reads and stops one; the handle a user holds is `orchestrator.Tuning` (backends/tuning.py), which
also answers for a search run here and gives the best trial as an `orchestrator.Job`.
"""

from __future__ import annotations

import json
from datetime import timezone
from typing import Any

from orchestrator.cloud.aws_errors import aws_errors, is_not_found
from orchestrator.cloud.create_once import Creation, create_once, same_training_definition
from orchestrator.cloud.submission import (
    ensure_source_uploaded,
    refuse_blocking_findings,
    refuse_bucket_elsewhere,
    refuse_unready,
)
from orchestrator.errors import AwsError
from orchestrator.observing.sagemaker_text import shown_answer
from orchestrator.observing.trials import Trial, TuningNotFound, TuningStatus, TuningSummary
from orchestrator.planning.tuning import TuningPlan
from orchestrator.redact import secret_values
from orchestrator.wording import counted


def console_url(region: str, name: str) -> str:
    return f"https://{region}.console.aws.amazon.com/sagemaker/home?region={region}#/hyper-tuning-jobs/{name}"


def status_of(described: dict[str, Any], region: str) -> TuningStatus:
    """A DescribeHyperParameterTuningJob answer, its free text shown (`TuningClient.describe`), as the status both
    places report in."""
    config = described["HyperParameterTuningJobConfig"]
    objective = config.get("HyperParameterTuningJobObjective", {})
    best = described.get("BestTrainingJob")
    name = described["HyperParameterTuningJobName"]
    completion = described.get("TuningJobCompletionDetails") or {}
    return TuningStatus(
        name=name, status=described["HyperParameterTuningJobStatus"], strategy=config["Strategy"],
        metric=objective.get("MetricName", ""), goal=objective.get("Type", "Minimize"),
        max_jobs=config["ResourceLimits"].get("MaxNumberOfTrainingJobs"),
        parallel=config["ResourceLimits"]["MaxParallelTrainingJobs"],
        counts=_counts(described.get("TrainingJobStatusCounters", {})),
        best=trial_of(best) if best else None,
        created=described.get("CreationTime"), ended=described.get("HyperParameterTuningEndTime"),
        failure_reason=described.get("FailureReason") or None,
        place={"region": region, "console_url": console_url(region, name)},
        completion_reason=_completion_reason(config, completion),
        trials_not_improving=completion.get("NumberOfTrainingJobsObjectiveNotImproving"),
        converged=completion.get("ConvergenceDetectedTime"),
        runtime_seconds=(described.get("ConsumedResources") or {}).get("RuntimeInSeconds"))


def _completion_reason(config: dict[str, Any], completion: dict[str, Any]) -> str | None:
    """Which completion criterion ended the tuning job, in words, from TuningJobCompletionDetails: convergence, or
    as many trials not improving as the spec's limit (SageMaker names neither in FailureReason or the status)."""
    converged = completion.get("ConvergenceDetectedTime")
    if converged is not None:
        return f"converged at {converged.astimezone(timezone.utc):%Y-%m-%d %H:%M:%S} UTC"
    not_improving = completion.get("NumberOfTrainingJobsObjectiveNotImproving")
    criteria = config.get("TuningJobCompletionCriteria") or {}
    limit = (criteria.get("BestObjectiveNotImproving") or {}).get("MaxNumberOfTrainingJobsNotImproving")
    if limit is not None and not_improving is not None and not_improving >= limit:
        return (f"the objective did not improve in {counted(not_improving, 'trial')} "
                f"(completion.max_jobs_not_improving: {limit})")
    return None


def _counts(counters: dict[str, int]) -> dict[str, int]:
    """TrainingJobStatusCounters as Completed, InProgress, Stopped and Failed (RetryableError + NonRetryableError)."""
    return {"Completed": counters.get("Completed", 0), "InProgress": counters.get("InProgress", 0),
            "Stopped": counters.get("Stopped", 0),
            "Failed": counters.get("RetryableError", 0) + counters.get("NonRetryableError", 0)}


def trial_of(summary: dict[str, Any], number: int = 0) -> Trial:
    """A HyperParameterTrainingJobSummary (the list's rows, and BestTrainingJob), its free text shown, as a Trial."""
    final = summary.get("FinalHyperParameterTuningJobObjectiveMetric") or {}
    started, ended = summary.get("TrainingStartTime"), summary.get("TrainingEndTime")
    return Trial(name=summary["TrainingJobName"], status=summary["TrainingJobStatus"], objective=final.get("Value"),
                 hyperparameters={key: _decoded(value) for key, value in summary.get("TunedHyperParameters", {}).items()},
                 number=number, seconds=(ended - started).total_seconds() if started and ended else None,
                 started=started, ended=ended,
                 failure_reason=summary.get("FailureReason") or None)


def _definition_secrets(described: dict[str, Any]) -> frozenset[str]:
    """The secret values a tuning job gives each trial: its training definitions' environment and static
    hyperparameters."""
    definitions = [described.get("TrainingJobDefinition") or {}, *(described.get("TrainingJobDefinitions") or [])]
    return secret_values(*(definition.get(part, {}) for definition in definitions
                           for part in ("Environment", "StaticHyperParameters")))


def _decoded(text: str) -> Any:
    """Tuned values come back as the request carried them: JSON for categorical values, text for numbers."""
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return text


class TuningClient:
    """Reads and stops one tuning job: what `backends.tuning`'s SageMaker side (and so `orchestrator.Tuning`)
    asks of SageMaker. It neither waits nor draws."""

    def __init__(self, name: str, boto: Any, plan: TuningPlan | None = None) -> None:
        from orchestrator.cloud.sdk import client

        self.name = name
        self.plan = plan
        self.boto = boto
        self._secrets: frozenset[str] | None = None
        """The secret values of the tuning job's training definitions, once read: they never change."""
        with aws_errors(f"connecting to SageMaker for tuning job {name}"):
            self._sagemaker = client(boto, "sagemaker")

    @property
    def region(self) -> str:
        return self.boto.region_name

    def describe(self) -> dict[str, Any]:
        """The DescribeHyperParameterTuningJob response, its free text (its failure reason, the best trial's) shown
        as a job's text is: plain and masked (observing/sagemaker_text.py)."""
        from botocore.exceptions import ClientError

        with aws_errors(f"reading tuning job {self.name}"):
            try:
                described = self._sagemaker.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=self.name)
            except ClientError as exc:
                if is_not_found(exc):
                    raise TuningNotFound(f"no tuning job named {self.name} in {self.region}",
                                         fix="check the name with `smtrain tune list`, and the region") from None
                raise
        self._secrets = _definition_secrets(described)
        return shown_answer(described, self._secrets)

    def status(self) -> TuningStatus:
        """Progress (trials completed, running, stopped, failed) and the best trial so far."""
        return status_of(self.describe(), self.region)

    def trials(self) -> list[Trial]:
        """Every trial with its tuned values, status and final objective, in the order they were created; a
        failure reason masked for the tuning job's secret values (read once, where no status was read before)."""
        if self._secrets is None:
            self.describe()  # reads them
        secrets = self._secrets or frozenset()
        rows: list[dict[str, Any]] = []
        with aws_errors(f"listing the trials of tuning job {self.name}"):
            paginator = self._sagemaker.get_paginator("list_training_jobs_for_hyper_parameter_tuning_job")
            for page in paginator.paginate(HyperParameterTuningJobName=self.name, SortBy="CreationTime",
                                           SortOrder="Ascending"):
                rows += page["TrainingJobSummaries"]
        return [trial_of(shown_answer(row, secrets | secret_values(row.get("TunedHyperParameters", {}))), number)
                for number, row in enumerate(rows, start=1)]

    def log_scaled(self) -> tuple[str, ...]:
        """The parameters searched on a logarithmic scale (a figure draws them on one)."""
        ranges = self.describe()["HyperParameterTuningJobConfig"].get("ParameterRanges", {})
        return tuple(item["Name"] for kind in ("ContinuousParameterRanges", "IntegerParameterRanges")
                     for item in ranges.get(kind, []) if item.get("ScalingType") == "Logarithmic")

    def stop(self) -> tuple[bool, TuningStatus]:
        """Asks SageMaker to stop the search and its running trials: whether it was asked (not when the search was
        not InProgress, which is no error), and the status it was in."""
        current = self.status()
        if current.status != "InProgress":
            return False, current
        try:
            with aws_errors(f"stopping tuning job {self.name}"):
                self._sagemaker.stop_hyper_parameter_tuning_job(HyperParameterTuningJobName=self.name)
        except AwsError:
            current = self.status()
            if current.status != "InProgress":
                return False, current
            raise
        return True, current


def list_tunings(*, boto: Any | None = None, region: str | None = None, status: str | None = None,
                 name_contains: str | None = None, max_results: int = 20) -> list[TuningSummary]:
    """The most recent tuning jobs, newest first."""
    from orchestrator.cloud.sdk import boto_session, client

    filters: dict[str, Any] = {"SortBy": "CreationTime", "SortOrder": "Descending"}
    if status:
        filters["StatusEquals"] = status
    if name_contains:
        filters["NameContains"] = name_contains
    rows: list[TuningSummary] = []
    with aws_errors("listing tuning jobs"):
        sagemaker = client(boto or boto_session(region), "sagemaker")
        for page in sagemaker.get_paginator("list_hyper_parameter_tuning_jobs").paginate(
                **filters, PaginationConfig={"PageSize": min(max_results, 100)}):
            for item in page["HyperParameterTuningJobSummaries"]:
                rows.append(TuningSummary(
                    item["HyperParameterTuningJobName"], item["HyperParameterTuningJobStatus"], item["Strategy"],
                    _counts(item.get("TrainingJobStatusCounters", {})), item.get("CreationTime")))
            if len(rows) >= max_results:
                break
    return rows[:max_results]


def submit_tuning_plan(tuning_plan: TuningPlan, *, boto: Any | None = None) -> TuningClient:
    """Uploads the plan's source (once) and creates exactly its tuning job, exactly once.

    Raises:
        CapabilityError: the job plan has blocking findings; EnvironmentProblem: no region, credentials or role
            (all named at once); SpecError: `boto` is a session for another region than the plan's; AwsError: a
            call failed.
    """
    from orchestrator.cloud.sdk import session_in

    job_plan = tuning_plan.job
    refuse_blocking_findings(job_plan)
    region = job_plan.target.region
    refuse_unready(job_plan, boto)
    boto = session_in(region, boto, named_by="the plan")
    tuning_plan = _with_role_arn(tuning_plan, boto)
    refuse_bucket_elsewhere(job_plan, boto)
    ensure_source_uploaded(job_plan, boto)
    _create_once(tuning_plan, boto)
    return TuningClient(tuning_plan.name, boto, tuning_plan)


def _with_role_arn(tuning_plan: TuningPlan, boto: Any) -> TuningPlan:
    """A role given by name becomes its ARN (IAM GetRole), as for single jobs."""
    import dataclasses

    from orchestrator.cloud.sdk import client

    definition = tuning_plan.request["TrainingJobDefinition"]
    role = definition["RoleArn"]
    if role.startswith("arn:"):
        return tuning_plan
    with aws_errors(f"looking up the ARN of the execution role {role!r} (iam:GetRole)"):
        arn = client(boto, "iam").get_role(RoleName=role.rsplit("/", 1)[-1])["Role"]["Arn"]
    request = {**tuning_plan.request, "TrainingJobDefinition": {**definition, "RoleArn": arn}}
    return dataclasses.replace(tuning_plan, request=request)


def _create_once(tuning_plan: TuningPlan, boto: Any) -> None:
    """CreateHyperParameterTuningJob with the plan's request, exactly once (create_once.py)."""
    from orchestrator.cloud.sdk import client

    request = tuning_plan.request
    definition = request["TrainingJobDefinition"]
    single_attempt, sagemaker = client(boto, "sagemaker", max_attempts=0), client(boto, "sagemaker")
    create_once(Creation(
        what=f"tuning job {tuning_plan.name}", operation="CreateHyperParameterTuningJob",
        send=lambda: single_attempt.create_hyper_parameter_tuning_job(**request),
        describe=lambda: sagemaker.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=tuning_plan.name),
        is_ours=lambda described: same_training_definition(described.get("TrainingJobDefinition") or {},
                                                           definition, "StaticHyperParameters"),
        name_clash=_name_clash(tuning_plan),
        secrets=secret_values(definition.get("Environment", {}), definition.get("StaticHyperParameters", {}))))


def _name_clash(tuning_plan: TuningPlan) -> AwsError:
    return AwsError(f"a tuning job named {tuning_plan.name} already exists in {tuning_plan.job.target.region}",
                    fix="submit under another name (leave out --job-name for a timestamped one); "
                        f"`smtrain tune status {tuning_plan.name}` shows the existing one")
