"""Which backend a job a user names belongs to: the one resolver of `orchestrator.attach` and every CLI verb.

A job id names its backend: `local:<run name or directory>` or `sagemaker:<job name>`; `--backend` says the same
for a bare name. A bare name is resolved without asking AWS where it can be: a run directory, or the name of a run
under runs/, is local (a SageMaker name holds no `/`, and a user who has a local run of that name means it), and
so is a path that names none (the runs near it are named); any other name is SageMaker's, checked as a job name
first. Only when the user points at SageMaker as well, with an
explicit region, is SageMaker asked whether it has a job of a local run's name too: then the name is ambiguous,
and the error names both ids to choose from.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from orchestrator.backends.base import BACKENDS, Backend
from orchestrator.backends.runs import RUNS_ROOT, find_run, is_directory, near_runs, relative_to_cwd
from orchestrator.errors import EnvironmentProblem, SmtrainError
from orchestrator.observing.job_status import JobNotFound
from orchestrator.planning.job_name import check_job_name


class AmbiguousJob(SmtrainError):
    """A bare name that is both a local run and a SageMaker job: bad input (exit 2), the fix names both ids."""


def split_job_id(job: str, backend: str | None) -> tuple[str | None, str]:
    """(`local`, `sagemaker` or None for a bare name; the backend's own id) from `local:RUN` / `sagemaker:NAME` and
    `--backend`; an id and a `--backend` that disagree are bad input."""
    prefix, colon, rest = job.partition(":")
    named = prefix if colon and prefix in BACKENDS else None
    if backend is not None and backend not in BACKENDS:
        raise SmtrainError(f"backend {backend!r} is not one of {', '.join(BACKENDS)}",
                           fix="pass --backend=local or --backend=sagemaker")
    if named and backend and named != backend:
        raise SmtrainError(f"{job} names the {named} backend, but --backend says {backend}",
                           fix=f"drop --backend, or give the bare name {rest}")
    return named or backend, rest if named else job


def place_of(typed: str, backend: str | None, region: str | None, *, find_local: Callable[[str], Path | None],
             on_sagemaker: Callable[[str], bool], nouns: tuple[str, str]) -> tuple[str | None, str, Path | None]:
    """The rules every id a user types is read by, jobs' and searches' alike: (the place its prefix or `--backend`
    names, or None for a bare name; the backend's own id; the local folder found for it, if any). A bare name
    whose local folder exists is local, unless `region` is given and SageMaker has one of that name too
    (`on_sagemaker`): then it is ambiguous, and the error names both ids. `nouns`: what a local and a SageMaker
    one are called ("local run", "SageMaker job")."""
    chosen, name = split_job_id(typed, backend)
    folder = find_local(name) if chosen != "sagemaker" and name else None
    if folder is not None and chosen is None and region is not None and on_sagemaker(name):
        raise AmbiguousJob(f"{name} is both a {nouns[0]} ({relative_to_cwd(folder)}) and a {nouns[1]} in {region}",
                           fix=f"say which: local:{name} or sagemaker:{name} (or --backend=local, --backend=sagemaker)")
    return chosen, name, folder


def resolve_job(job: str, backend: str | None = None, region: str | None = None,
                boto: Any | None = None) -> tuple[Backend, str]:
    """(the backend, its id of the job) for what a user typed (`job`, `--backend`, `--region`; `boto`: a session
    that replaces boto3's chain, as the tests give one).

    Raises:
        JobNotFound: `local:` names no run; AmbiguousJob: a bare local run's name is a SageMaker job's too (asked
        only with `region` given); SmtrainError: a name SageMaker could not hold, no region, no credentials (for
        a bare name, the error says first that it is no local run and names the near runs); SpecError: `boto` is a
        session for another region than `region`.
    """
    from orchestrator.cloud.sdk import refuse_other_region

    refuse_other_region(boto, region, named_by="region=")
    chosen, name, run_dir = place_of(job, backend, region, find_local=find_run,
                                     on_sagemaker=lambda name: _sagemaker_has(name, boto, region),
                                     nouns=("local run", "SageMaker job"))
    if run_dir is not None:
        return _local(), str(run_dir)
    if chosen == "local":
        return _local(), str(_local_run_dir(name))
    if chosen is None and "/" in name and is_directory(Path(name)):  # a folder, not a run: what it holds is read
        return _local(), name
    if chosen is None and _names_a_path(name):  # no SageMaker job name could be meant: only the runs near it
        return _local(), str(_local_run_dir(name))
    return _sagemaker(name, boto, region, bare=chosen is None), name


def _names_a_path(name: str) -> bool:
    """A path a user typed (`runs/my-job`, `./my-job`, `~/runs/x`): SageMaker's job names hold no separator and
    start with a letter or digit, so its name rules would be noise in the answer."""
    return "/" in name or os.sep in name or name.startswith((".", "~"))


def _sagemaker_has(name: str, boto: Any | None, region: str) -> bool:
    """Whether SageMaker in `region` has a job called `name` (a name it could not hold, or no answer: no)."""
    from orchestrator.backends.sagemaker import SageMakerBackend

    try:
        check_job_name(name)
        SageMakerBackend(boto, region).describe(name)
    except SmtrainError:
        return False
    return True


def _local_run_dir(name: str) -> Path:
    """The run directory `local:NAME` means: a run directory, or runs/NAME/; else the near runs are named (a
    folder `smtrain local` did not make, such as the source dir of the same name, is no run)."""
    run_dir = find_run(name)
    if run_dir is not None:
        return run_dir
    near = near_runs(name)
    hint = f"did you mean {', '.join(str(relative_to_cwd(path)) for path in near)}?" if near else (
        "give the run directory's path, as `smtrain local` printed it (local:DIR/RUN: runs/ is read in the "
        "current folder); `smtrain list --local --runs DIR` lists the runs in DIR")
    where = "no run directory there" if _names_a_path(name) else f"no run directory, nor runs/{name}/"
    raise JobNotFound(f"{name} is no local run ({where})", fix=hint)


def _local() -> Backend:
    from orchestrator.backends.local import LocalBackend

    return LocalBackend()


def _sagemaker(name: str, boto: Any | None, region: str | None, bare: bool) -> Backend:
    """SageMaker's backend for job `name`; for a bare name (no local run has it), an error on the way (a malformed
    name, no such job) says first that it is no local run, naming the near ones, and where this machine cannot ask
    SageMaker at all (no region, no credentials) the error is that and how to ask it."""
    from orchestrator.backends.sagemaker import SageMakerBackend

    near = near_runs(name) if bare else []
    with naming_local_runs(name, near, bare):
        check_job_name(name)  # neither a run directory nor a name SageMaker could have: nothing is sent
        chosen = SageMakerBackend(boto, region)
    if bare and (asking := _how_to_ask_sagemaker(name, chosen.boto)):
        raise _not_asked(name, near, asking)
    with naming_local_runs(name, near, bare):
        if near:  # an unknown name fails here, while the near runs can still be named
            chosen.describe(name)
    return chosen


def _how_to_ask_sagemaker(name: str, session: Any) -> str | None:
    """What a bare name's lookup on SageMaker lacks here, as what to do (None: it can ask). An offline machine
    lacks both; the region is told first, as boto3 asks for it first."""
    if session.region_name is None:
        return f"name its region: sagemaker:{name} --region <region> (or set AWS_REGION)"
    if session.get_credentials() is None:
        return f"sign in first (`aws configure` or `aws sso login`, or set AWS_PROFILE), then give sagemaker:{name}"
    return None


def _not_asked(name: str, near: list[Path], asking: str) -> EnvironmentProblem:
    """A bare name no local run has, where SageMaker could not be asked: the local runs it is near (the likelier
    meaning, offline), or where runs elsewhere are found, then how to look on SageMaker; not why AWS refused, which
    a user who meant a local run has no use for."""
    shown = ", ".join(str(relative_to_cwd(path)) for path in near)
    local = f"did you mean {shown}?" if near else f"no run directory, nor runs/{name}/"
    runs = (f"give the run, e.g. local:{shown.split(', ')[0]}" if near else
            "for a run elsewhere, give its directory as `smtrain local` printed it (`smtrain list --local --runs DIR` "
            "lists the runs in DIR)")
    return EnvironmentProblem(f"{name} is no local run ({local}), and SageMaker was not asked",
                              fix=f"{runs}; for a SageMaker job, {asking}")


@contextlib.contextmanager
def naming_local_runs(name: str, near: list[Path], bare: bool) -> Iterator[None]:
    """Where SageMaker cannot answer for a bare NAME, which is no local run, the error says so first (a user who
    meant a run learns that none has the name), naming the local runs NAME is near to."""
    try:
        yield
    except SmtrainError as error:
        if not bare:
            raise
        shown = ", ".join(str(relative_to_cwd(path)) for path in near)
        local = f"; did you mean {shown}?" if near else f" (no run directory, nor runs/{name}/)."
        error.message = f"{name} is no local run{local} Nor could SageMaker answer for it: {error.message}"
        if near:  # the run is the likelier meaning: its id comes first in the fix
            error.fix = f"give the run, e.g. local:{shown.split(', ')[0]}; for a SageMaker job: {error.fix}"
        error.args = (error.message,)
        raise


def backend_for(name: str | None, region: str | None = None, boto: Any | None = None,
                say: Callable[[str], None] | None = None, runs_root: Path | None = None) -> Backend:
    """The backend called `name` (None: SageMaker), to schedule on or to list: `submit`, `list` (a local one lists
    the runs `runs_root` holds, or the run it is; None: runs/)."""
    chosen, _ = split_job_id("", name)
    if chosen == "local":
        from orchestrator.backends.local import LocalBackend

        return LocalBackend(runs_root=runs_root or RUNS_ROOT)
    from orchestrator.backends.sagemaker import SageMakerBackend

    return SageMakerBackend(boto, region, say)
