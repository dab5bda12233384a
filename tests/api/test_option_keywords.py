"""Every command-line option that changes how a job is planned or submitted is a keyword of the API function that
does the same, and an error's fix names the form the user is in: `--allow-unverified` on the command line,
`allow_unverified=True` in a notebook (against moto's server, as the other API tests)."""

from __future__ import annotations

import inspect
import os

import boto3
import click
import pytest
from click.testing import CliRunner

import orchestrator
from orchestrator import api
from orchestrator.cli.main import main
from orchestrator.declaration import declarations, default_of
from orchestrator.emulator.run_options import Options
from orchestrator.errors import CapabilityError, SpecError
from orchestrator.planning.unverified import UnverifiedOptions
from tuning_specs import TINY_SEARCH

UNVERIFIED = {"name": "smddp-g5", "framework_version": "2.2.0", "py_version": "py310",
              "instance": {"type": "ml.g5.12xlarge", "count": 1}, "distribution": {"mode": "pytorchddp"}}
"""pytorchddp on a g5: a combination smtrain has not verified, so submit refuses it unless allowed."""

COMMAND_FUNCTIONS = {
    ("plan",): api.plan,
    ("submit",): api.submit,
    ("local",): api.run,
    ("tune", "plan"): api.plan_tuning,
    ("tune", "submit"): api.submit_tuning,
}
"""Each command that plans or sends a job, and the API function that does the same."""

CLI_ONLY = {
    "overrides": "`--set` edits the spec: the API's spec argument takes it edited, load_spec(path, overrides) or "
                 "load_tuning(path, overrides) or a dict (plan_tuning's own overrides= predates this test; a keyword "
                 "on every function would take submit and run past six parameters)",
    "output": "how the command prints its answer (text or JSON); the API returns the object itself",
    "full": "`plan --full` prints the whole request; a Plan holds it (plan.create_training_job_request)",
    "dry_run": "`submit --dry-run` is `smtrain plan`, the API's plan()",
    "wait": "following a job, not sending it: the Job that submit returns has wait()",
    "stream_logs": "following a job's logs: job.logs(follow=True)",
    "stall_timeout": "how a job is followed (WatchOptions): job.follow(WatchOptions(...))",
    "stop": "how a job is followed (WatchOptions, --no-stop): job.follow(WatchOptions(stop=False))",
    "poll_seconds": "how a job is followed (WatchOptions): job.wait(poll_seconds=...)",
    "verbose": "what a terminal shows of a local run; a notebook's Job shows its own summary and job.logs()",
    "quiet": "what a terminal shows of a local run; a notebook's Job shows its own summary and job.logs()",
    "explain": "prints how the emulation differs from SageMaker and exits; nothing is run",
    "hyperparameters_file": "hidden: how `tune local` hands a trial its values; from Python a spec as a dict "
                            "holds them",
}
"""Options no API function takes, each with why: how the command line shows an answer, following a job (which the
returned Job does with its own methods), or the spec's own text. An option missing from both here and the API fails
the test below."""


def _command(path: tuple[str, ...]) -> click.Command:
    context, command = click.Context(main), main
    for name in path:
        command = command.get_command(context, name)
    return command


def _keywords(function) -> set[str]:
    keywords = set(inspect.signature(function).parameters)
    return keywords | set(declarations(Options)) if function is api.run else keywords  # run's **options


@pytest.mark.parametrize("path", COMMAND_FUNCTIONS, ids=" ".join)
def test_every_option_of_a_planning_command_is_a_keyword_of_its_api_function(path):
    """Before, `submit --allow-unverified` had no keyword: a notebook told to pass it could only edit the spec."""
    function = COMMAND_FUNCTIONS[path]
    options = [parameter for parameter in _command(path).params if isinstance(parameter, click.Option)]

    missing = [parameter.opts[0] for parameter in options
               if parameter.name not in _keywords(function) and parameter.name not in CLI_ONLY]

    assert missing == [], f"`smtrain {' '.join(path)}` has {missing}, which {function.__name__}() does not take"


def test_the_keyword_s_default_is_the_declared_option_s():
    for function in (api.submit, api.run, api.submit_tuning):
        parameter = inspect.signature(function).parameters["allow_unverified"]
        assert parameter.default == default_of(UnverifiedOptions, "allow_unverified"), function.__name__
    assert {parameter.help for path in (("submit",), ("validate",), ("tune", "submit"))
            for parameter in _command(path).params if parameter.name == "allow_unverified"} == {
        declarations(UnverifiedOptions)["allow_unverified"].help}


def _search(job_spec):
    path = job_spec.parent / "search.yaml"
    path.write_text(TINY_SEARCH.replace("tiny.yaml", job_spec.name))
    return path


def _training_jobs() -> list[str]:
    return [job["TrainingJobName"] for job in boto3.client("sagemaker").list_training_jobs()["TrainingJobSummaries"]]


def test_a_notebook_submits_an_unverified_combination_with_the_keyword(write_spec, bucket):
    """Before, the refusal said `(or pass --allow-unverified)`, and submit() took no such keyword."""
    spec = write_spec(**UNVERIFIED)

    with pytest.raises(CapabilityError) as refused:
        orchestrator.submit(spec)
    assert _training_jobs() == []
    job = orchestrator.submit(spec, allow_unverified=True)

    assert refused.value.fix.endswith("set `allow_unverified: true` in the spec (or pass allow_unverified=True)")
    assert "--" not in str(refused.value)
    assert _training_jobs() == [job.name]


def test_a_notebook_s_unverified_finding_names_the_keyword(write_spec, bucket):
    """Before, a plan's finding said "or set allow_unverified: true", as the rule's data held it: the refusal of
    the same plan named the keyword, the finding did not."""
    spec = write_spec(**UNVERIFIED)

    [finding] = [finding for finding in orchestrator.plan(spec).findings if finding.severity == "unverified"]
    with pytest.raises(CapabilityError) as refused:
        orchestrator.submit(spec)

    way = "set `allow_unverified: true` in the spec (or pass allow_unverified=True)"
    assert finding.fix.endswith(f"; or, if you know it works, {way}") and refused.value.fix.endswith(way)
    assert "--" not in finding.fix


def test_run_on_sagemaker_takes_the_keyword_as_submit_does(write_spec, bucket):
    spec = write_spec(**UNVERIFIED)

    with pytest.raises(CapabilityError, match=r"\(or pass allow_unverified=True\)"):
        orchestrator.run(spec, backend="sagemaker")
    job = orchestrator.run(spec, backend="sagemaker", allow_unverified=True)

    assert _training_jobs() == [job.name]


def test_run_on_sagemaker_takes_every_keyword_submit_takes():
    """`run(backend="sagemaker")` is `submit`: what submit takes, run takes, by its own keywords or its options."""
    submitted = set(inspect.signature(api.submit).parameters) - {"spec_or_plan"}

    assert submitted - set(inspect.signature(api.run).parameters) == set(api.SUBMIT_OPTIONS)


def test_run_on_sagemaker_passes_the_job_name_and_the_source_limit_on(write_spec, bucket):
    """Before, `run(backend="sagemaker", job_name=...)` or `max_source_bytes=` was refused as a local run's option:
    a job sent by run could not be named, nor a large source sent."""
    spec = write_spec()
    (spec.parent / "src" / "weights.bin").write_bytes(os.urandom(300_000))  # random: it does not compress

    with pytest.raises(SpecError, match=r"packs to more than the 100.0 kB limit"):
        orchestrator.run(spec, backend="sagemaker", max_source_bytes=100_000)
    job = orchestrator.run(spec, backend="sagemaker", job_name="named-by-run", max_source_bytes=1_000_000)

    assert job.name == "named-by-run" and _training_jobs() == ["named-by-run"]


def test_a_plan_is_judged_when_it_is_submitted(write_spec, bucket):
    """Whether an unverified combination is sent is decided at submit: a Plan made without it being allowed is
    refused there, and sent, its request unchanged, when submit is given `allow_unverified=True`; a spec that says
    `allow_unverified: true` needs no keyword."""
    made = orchestrator.plan(write_spec(**UNVERIFIED), job_name="as-planned")
    allowed_by_its_spec = orchestrator.plan(write_spec(**{**UNVERIFIED, "name": "allowed", "allow_unverified": True}))

    with pytest.raises(CapabilityError, match=r"\(or pass allow_unverified=True\)"):
        orchestrator.submit(made)
    sent = orchestrator.submit(made, allow_unverified=True)
    orchestrator.submit(allowed_by_its_spec)

    assert sorted(_training_jobs()) == sorted(["as-planned", allowed_by_its_spec.job_name])
    assert sent.plan.create_training_job_request == made.create_training_job_request
    assert not made.spec.allow_unverified  # the caller's plan is left as it was
    # named as the call gave it (before: `--set allow_unverified=true`, an option nobody typed)
    assert sent.plan.sources["allow_unverified"].to_dict() == {"from": "allow_unverified=",
                                                                "where": "allow_unverified=True"}


def test_a_tuning_job_takes_the_keyword_for_a_spec_and_for_a_plan(write_spec, bucket):
    search = _search(write_spec(**UNVERIFIED))

    with pytest.raises(CapabilityError, match=r"\(or pass allow_unverified=True\)"):
        orchestrator.submit_tuning(search)
    from_spec = orchestrator.submit_tuning(search, allow_unverified=True)
    from_plan = orchestrator.submit_tuning(orchestrator.plan_tuning(search, job_name="from-plan"), allow_unverified=True)

    listed = boto3.client("sagemaker").list_hyper_parameter_tuning_jobs()["HyperParameterTuningJobSummaries"]
    assert sorted(item["HyperParameterTuningJobName"] for item in listed) == sorted([from_spec.name, from_plan.name])


@pytest.mark.parametrize("words", [("submit",), ("tune", "submit")], ids=" ".join)
def test_the_command_line_s_refusal_names_its_flag(write_spec, bucket, words):
    spec = write_spec(**UNVERIFIED)

    refused = CliRunner().invoke(main, [*words, str(_search(spec) if "tune" in words else spec)])

    assert refused.exit_code == 2
    assert "(or pass --allow-unverified)" in refused.output and "allow_unverified=True" not in refused.output

