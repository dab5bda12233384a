"""The notebook API: the same steps as the command line, as functions.

    spec = orchestrator.load_spec("job.yaml")
    plan = orchestrator.plan(spec)        # resolves role, region, output path; builds the request
    plan = orchestrator.plan({"name": "mlp", "entry_point": "train.py", ...})   # a spec as a dict, checked as a file
    job = orchestrator.submit(plan)       # or submit("job.yaml")
    job = orchestrator.run(spec, backend="local")   # or "sagemaker": the same Job handle for both
    result = orchestrator.run_local(spec, run_dir="runs/x")   # the local run in this call, until it ends
    job = orchestrator.submit(spec, region="eu-west-1")   # another region than the session's (`--region`)
    job = orchestrator.submit(plan, allow_unverified=True)   # past unverified findings (`--allow-unverified`)
    tuning = orchestrator.submit_tuning("search.yaml")   # a tuning spec: the search on SageMaker
    best = tuning.best_job()              # the best trial as a Job, as for a search run here (Tuning.attach)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator.cloud.resolve import plan_on_sagemaker, resolve
from orchestrator.cloud.sdk import refuse_other_region
from orchestrator.errors import SpecError, naming_keywords
from orchestrator.planning.packaging import DEFAULT_MAX_BYTES
from orchestrator.planning.plan import Plan
from orchestrator.specs.loader import LoadedSpec, as_read, from_mapping, load, load_spec
from orchestrator.specs.model import JobSpec
from orchestrator.specs.words import API_WORDS, SPEC_WORDS
from orchestrator.wording import kind_of

if TYPE_CHECKING:  # the job handle and the tuning modules load when a function that returns them runs: planning
    # one job never pays for them (the handle brings the progress and root-cause readers)
    from orchestrator.backends.job import Job
    from orchestrator.backends.tuning import Tuning
    from orchestrator.emulator.local_run import LocalRun, Observer
    from orchestrator.emulator.run_options import Options
    from orchestrator.emulator.tuning.search import SearchResult
    from orchestrator.emulator.tuning.search_options import SearchOptions
    from orchestrator.planning.tuning import TuningPlan
    from orchestrator.specs.loader import LoadedTuning

SpecLike = JobSpec | LoadedSpec | Mapping[str, Any] | str | Path
__all__ = ["Job", "Plan", "Tuning", "TuningPlan", "attach", "build_estimator", "load_spec", "load_tuning", "plan",
           "plan_tuning", "run", "run_local", "submit", "submit_tuning", "tune_local"]
_LAZY_TYPES = {"Job": "orchestrator.backends.job", "Tuning": "orchestrator.backends.tuning",
               "TuningPlan": "orchestrator.planning.tuning"}


def __getattr__(name: str) -> Any:
    """`orchestrator.api.Job`, `.Tuning` and `.TuningPlan`, imported when first asked for."""
    if name not in _LAZY_TYPES:
        raise AttributeError(f"module 'orchestrator.api' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_LAZY_TYPES[name]), name)


@naming_keywords
def plan(spec: SpecLike | Plan, *, job_name: str | None = None, boto: Any | None = None,
         max_source_bytes: int = DEFAULT_MAX_BYTES, region: str | None = None) -> Plan:
    """Plans a job for SageMaker, as `SageMakerBackend.plan` does (one function, `cloud.resolve.plan_on_sagemaker`,
    without the backend's AWS session when none is needed): applies the SageMaker SDK's defaults files, resolves where it goes (spec, environment, SDK
    defaults, infra stack, Studio, the SDK's default bucket), then builds the plan. `region` replaces the spec's,
    as `smtrain plan --region X` does, so it outranks $AWS_REGION and the session's. A plan made for a local
    run, or for another region than `region`, is planned again from its spec, under its job name; a SageMaker plan
    is returned as it is.

    Raises:
        SpecError / CapabilityError: the spec cannot be submitted, or `boto` is a session for another region than
        `region`; EnvironmentProblem: no role or output path, or a broken SDK defaults file.
    """
    refuse_other_region(boto, region, named_by="region=")
    return plan_on_sagemaker(spec if isinstance(spec, Plan) else _loaded(spec), boto, job_name=job_name,
                             max_source_bytes=max_source_bytes, region=region)


def _loaded(spec: SpecLike) -> LoadedSpec:
    """The API's edge: a file is read, a mapping is checked as a file's contents are (each problem with its field
    and fix, as `@orchestrator.remote(spec=...)` takes one; relative paths against the working directory), a
    JobSpec built in Python is wrapped once (one that load_spec returned, with the places it was read at); each
    with fixes in the API's words (`specs/words.py`), as is a LoadedSpec read by `specs.loader.load` (the CLI's
    words), while a function job's keeps its decorator's. Below here every function takes a LoadedSpec (or a
    Plan)."""
    if isinstance(spec, (str, Path)):
        return load(spec).in_words(API_WORDS)
    if isinstance(spec, Mapping):
        return from_mapping(spec, base_dir=Path.cwd()).in_words(API_WORDS)
    if isinstance(spec, JobSpec):  # what load_spec returned keeps its file's lines, as the CLI's spec does
        return (as_read(spec) or LoadedSpec.of(spec)).in_words(API_WORDS)
    if not isinstance(spec, LoadedSpec):  # said here, not as an AttributeError from deep inside planning
        raise SpecError(f"a job is given as a spec file's path, a spec as a dict, what load_spec returned, a JobSpec "
                        f"or a Plan, not {kind_of(spec)}",
                        fix='pass e.g. "job.yaml", {"name": ..., "entry_point": ...}, '
                            'orchestrator.load_spec("job.yaml") or a plan from orchestrator.plan'
                            + (" (a Job that attach found has no plan: its `plan` is None)" if spec is None else ""))
    return spec.in_words(API_WORDS) if spec.field_words == SPEC_WORDS else spec


def _to_run_here(spec_or_plan: Plan | SpecLike, region: str | None, settings: Options) -> Plan | LoadedSpec:
    """What a local run with `settings` is given, in `region` where one is named, as `smtrain local --region X`
    takes it: the region the job sees (its image, its ranks' AWS_REGION and SAGEMAKER_REGION) in place of the
    spec's, and named as the keyword (`region='eu-west-1'`); a plan is then planned again from its spec, under its
    job name, as `submit(plan, region=...)` keeps it."""
    if isinstance(spec_or_plan, Plan):
        if region is None:
            return spec_or_plan
        from orchestrator.emulator.local_plan import local_plan

        return local_plan(spec_or_plan.loaded.in_region(region), settings, job_name=spec_or_plan.job_name)
    loaded = _loaded(spec_or_plan)
    return loaded if region is None else loaded.in_region(region)


def _allowing(job_plan: Plan, allow_unverified: bool) -> Plan:
    """The plan past its unverified findings where the keyword `allow_unverified` asks (`planning/unverified.py`);
    False leaves it to the spec's own `allow_unverified:`, as the command line's absent flag does."""
    return job_plan.allowing_unverified() if allow_unverified else job_plan


@naming_keywords
def submit(spec_or_plan: Plan | SpecLike, *, boto: Any | None = None, job_name: str | None = None,
           region: str | None = None, max_source_bytes: int = DEFAULT_MAX_BYTES, allow_unverified: bool = False) -> Job:
    """Plans as `plan` does (a Plan for SageMaker is sent as it is; a local run's, or one for another region than
    `region`, is planned again), uploads the source once, creates the job once, in the plan's region; returns its
    `Job`, the same handle `run` returns, with `.submission` saying what was sent.

    Whether an unverified combination may be sent is decided here, when it is sent: a plan with unverified findings
    is refused (CapabilityError, nothing sent) unless its spec says `allow_unverified: true` or this call passes
    `allow_unverified=True` (`smtrain submit --allow-unverified`), which sends the same request."""
    from orchestrator.backends.job import Job
    from orchestrator.backends.sagemaker import SageMakerBackend

    job_plan = _allowing(plan(spec_or_plan, job_name=job_name, boto=boto, region=region,
                              max_source_bytes=max_source_bytes), allow_unverified)
    backend = SageMakerBackend(boto, job_plan.target.region)
    return Job(backend, backend.schedule(job_plan), job_plan)


SUBMIT_OPTIONS = ("job_name", "max_source_bytes")
"""`submit`'s keywords that `run(backend="sagemaker")` takes among its options and passes on (`region` and
`allow_unverified` are run's own keywords, and `boto` its session): six parameters leave no room to name them."""


def run(spec_or_plan: Plan | SpecLike, backend: str = "local", *, boto: Any | None = None, region: str | None = None,
        allow_unverified: bool = False, **options: Any) -> Job:
    """Plans the job for `backend` and starts it there; returns its `Job` at once (it runs on).

    Args:
        backend: "local" (this machine, every host emulated: `smtrain local`) or "sagemaker" (`smtrain submit`,
            as `submit` does it).
        region: the job's region, replacing the spec's, as `--region` does on `smtrain submit` and `smtrain
            local` (see `plan`): where a SageMaker job goes; the region a local run's job sees (its image, its
            ranks' `AWS_REGION` and `SAGEMAKER_REGION`). A plan given with it is planned again from its spec,
            under its job name.
        allow_unverified: a SageMaker job is sent past its unverified findings (see `submit`); a local run is
            never refused for them.
        options: a local run's options, by the names `emulator/run_options.py` declares (`smtrain local`'s
            flags: run_dir, inputs, processes_per_host, smoke_seconds, stall_timeout_seconds, ...); a SageMaker
            job's are `submit`'s other keywords, `SUBMIT_OPTIONS` (job_name, max_source_bytes).

    Raises:
        SpecError / CapabilityError / EnvironmentProblem: the spec cannot run there, an option is unknown
            (naming the nearest) or out of range, or a local run's input does not exist or its host order orders
            no hosts of the job; nothing was started. What this machine lacks to run it (mpirun, torch, a working
            python) is raised by the job's `status()`, as the run finds it while it prepares.
    """
    from orchestrator.backends.base import BACKENDS, Backend
    from orchestrator.backends.job import Job

    chosen: Backend
    if backend == "local":
        from orchestrator.backends.local import LocalBackend
        from orchestrator.emulator.run_options import options_from

        settings = options_from(options)
        chosen = LocalBackend(settings)
    elif backend == "sagemaker":
        local_only = [name for name in options if name not in SUBMIT_OPTIONS]
        if local_only:
            raise SpecError(f"a SageMaker job takes no local run options: {', '.join(local_only)}",
                            fix=f'leave them out, or pass backend="local" (a SageMaker job takes submit\'s '
                                f'{", ".join(SUBMIT_OPTIONS)})')
        return submit(spec_or_plan, boto=boto, region=region, allow_unverified=allow_unverified, **options)
    else:
        raise SpecError(f"backend {backend!r} is not one of {', '.join(BACKENDS)}",
                        fix='pass backend="local" or backend="sagemaker"')
    job_plan = chosen.plan(_to_run_here(spec_or_plan, region, settings))
    return Job(chosen, chosen.schedule(job_plan), job_plan)


def run_local(spec_or_plan: Plan | SpecLike, options: Options | Mapping[str, Any] | None = None, *,
              observer: Observer | None = None, region: str | None = None, **keywords: Any) -> LocalRun:
    """Runs the job here in this call, every host emulated, and returns how it ended (`smtrain local`); `run(...,
    backend="local")` starts the same run and returns its `Job` at once. The spec is taken as `run` takes it;
    the options are `run`'s local keywords (`run_local(spec, run_dir="runs/x")`), a dict of them, or an
    `emulator.run_options.Options`; `region` replaces the spec's, as `run`'s does (`smtrain local --region X`).

    The notebook's interrupt (Ctrl-C) stops the job as `smtrain local`'s Ctrl-C does: its ranks get SIGTERM and up
    to 10 s to checkpoint (a second interrupt kills them at once); then the cell ends with that KeyboardInterrupt.

    Raises:
        SpecError: an option unknown or out of range, or options given both as an Options and as keywords; and
            `emulator.local_run.run_local`'s own.
        Interrupted: the interrupt ended the run; its one line says nothing is left running, and where the run is.
    """
    from orchestrator.emulator.local_run import ended_interrupted, run_local as run_here
    from orchestrator.emulator.run_options import Options, options_from

    if isinstance(options, Options) and not keywords:
        chosen = options
    elif options is None or isinstance(options, Mapping):
        chosen = options_from({**(options or {}), **keywords})
    else:
        raise SpecError(f"run_local's options are keywords, a dict of them or an Options, not {kind_of(options)}"
                        + (" and keywords as well" if isinstance(options, Options) else ""),
                        fix='pass e.g. run_local(spec, run_dir="runs/x", processes_per_host=1)')
    ended = run_here(_to_run_here(spec_or_plan, region, chosen), chosen, observer)
    if ended.status == "Interrupted":  # Python's Ctrl-C, the only interruption a run in this call is given
        raise ended_interrupted(ended.job_name, ended.run_dir, "SIGINT")
    return ended


def tune_local(tuning: LoadedTuning | str | Path, options: SearchOptions | None = None,
               on_event: Any | None = None) -> SearchResult:
    """Runs a tuning spec's search here in this call and returns every trial, the best first (`smtrain tune
    local`): a tuning spec's path, or what `load_tuning` returned; `options` an `emulator.tuning.search_options.
    SearchOptions` (parallel, max_jobs, budget_seconds, run_dir, trial); `on_event` is called with each line
    the search says.

    Raises:
        SpecError: `tuning` is no tuning spec's path nor a read one, `options` no SearchOptions; and those of
            `emulator.tuning.search.tune_local`.
    """
    from orchestrator.emulator.tuning.search import tune_local as tune_here
    from orchestrator.emulator.tuning.search_options import SearchOptions
    from orchestrator.specs.loader import LoadedTuning

    if options is not None and not isinstance(options, SearchOptions):
        raise SpecError(f"tune_local's options are a SearchOptions, not {kind_of(options)}",
                        fix="pass orchestrator.emulator.tuning.search_options.SearchOptions(max_jobs=..., "
                            "run_dir=...), or leave options out")
    loaded = tuning if isinstance(tuning, LoadedTuning) else load_tuning(tuning)
    # The search's messages name its options as this caller gives them: run_dir=, not --run-dir.
    loaded = dataclasses.replace(loaded, job=loaded.job.in_words(API_WORDS))
    return tune_here(loaded, options or SearchOptions(), on_event)


def attach(job: str | Path, *, region: str | None = None, boto: Any | None = None,
           backend: str | None = None) -> Job:
    """The `Job` of `local:RUN` (a run directory, or its name under runs/), `sagemaker:NAME`, or a bare name: a
    local run of that name, else a SageMaker job (`backend`: "local" or "sagemaker", as the prefix says).

    Raises:
        SpecError: `job` is no id (a spec, a Job already held, None).
    """
    from orchestrator.backends.job import attach as attach_job

    if not isinstance(job, (str, Path)):
        raise SpecError(f"attach finds a job by its id, not by {kind_of(job)}",
                        fix='pass e.g. "sagemaker:NAME", "local:runs/NAME" or a job\'s name (job.name of a Job '
                            "you hold: it needs no attach)")

    return attach_job(job, region=region, boto=boto, backend=backend)


def build_estimator(spec: SpecLike | Plan, sagemaker_session: Any | None = None, upload_source: bool = True) -> Any:
    """The real SDK v2 `sagemaker.pytorch.PyTorch` for a spec, configured as `plan` shows (needs `smtrain[sdk]`).

    Its `source_dir` is smtrain's content-addressed tarball in S3; with `upload_source` it is uploaded now
    unless already there, so `estimator.fit()` works as usual.
    """
    from orchestrator.cloud.estimator import estimator_for
    from orchestrator.cloud.sdk import boto_session
    from orchestrator.cloud.submission import ensure_source_uploaded

    job_plan = plan(spec)
    if upload_source:
        boto = sagemaker_session.boto_session if sagemaker_session else boto_session(job_plan.target.region)
        ensure_source_uploaded(job_plan, boto)
    return estimator_for(job_plan, sagemaker_session)


def load_tuning(path: str | Path, overrides: str | Iterable[str] = ()) -> LoadedTuning:
    """Reads and checks a tuning spec and the job spec it names (`specs.loader.load_tuning`, `smtrain tune`'s
    reader), `overrides` applied to the job spec as `load_spec` applies them: an error about one names it as given
    here (`overrides=["instance.count=abc"]`), not as the CLI's `--set`."""
    from orchestrator.specs.loader import keyword_overrides
    from orchestrator.specs.loader import load_tuning as read_tuning

    return read_tuning(path, keyword_overrides(overrides))


@naming_keywords
def plan_tuning(spec: LoadedTuning | str | Path, *, job_name: str | None = None, boto: Any | None = None,
                overrides: str | Iterable[str] = (), max_source_bytes: int = DEFAULT_MAX_BYTES,
                region: str | None = None) -> TuningPlan:
    """Plans a tuning job from a tuning spec: where it goes (as `plan`; `region` replaces the job spec's, as
    `--region X` does), then its CreateHyperParameterTuningJob request, whose training definition is the job
    spec's single-job request. `overrides` are `--set`'s `key.path=value` for the job spec: a list, or one string,
    named in errors as given here (see `load_tuning`).

    Raises:
        SpecError / CapabilityError: the specs cannot be submitted, or `boto` is a session for another region
        than `region`; EnvironmentProblem: no role or output path.
    """
    from orchestrator.planning.tuning import build_tuning_plan

    refuse_other_region(boto, region, named_by="region=")
    from orchestrator.specs.loader import LoadedTuning

    if isinstance(spec, LoadedTuning) and overrides:
        # A read tuning spec keeps no text to apply them to: dropping them would plan what the user did not ask.
        raise SpecError("overrides= apply when a tuning spec is read, and this one was read already",
                        fix="pass the tuning spec's path with overrides=, or read it with "
                            "load_tuning(path, overrides)")
    loaded = spec if isinstance(spec, LoadedTuning) else load_tuning(spec, overrides)
    job, target = resolve(loaded.job if region is None else loaded.job.in_region(region), boto)
    return build_tuning_plan(dataclasses.replace(loaded, job=job), target, name=job_name,
                             max_source_bytes=max_source_bytes)


@naming_keywords
def submit_tuning(spec_or_plan: TuningPlan | LoadedTuning | str | Path, *, boto: Any | None = None,
                  job_name: str | None = None, region: str | None = None,
                  max_source_bytes: int = DEFAULT_MAX_BYTES, allow_unverified: bool = False) -> Tuning:
    """Plans as `plan_tuning` does (unless given a TuningPlan), uploads the source once, creates the tuning job once,
    in the plan's region; its handle, the same `Tuning` that `Tuning.attach` gives for a search run on either
    backend. Unverified findings of its job spec are refused here, as `submit` refuses them, unless the spec or
    `allow_unverified=True` (`tune submit --allow-unverified`) allows them.

    Raises:
        SpecError: a TuningPlan made for another region than `region` (plan the tuning spec again with it).
    """
    from orchestrator.backends.tuning import SageMakerTuning, Tuning
    from orchestrator.cloud.tuning import submit_tuning_plan
    from orchestrator.planning.tuning import TuningPlan

    if not isinstance(spec_or_plan, TuningPlan):
        tuning_plan = plan_tuning(spec_or_plan, job_name=job_name, boto=boto, region=region, max_source_bytes=max_source_bytes)
    elif region not in (None, spec_or_plan.job.target.region):
        raise SpecError(f"this tuning plan goes to {spec_or_plan.job.target.region}, not {region}",
                        fix=f'plan it again for {region}: submit_tuning(<the tuning spec>, region="{region}")')
    else:
        tuning_plan = spec_or_plan
    tuning_plan = dataclasses.replace(tuning_plan, job=_allowing(tuning_plan.job, allow_unverified))
    created = submit_tuning_plan(tuning_plan, boto=boto)
    return Tuning(SageMakerTuning(created.boto), created.name, created.plan)
