"""How a job is followed is declared once (`cloud/hang_watch.py`'s WatchOptions): `smtrain watch`'s and `smtrain
submit`'s --stall-timeout, --no-stop and --poll-seconds (and `logs`' --poll-seconds) are generated from the declared
fields, and the command line hands `Job.follow` the same WatchOptions the API builds from the same values."""

from __future__ import annotations

import dataclasses

import click
import pytest
from click.testing import CliRunner

import orchestrator.backends.job as job_module
import orchestrator.cli.jobs as jobs_command
from orchestrator.cli.main import main
from orchestrator.cloud.hang_watch import DEFAULT_STALL_TIMEOUT_SECONDS, WatchOptions
from orchestrator.declaration import declarations, default_of, flag_of, options_from


class _Captured(Exception):
    def __init__(self, options: WatchOptions) -> None:
        super().__init__("captured")
        self.options = options


def _flags(command: str) -> dict[str, click.Option]:
    found = main.get_command(click.Context(main), command)
    return {flag: parameter for parameter in found.params if isinstance(parameter, click.Option)
            for flag in parameter.opts}


@pytest.mark.parametrize("command", ["watch", "submit"])
def test_every_declared_follow_option_is_a_flag_as_declared(command):
    flags = _flags(command)
    for name, option in declarations(WatchOptions).items():
        parameter = flags.get(flag_of(WatchOptions, name))
        assert parameter is not None, f"{name} is declared but `smtrain {command}` has no {flag_of(WatchOptions, name)}"
        assert (parameter.name, parameter.help, parameter.metavar) == (name, option.help, option.metavar)
        if option.minimum is not None:
            assert parameter.type.min == option.minimum, name
    assert set(declarations(WatchOptions)) == {"stall_timeout", "stop", "poll_seconds"}
    assert _flags("logs")["--poll-seconds"].help == declarations(WatchOptions)["poll_seconds"].help


@pytest.fixture
def captured_follow(monkeypatch):
    """`watch` resolves to a stand-in job and its follow loop raises with the options it was handed."""

    class Backend:
        name = "sagemaker"

    monkeypatch.setattr(jobs_command, "resolve_job", lambda *args: (Backend(), "a-job"))
    monkeypatch.setattr(job_module.Job, "status", lambda self: None)

    def follow(self, options, **callbacks):
        raise _Captured(options)

    monkeypatch.setattr(job_module.Job, "follow", follow)


def _followed_with(*words: str) -> WatchOptions:
    result = CliRunner().invoke(main, ["watch", "a-job", *words])
    assert isinstance(result.exception, _Captured), result.output
    return result.exception.options


def test_the_command_line_and_the_api_give_the_follow_loop_the_same_options(captured_follow):
    keywords = {"stall_timeout": 60.5, "stop": False, "poll_seconds": 2.5}
    assert all(value != default_of(WatchOptions, name) for name, value in keywords.items())

    from_words = _followed_with("--stall-timeout", "60.5", "--no-stop", "--poll-seconds", "2.5")

    assert from_words == options_from(WatchOptions, keywords, "following a job") == dataclasses.replace(
        WatchOptions(), **keywords)


def test_watch_judges_by_default_and_zero_never_judges(captured_follow):
    assert _followed_with() == WatchOptions()
    assert _followed_with().stall_timeout == DEFAULT_STALL_TIMEOUT_SECONDS
    assert _followed_with("--stall-timeout", "0").stall_timeout is None


def test_status_judges_by_the_declared_stall_timeout(monkeypatch):
    """`status --stall-timeout` was a click option of its own, which took NaN; it is now watch's, as declared."""
    stall, declared_stall = _flags("status")["--stall-timeout"], declarations(WatchOptions)["stall_timeout"]
    assert (stall.name, stall.help, stall.metavar, stall.type.min) == (
        "stall_timeout", declared_stall.help, declared_stall.metavar, declared_stall.minimum)
    asked: list[float | None] = []

    class Backend:
        def status_report(self, job_id, stall_timeout):
            asked.append(stall_timeout)
            raise LookupError("asked: nothing to report")

    monkeypatch.setattr(jobs_command, "resolve_job", lambda *args: (Backend(), "a-job"))
    for words in ([], ["--stall-timeout", "0"], ["--stall-timeout", "60.5"]):
        assert isinstance(CliRunner().invoke(main, ["status", "a-job", *words]).exception, LookupError)
    assert asked == [DEFAULT_STALL_TIMEOUT_SECONDS, None, 60.5]


def test_submit_wait_judges_no_hang_unless_asked():
    stall = _flags("submit")["--stall-timeout"]
    assert stall.default == "0" and stall.show_default
    assert _flags("watch")["--stall-timeout"].default == "1800"
