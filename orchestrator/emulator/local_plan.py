"""The plan of a local run: the same `build_plan` call submit's plan makes, for this machine's target.

Planning happens here, before preparation and outside it (`run_local` and the local backend plan, then
`preparing.prepared_run.prepare_run` reads the plan): `local_target` puts file:// stand-ins for S3 inside the
run directory and a placeholder role where submit puts S3 and the execution role.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from orchestrator.emulator.preparing import layout as run_layout
from orchestrator.emulator.preparing.prepared_run import run_dir_for
from orchestrator.emulator.run_options import Options
from orchestrator.planning.job_name import timestamped_job_name
from orchestrator.planning.plan import Plan, build_plan
from orchestrator.planning.target import Target
from orchestrator.specs.loader import LoadedSpec
from orchestrator.specs.model import Channel, JobSpec
from orchestrator.specs.path_names import require_path_name
from orchestrator.specs.words import FieldWords

# The role a local plan names: nothing is sent, the request only needs one.
LOCAL_ROLE = "arn:aws:iam::000000000000:role/smtrain-local"


def local_target(spec: JobSpec, run_dir: Path) -> Target:
    """Where a local run "goes": the region a submit would use (the one chain both executors share:
    `cloud.resolve.resolve_region`, i.e. the spec, $AWS_REGION, then boto3's chain with the profile's region,
    else the fallback), and file:// stand-ins inside the run directory for the output path and the code prefix."""
    from orchestrator.cloud.resolve import resolve_region

    region, fallback = resolve_region(spec)
    return Target(region=region, role=LOCAL_ROLE, output_path=f"file://{run_dir}/",
                  code_location=f"file://{run_dir}/{run_layout.SOURCE_DIR}", region_is_fallback=fallback)


def local_plan(source: Plan | LoadedSpec, settings: Options, *, job_name: str | None = None) -> Plan:
    """The plan of a local run: the same `build_plan` call submit's plan makes, for this machine's target.

    A plan made for SageMaker is planned again for the local target under the same job name (its request names
    S3 and a real role, which a local run replaces with file:// stand-ins and a placeholder). A spec is planned
    under `job_name` where one is given (a plan's that the API moved to another region: `region=` keeps the name,
    as it does for SageMaker), else its name plus a timestamp.
    """
    if isinstance(source, Plan):
        run_dir = run_dir_for(settings, source.job_name)
        if source.target == local_target(source.spec, run_dir) and not settings.inputs:
            return source
        loaded = source.loaded
        job_name = source.job_name
    else:
        loaded = source
        job_name = job_name or timestamped_job_name(source.spec.name)
    loaded = dataclasses.replace(loaded, spec=_with_inputs(loaded.spec, settings.inputs, loaded.field_words))
    return build_plan(loaded, local_target(loaded.spec, run_dir_for(settings, job_name)), job_name=job_name,
                      local_inputs=True)


def _with_inputs(spec: JobSpec, overrides: dict[str, Path], words: FieldWords) -> JobSpec:
    """The spec with its `local_inputs`, then the run's `inputs` (`--input NAME=PATH`), in place of (or added to)
    its channels."""
    if not overrides and not spec.local_inputs:
        return spec
    for name in overrides:  # `--input NAME=PATH` bypasses the spec's validation: NAME becomes input/data/NAME
        require_path_name(words.option(Options, "inputs", ("NAME", "PATH")), name)
    locations = {**spec.local_inputs, **{name: str(Path(path).resolve()) for name, path in overrides.items()}}
    inputs = {**spec.inputs, **{name: spec.inputs[name].model_copy(update={"uri": location}) if name in spec.inputs
                                else Channel(uri=location) for name, location in locations.items()}}
    return spec.model_copy(update={"inputs": inputs})
