"""The `Job` and `Tuning` keywords that have a CLI option take what the option takes and refuse the rest in the
option's terms, naming the keyword: `period_seconds` as `smtrain metrics --period` (a whole number of 1 or more),
`names` as `--metric` (one name, or several), `poll_seconds` as `--poll-seconds` and `stall_timeout` as
`--stall-timeout` (a number of 0 or more). Before, the backends got them as given: a period of 0 was read as the
default and a negative one sent to CloudWatch, a name was split into its characters, and a negative pause failed
inside time.sleep with a traceback."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

import orchestrator
from orchestrator.cli.main import main
from orchestrator.errors import SmtrainError, SpecError
from orchestrator.backends.base import MetricSeries
from orchestrator.observing.metric_series import refuse_unknown_metrics


class _RecordingBackend:
    """A backend that records what `Job` asks of it: the refusals must come before any read."""

    name = "local"
    poll_seconds = 1.0

    def __init__(self) -> None:
        self.asked: list[tuple[str, object]] = []

    def metric_series(self, job_id, names, period_seconds):
        self.asked.append(("metric_series", names))
        refuse_unknown_metrics(names, ["train:loss", "eval:loss"], [], job_id)
        return MetricSeries([], "recorded", [])

    def notices(self, job_id):
        return []

    def __getattr__(self, name):
        def called(*args, **kwargs):
            self.asked.append((name, args))

        return called


@pytest.fixture
def job():
    return orchestrator.Job(_RecordingBackend(), "job-1")


@pytest.mark.parametrize("period", [0, -60, 2.5, True, "60"])
def test_a_period_that_is_no_count_of_seconds_is_refused_as_metrics_period_refuses_it(job, period, tmp_path):
    for call in (job.metric_points, job.metrics, job.plot):
        with pytest.raises(SpecError) as refused:
            call(period_seconds=period)
        assert refused.value.message == f"period_seconds={period!r} is no count of seconds"
        assert "1 or more" in refused.value.fix and "leave period_seconds out for 60" in refused.value.fix
    assert job.backend.asked == []
    cli = CliRunner().invoke(main, ["metrics", f"local:{tmp_path}", "--period", "0"])
    assert cli.exit_code == 2 and "'--period'" in cli.output


def test_one_metric_name_is_that_metric_as_metric_name_is(job):
    job.metric_points(names="train:loss")

    assert job.backend.asked[0] == ("metric_series", ["train:loss"])


@pytest.mark.parametrize("names", [[3], 3, {"train:loss": 1}])
def test_names_that_are_no_metric_names_are_refused_naming_the_keyword(job, names):
    with pytest.raises(SpecError, match="is no metric name nor a list of them") as refused:
        job.metric_points(names=names)

    assert 'names="train:loss"' in refused.value.fix and job.backend.asked == []


def test_an_unknown_metric_s_fix_names_the_keyword_not_the_cli_option(job):
    with pytest.raises(SmtrainError, match="job-1 has no metric train:lost") as refused:
        job.metric_points(names=["train:lost"])

    assert refused.value.fix == "give names= one of those, or leave it out for every metric"


@pytest.mark.parametrize("call", [
    lambda job: job.wait(poll_seconds=-1),
    lambda job: job.logs(poll_seconds=-1),
    lambda job: job.liveness(-1),
    lambda job: orchestrator.Tuning(_RecordingBackend(), "search-1").wait(poll_seconds=-1),
], ids=["wait", "logs", "liveness", "Tuning.wait"])
def test_a_negative_pause_or_stall_timeout_is_refused_as_the_cli_refuses_it(job, call):
    with pytest.raises(SpecError) as refused:
        call(job)

    assert refused.value.message.endswith("=-1 is below its minimum 0")
    assert "of at least 0" in refused.value.fix and job.backend.asked == []


@pytest.mark.parametrize("pause", ["1", True])
def test_a_pause_that_is_no_number_is_refused(job, pause):
    with pytest.raises(SpecError, match=f"poll_seconds={pause!r} is not a number"):
        job.wait(poll_seconds=pause)


@pytest.mark.parametrize("call", [
    lambda job: job.wait(poll_seconds=float("nan")),
    lambda job: job.logs(poll_seconds=float("nan")),
    lambda job: job.liveness(float("nan")),
    lambda job: orchestrator.Tuning(_RecordingBackend(), "search-1").wait(poll_seconds=float("nan")),
], ids=["wait", "logs", "liveness", "Tuning.wait"])
def test_a_nan_pause_or_stall_timeout_is_refused_in_the_words_the_cli_refuses_it_in(job, call):
    """Before, NaN passed the minimum's comparison on both sides: `time.sleep(nan)` then failed in the follow loop
    with a ValueError, or a stall timeout of NaN never judged."""
    with pytest.raises(SpecError) as refused:
        call(job)

    assert refused.value.message.endswith("=nan is not a number") and job.backend.asked == []


@pytest.mark.parametrize("words", [
    ["watch", "a-job", "--poll-seconds", "nan"],
    ["logs", "a-job", "--follow", "--poll-seconds", "NaN"],
    ["watch", "a-job", "--stall-timeout", "nan"],
    ["status", "a-job", "--stall-timeout", "nan"],
    ["local", "job.yaml", "--stall-timeout", "nan"],
])
def test_a_nan_number_option_is_a_usage_error_on_the_command_line(words):
    result = CliRunner().invoke(main, words)

    assert result.exit_code == 2 and f"'{words[-2]}': nan is not a number" in result.output, result.output
