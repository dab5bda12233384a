"""Tuning jobs on SageMaker: submit once, then status, trials, best job, stop and the list of recent ones.

Submitting follows single jobs (submission.py): the plan's source is uploaded once (content-addressed), and
CreateHyperParameterTuningJob goes out through create_once.py, so one submit never creates two searches.
`Tuning` is the handle `submit` returns and `Tuning.attach(name)` rebuilds.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from orchestrator.cloud.aws_errors import aws_errors, is_not_found
from orchestrator.cloud.create_once import Creation, create_once, same_training_definition
from orchestrator.cloud.jobs import JobClient
from orchestrator.cloud.submission import (
    ensure_source_uploaded,
    refuse_blocking_findings,
    refuse_unready,
)
from orchestrator.errors import AwsError, SmtrainError
from orchestrator.observing import trials as trial_tables
from orchestrator.observing.trials import Trial
from orchestrator.planning.tuning import TuningPlan
from orchestrator.redact import secret_values

if TYPE_CHECKING:
    from matplotlib.figure import Figure

TERMINAL = frozenset({"Completed", "Failed", "Stopped"})


class TuningNotFound(SmtrainError):
    """No tuning job of that name in the region (exit 2, like an unknown job name)."""


def console_url(region: str, name: str) -> str:
    return f"https://{region}.console.aws.amazon.com/sagemaker/home?region={region}#/hyper-tuning-jobs/{name}"


@dataclass(frozen=True)
class TuningStatus:
    """What DescribeHyperParameterTuningJob says, reduced to what a person acts on."""

    name: str
    region: str
    status: str
    strategy: str
    metric: str
    goal: str
    max_jobs: int | None
    parallel: int
    counts: dict[str, int]
    """Trials Completed, InProgress, Stopped (early or with the search), Failed (RetryableError +
    NonRetryableError)."""
    best: Trial | None
    created: datetime | None
    ended: datetime | None
    failure_reason: str | None

    @classmethod
    def from_description(cls, described: dict[str, Any], region: str) -> TuningStatus:
        config = described["HyperParameterTuningJobConfig"]
        counters = described.get("TrainingJobStatusCounters", {})
        objective = config.get("HyperParameterTuningJobObjective", {})
        best = described.get("BestTrainingJob")
        return cls(
            name=described["HyperParameterTuningJobName"], region=region,
            status=described["HyperParameterTuningJobStatus"], strategy=config["Strategy"],
            metric=objective.get("MetricName", ""), goal=objective.get("Type", "Minimize"),
            max_jobs=config["ResourceLimits"].get("MaxNumberOfTrainingJobs"),
            parallel=config["ResourceLimits"]["MaxParallelTrainingJobs"],
            counts={"Completed": counters.get("Completed", 0), "InProgress": counters.get("InProgress", 0),
                    "Stopped": counters.get("Stopped", 0),
                    "Failed": counters.get("RetryableError", 0) + counters.get("NonRetryableError", 0)},
            best=trial_of(best) if best else None,
            created=described.get("CreationTime"), ended=described.get("HyperParameterTuningEndTime"),
            failure_reason=described.get("FailureReason") or None)

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL

    def to_dict(self) -> dict[str, Any]:
        return {"tuning_job_name": self.name, "region": self.region, "status": self.status,
                "strategy": self.strategy, "objective": {"metric": self.metric, "type": self.goal},
                "max_jobs": self.max_jobs, "parallel_jobs": self.parallel, "trials": self.counts,
                "best": self.best.to_dict() if self.best else None,
                "created": self.created.isoformat() if self.created else None,
                "ended": self.ended.isoformat() if self.ended else None,
                "failure_reason": self.failure_reason, "console_url": console_url(self.region, self.name)}


def trial_of(summary: dict[str, Any], number: int = 0) -> Trial:
    """A HyperParameterTrainingJobSummary (the list's rows, and BestTrainingJob) as a Trial."""
    final = summary.get("FinalHyperParameterTuningJobObjectiveMetric") or {}
    started, ended = summary.get("TrainingStartTime"), summary.get("TrainingEndTime")
    return Trial(name=summary["TrainingJobName"], status=summary["TrainingJobStatus"], objective=final.get("Value"),
                 hyperparameters={key: _decoded(value) for key, value in summary.get("TunedHyperParameters", {}).items()},
                 number=number, seconds=(ended - started).total_seconds() if started and ended else None,
                 started=started, ended=ended,
                 failure_reason=summary.get("FailureReason"))


def _decoded(text: str) -> Any:
    """Tuned values come back as the request carried them: JSON for categorical values, text for numbers."""
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return text


class Tuning:
    """A handle on one tuning job. `orchestrator.submit_tuning(...)` returns one; `Tuning.attach(name)` finds one."""

    def __init__(self, name: str, boto: Any, plan: TuningPlan | None = None) -> None:
        from orchestrator.cloud.sdk import client

        self.name = name
        self.plan = plan
        self._boto = boto
        with aws_errors(f"connecting to SageMaker for tuning job {name}"):
            self._sagemaker = client(boto, "sagemaker")
        self._last: TuningStatus | None = None

    @classmethod
    def attach(cls, name: str, *, region: str | None = None, boto: Any | None = None) -> Tuning:
        """The tuning job called `name` in `region` (default: boto3's chain).

        Raises:
            TuningNotFound: there is no such tuning job there.
        """
        from orchestrator.cloud.sdk import boto_session

        tuning = cls(name, boto or boto_session(region))
        tuning.status()
        return tuning

    @property
    def region(self) -> str:
        return self._boto.region_name

    @property
    def last_status(self) -> TuningStatus | None:
        """The status read by the latest call that read one; None before any. Makes no call."""
        return self._last

    def describe(self) -> dict[str, Any]:
        from botocore.exceptions import ClientError

        with aws_errors(f"reading tuning job {self.name}"):
            try:
                return self._sagemaker.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=self.name)
            except ClientError as exc:
                if is_not_found(exc):
                    raise TuningNotFound(f"no tuning job named {self.name} in {self.region}",
                                         fix="check the name with `smtrain tune list`, and the region") from None
                raise

    def status(self) -> TuningStatus:
        """Progress (trials completed, running, stopped, failed) and the best trial so far."""
        self._last = TuningStatus.from_description(self.describe(), self.region)
        return self._last

    def trials(self) -> list[Trial]:
        """Every trial with its tuned values, status and final objective, in the order they were created."""
        rows: list[dict[str, Any]] = []
        with aws_errors(f"listing the trials of tuning job {self.name}"):
            paginator = self._sagemaker.get_paginator("list_training_jobs_for_hyper_parameter_tuning_job")
            for page in paginator.paginate(HyperParameterTuningJobName=self.name, SortBy="CreationTime",
                                           SortOrder="Ascending"):
                rows += page["TrainingJobSummaries"]
        return [trial_of(row, number) for number, row in enumerate(rows, start=1)]

    def _goal(self) -> tuple[str, str]:
        current = self._last or self.status()
        return current.goal, current.metric

    def best_trial(self) -> Trial | None:
        return (self._last or self.status()).best

    def best_job(self) -> JobClient:
        """The client of the best trial so far (its status, log tails, metric points, model); for the whole
        `orchestrator.Job` handle: `orchestrator.attach("sagemaker:" + tuning.best_trial().name)`."""
        best = self.status().best
        if best is None:
            raise SmtrainError(f"tuning job {self.name} has no completed trial with an objective yet",
                               fix="wait for a trial to complete (`smtrain tune status`)")
        return JobClient(best.name, self._boto)

    def table(self) -> str:
        goal, metric = self._goal()
        return trial_tables.table(self.trials(), goal, metric)

    def results(self) -> Any:
        """All trials sorted by objective, as a pandas DataFrame (a list of dicts without pandas)."""
        goal, _ = self._goal()
        return trial_tables.to_frame(self.trials(), goal)

    def plot(self) -> Figure:
        """The objective over the trials and against each tuned parameter (needs matplotlib)."""
        goal, metric = self._goal()
        described = self.describe()
        ranges = described["HyperParameterTuningJobConfig"].get("ParameterRanges", {})
        logs = [item["Name"] for kind in ("ContinuousParameterRanges", "IntegerParameterRanges")
                for item in ranges.get(kind, []) if item.get("ScalingType") == "Logarithmic"]
        return trial_tables.figure(self.trials(), goal, metric, logs, title=self.name)

    def stop(self) -> bool:
        """Asks SageMaker to stop the search and its running trials. False when it was not InProgress."""
        if self.status().status != "InProgress":
            return False
        try:
            with aws_errors(f"stopping tuning job {self.name}"):
                self._sagemaker.stop_hyper_parameter_tuning_job(HyperParameterTuningJobName=self.name)
        except AwsError:
            if self.status().status != "InProgress":
                return False
            raise
        return True

    def wait(self, poll_seconds: float = 60.0) -> TuningStatus:
        while True:
            current = self.status()
            if current.is_terminal:
                return current
            time.sleep(poll_seconds)

    def __repr__(self) -> str:
        if self._last is None:
            return f"Tuning({self.name!r}, region={self.region!r}, status='not read yet')"
        counts = ", ".join(f"{key.lower()}={value}" for key, value in self._last.counts.items())
        best = self._last.best
        shown = f", best={best.name!r} {self._last.metric}={best.objective!r}" if best else ""
        return f"Tuning({self.name!r}, status={self._last.status!r}, {counts}{shown})"

    def _repr_markdown_(self) -> str:
        rows = [("region", self.region)]
        if self._last:
            current = self._last
            rows += [("status", current.status), ("strategy", current.strategy),
                     ("trials", ", ".join(f"{value} {key.lower()}" for key, value in current.counts.items())
                      + (f" of {current.max_jobs}" if current.max_jobs else ""))]
            if current.best:
                rows.append(("best", f"{current.best.name}: {current.metric} = {current.best.objective} "
                                     f"with {current.best.hyperparameters}"))
        else:
            rows.append(("status", "not read yet: `tuning.status()`"))
        body = "\n".join(f"| {key} | {value} |" for key, value in rows)
        return (f"**Tuning job [`{self.name}`]({console_url(self.region, self.name)})**\n\n| | |\n|---|---|\n"
                f"{body}\n")


@dataclass(frozen=True)
class TuningSummary:
    """One row of ListHyperParameterTuningJobs."""

    name: str
    status: str
    strategy: str
    counts: dict[str, int]
    created: datetime | None

    def to_dict(self) -> dict[str, Any]:
        return {"tuning_job_name": self.name, "status": self.status, "strategy": self.strategy,
                "trials": self.counts, "created": self.created.isoformat() if self.created else None}


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
                counters = item.get("TrainingJobStatusCounters", {})
                rows.append(TuningSummary(
                    item["HyperParameterTuningJobName"], item["HyperParameterTuningJobStatus"], item["Strategy"],
                    {"Completed": counters.get("Completed", 0), "InProgress": counters.get("InProgress", 0),
                     "Stopped": counters.get("Stopped", 0),
                     "Failed": counters.get("RetryableError", 0) + counters.get("NonRetryableError", 0)},
                    item.get("CreationTime")))
            if len(rows) >= max_results:
                break
    return rows[:max_results]


def submit_tuning_plan(tuning_plan: TuningPlan, *, boto: Any | None = None) -> Tuning:
    """Uploads the plan's source (once) and creates exactly its tuning job, exactly once.

    Raises:
        CapabilityError: the job plan has blocking findings; EnvironmentProblem: no region, credentials or role
            (all named at once); AwsError: a call failed.
    """
    from orchestrator.cloud.sdk import boto_session

    job_plan = tuning_plan.job
    refuse_blocking_findings(job_plan)
    region = job_plan.target.region
    refuse_unready(job_plan.target, boto)
    if boto is not None and boto.region_name != region:
        raise SmtrainError(f"the boto3 session is for {boto.region_name} but the plan targets {region}",
                           fix=f"pass a session for {region}, or plan with this session")
    boto = boto or boto_session(region)
    tuning_plan = _with_role_arn(tuning_plan, boto)
    ensure_source_uploaded(job_plan, boto)
    _create_once(tuning_plan, boto)
    return Tuning(tuning_plan.name, boto, tuning_plan)


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
                    fix="submit under another name (leave out --name for a timestamped one); "
                        f"`smtrain tune status {tuning_plan.name}` shows the existing one")
