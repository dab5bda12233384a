"""A SageMaker job's metric series, as CloudWatch holds them.

SageMaker applies the job's metric definitions to its logs (the same rule as `observing.metric_series.extract`)
and publishes each value to CloudWatch in the namespace `/aws/sagemaker/TrainingJobs` with the dimension
`TrainingJobName` (what the SDK's `TrainingJobAnalytics` reads too). `GetMetricData` returns one value per
period, the average of the values logged in it: 60 s by default, less for data kept at high resolution.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

from orchestrator.cloud.aws_errors import aws_errors
from orchestrator.observing.metric_series import MetricPoint

NAMESPACE = "/aws/sagemaker/TrainingJobs"
JOB_DIMENSION = "TrainingJobName"
DEFAULT_PERIOD_SECONDS = 60
# CloudWatch stamps a datapoint with the start of its period: widen the window by one period on each side.
_MARGIN = timedelta(minutes=1)
_QUERIES_PER_CALL = 500


def defined_metric_names(described: dict[str, Any]) -> list[str]:
    """The names in the job's MetricDefinitions, in their order."""
    definitions = described.get("AlgorithmSpecification", {}).get("MetricDefinitions", [])
    return [item["Name"] for item in definitions]


def cloudwatch_points(
    cloudwatch: Any,
    described: dict[str, Any],
    names: Sequence[str] | None = None,
    period_seconds: int = DEFAULT_PERIOD_SECONDS,
) -> list[MetricPoint]:
    """Every point of the job's metrics over its lifetime, oldest first, metric by metric.

    Args:
        cloudwatch: a CloudWatch client.
        described: the job's DescribeTrainingJob response (name, definitions, start and end times).
        names: only these metrics; default: the job's definitions plus whatever else CloudWatch lists for it.
    """
    job_name = described["TrainingJobName"]
    dimensions = [{"Name": JOB_DIMENSION, "Value": job_name}]
    with aws_errors(f"reading the metrics of {job_name} from CloudWatch"):
        wanted = list(names) if names else _published_names(cloudwatch, dimensions, described)
        if not wanted:
            return []
        start = (described.get("TrainingStartTime") or described["CreationTime"]) - _MARGIN
        end = (described.get("TrainingEndTime") or datetime.now(timezone.utc)) + _MARGIN
        by_name: dict[str, list[MetricPoint]] = {name: [] for name in wanted}
        for first in range(0, len(wanted), _QUERIES_PER_CALL):
            chunk = wanted[first : first + _QUERIES_PER_CALL]
            queries = [
                {
                    "Id": f"m{index}",
                    "Label": name,
                    "MetricStat": {
                        "Metric": {"Namespace": NAMESPACE, "MetricName": name, "Dimensions": dimensions},
                        "Period": period_seconds,
                        "Stat": "Average",
                    },
                }
                for index, name in enumerate(chunk)
            ]
            paginator = cloudwatch.get_paginator("get_metric_data")
            for page in paginator.paginate(
                MetricDataQueries=queries, StartTime=start, EndTime=end, ScanBy="TimestampAscending"
            ):
                for result in page["MetricDataResults"]:
                    name = chunk[int(result["Id"][1:])]
                    by_name[name] += [
                        MetricPoint(name, value, stamp.astimezone(timezone.utc))
                        for stamp, value in zip(result["Timestamps"], result["Values"], strict=True)
                    ]
    return [point for name in wanted for point in sorted(by_name[name], key=lambda point: point.time)]


def _published_names(cloudwatch: Any, dimensions: list[dict[str, str]], described: dict[str, Any]) -> list[str]:
    """The job's defined names first, then any other name CloudWatch has data for under the job's dimension."""
    listed = [
        metric["MetricName"]
        for page in cloudwatch.get_paginator("list_metrics").paginate(Namespace=NAMESPACE, Dimensions=dimensions)
        for metric in page["Metrics"]
    ]
    return list(dict.fromkeys([*defined_metric_names(described), *sorted(listed)]))
