"""The job spec `smtrain init` writes for a folder's own script: commented YAML to read as a first spec, each value
from what the script reads (source_survey.py) or from smtrain's own tables (the newest image AWS patches, an
instance the mode runs on). What only `submit` needs, the role and the output path, is left out as commented
placeholders: `smtrain plan` names each with the way to set it, and `validate` passes the spec as written."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from orchestrator.contract import REQUIREMENTS_FILE
from orchestrator.planning.framework_reading import FrameworkReading, MetricDefinition, unshipped
from orchestrator.planning.packaging import IGNORE_FILE, left_out_of_package
from orchestrator.planning.script_reading import ScriptOption, ScriptReading
from orchestrator.planning.source_survey import MAX_FILES_LISTED, SourceSurvey
from orchestrator.specs.catalog import catalog, family_of, lookup
from orchestrator.specs.model import MAX_BASE_NAME_LENGTH, api_limit, job_name_like
from orchestrator.specs.modes import Mode, launching_mode

PLACEHOLDER_BUCKET = "your-bucket"
"""The bucket of the `inputs` placeholders: a name S3 allows, so `validate` passes, and plainly not yours."""
LOCAL_DATA = "data"
"""Where `local_inputs` points, beside the spec: `data/<channel>`."""
_CPU = ("ml.c5.2xlarge", "a CPU host: no use of CUDA was found in the script")
_LIGHTNING_ON_CPU = 'Lightning\'s Trainer(accelerator="cpu")'
_LIGHTNING_CPU = (_CPU[0], f"a CPU host: {_LIGHTNING_ON_CPU} trains on CPUs, where a GPU would sit idle")
_ONE_GPU = ("ml.g5.xlarge", "one GPU: the script (or its trainer) uses CUDA, and runs once per host")
_GPUS = ("ml.g5.12xlarge", "4 GPUs: the launcher starts one process per GPU")
_GPU_FAMILY = "g5"
"""The family whose instances `init` picks for a GPU count a script asks for, as for its other GPU suggestions."""
_COMMENT_COLUMN = 36
MAX_HYPERPARAMETERS = 64
"""The script's first options written, within SageMaker's 100 hyperparameters, some of which the SDK's own keys
take."""
_GENERIC_FOLDERS = frozenset({"src", "source", "code", "scripts", "training", "train", "app"})


@dataclass(frozen=True)
class Choices:
    """What the command line chose instead of what the script suggests."""

    mode: str | None = None
    instance_type: str | None = None


@dataclass(frozen=True)
class StartingSpec:
    """The spec's text, the local input folders it names (to exist for `validate`), the `.smtrainignore` lines that
    keep those inside source_dir out of the package, and what was found, to say."""

    text: str
    local_folders: tuple[Path, ...]
    findings: tuple[str, ...]
    ignore_file: Path
    unshipped: tuple[str, ...] = ()


def starting_spec(survey: SourceSurvey, spec_file: Path, choices: Choices) -> StartingSpec:
    """The commented spec for `survey`'s script, to be written at `spec_file` (relative paths are from its
    folder)."""
    reading = survey.reading
    framework = reading.frameworks
    mode = Mode(choices.mode) if choices.mode else launching_mode(reading.torchrun or bool(framework.launcher),
                                                                  reading.mpi)
    instance_type, instance_why = _instance(mode, reading, choices.instance_type)
    hosts = framework.nodes or 1
    image = _newest_image(mode, instance_type, survey.directory)
    name = _job_name(survey.directory)
    channels = (reading.channels or (("train",) if reading.reads_all_channels else ()))[:api_limit("InputDataConfig",
                                                                                                  "max")]
    chosen = _hyperparameters(reading)
    findings = _findings(survey, mode, bool(choices.mode), chosen)
    findings += _framework_findings(survey, image.version)
    findings += _device_findings(framework, mode, instance_type)
    lines = [
        f"# Written by `smtrain init` from {survey.entry_point}: a start to read and change (every field: "
        "docs/specs.md).",
        "# Check it: smtrain validate; see what submit sends: smtrain plan; run it here: smtrain local.",
        _field("name", name, "the base job name; submit appends a timestamp"),
        _field("entry_point", survey.entry_point, "relative to source_dir"),
        _field("source_dir", _relative(survey.directory, spec_file.parent), "relative to this file; shipped "
               "without .git, caches or secrets"),
        _field("framework_version", image.version, image.comment),
        _commented("instance:", f"{instance_why} (`smtrain instances`)"),
        f"  type: {instance_type}",
        _commented(f"  count: {hosts}", f"Lightning's Trainer(num_nodes={hosts})" if framework.nodes else
                   "more hosts: raise it (every host runs the same script)"),
        _commented(f"distribution: {{mode: {mode.value}}}", _launch_reason(framework, mode, bool(choices.mode))),
        *_hyperparameter_lines(chosen, survey.entry_point),
        *_channel_lines(channels, name),
        *_metric_lines(reading),
        "# Before `smtrain submit` (`smtrain plan` says what is missing and how to set it):",
        "# role: arn:aws:iam::<account>:role/<execution-role>   # or $SMTRAIN_ROLE, or `smtrain infra deploy`",
        "# output_path: s3://<bucket>/<prefix>/                  # default: the SDK's sagemaker-<region>-<account>",
    ]
    folders = tuple(spec_file.parent / LOCAL_DATA / channel for channel in channels)
    return StartingSpec("\n".join(lines) + "\n", folders, tuple(findings), ignore_file=survey.directory / IGNORE_FILE,
                        unshipped=_unshipped(folders, survey.directory))


def _unshipped(folders: tuple[Path, ...], directory: Path) -> tuple[str, ...]:
    """`.smtrainignore` lines for the local data folders inside source_dir (`smtrain init .`) that packing would
    ship: a sample for `smtrain local` is no code, to upload with every job."""
    source = directory.resolve()
    left_out = left_out_of_package(source)
    inside = [folder.resolve() for folder in folders if folder.resolve().is_relative_to(source)]
    return tuple(f"/{folder.relative_to(source).as_posix()}/" for folder in inside if not left_out(folder))


def _instance(mode: Mode, reading: ScriptReading, chosen: str | None) -> tuple[str, str]:
    if chosen:
        return chosen, "--instance-type"
    devices = reading.frameworks.devices
    starts_on_family = family_of(mode.rules.starting_instance or "") == _GPU_FAMILY  # torchrun's, not SMDDP's p4d
    if devices and mode.rules.assigns_ranks and starts_on_family and (fitting := _with_gpus(devices)):
        return fitting, (f"{devices} GPU{'s' if devices > 1 else ''}: Lightning's Trainer(devices={devices}), and "
                         "torchrun starts one process per GPU")
    if mode.rules.starting_instance:
        return mode.rules.starting_instance, f"{mode.value} runs on GPUs, a process per GPU"
    if reading.frameworks.on_cpu:
        return _LIGHTNING_CPU
    if not reading.uses_gpu:
        return _CPU
    return _GPUS if mode.rules.assigns_ranks else _ONE_GPU


def _with_gpus(count: int) -> str | None:
    """The cheapest instance of the family init suggests with exactly `count` GPUs, or None where none has."""
    fitting = [instance for instance in catalog().instances.values()
               if family_of(instance.name) == _GPU_FAMILY and instance.gpus == count]
    return min(fitting, key=lambda instance: instance.price_per_hour or 0).name if fitting else None


def _device_findings(framework: FrameworkReading, mode: Mode, instance_type: str) -> list[str]:
    """A Lightning Trainer's literal devices=N that the launcher's process count on the instance does not meet:
    Lightning stops at its start (the world size is not devices x num_nodes). A Lightning Trainer on CPUs over
    several hosts, where no launcher tells each host its place."""
    if framework.on_cpu and framework.nodes and framework.nodes > 1 and not mode.rules.assigns_ranks:
        return [f"WARNING: {_LIGHTNING_ON_CPU} with num_nodes={framework.nodes} joins its hosts through MASTER_ADDR "
                f"and NODE_RANK, which mode {mode.value} does not set: every host takes itself for the first and "
                "waits for the others at 127.0.0.1 until the job's time runs out. Set them in the script before the "
                "Trainer is built (MASTER_ADDR: json.loads(SM_HOSTS)[0]; NODE_RANK: the index of SM_CURRENT_HOST "
                "in it; MASTER_PORT: e.g. 29500), or train on one host (num_nodes=1)"]
    devices = framework.devices
    if not (devices and mode.rules.assigns_ranks):
        return []
    started = lookup(instance_type).devices_per_host
    if started == devices:
        return [f"devices: Lightning's Trainer(devices={devices}), {instance_type}'s {started} GPU"
                f"{'s' if started > 1 else ''}, one process each"]
    fitting = _with_gpus(devices)
    other = (f", or run it on {fitting} (--instance-type {fitting})" if fitting else
             f"; no {_GPU_FAMILY} instance has {devices} GPUs")
    return [f"WARNING: Lightning's Trainer(devices={devices}) expects {devices} process{'es' if devices > 1 else ''} "
            f"per host, and {mode.rules.launcher} starts {started} on {instance_type} (one per GPU): Lightning stops "
            f"at its start (the world size is not devices x num_nodes). Write devices=\"auto\" (one per GPU)"
            f"{other}"]


def _launch_reason(framework: FrameworkReading, mode: Mode, mode_chosen: bool) -> str:
    """Why the spec's mode starts the script so: the framework that wants it, or how the mode starts it."""
    if mode_chosen:
        return _launched(mode)
    if framework.launcher:
        return framework.launch_reason
    if framework.on_cpu and not mode.rules.assigns_ranks:
        return (f"{_LIGHTNING_ON_CPU}: once per host, Lightning starting its devices' processes itself (torchrun's "
                "mode runs on GPUs only)")
    return _launched(mode)


def _launched(mode: Mode) -> str:
    if mode.rules.assigns_ranks:
        return f"{mode.rules.launcher} starts the script and gives each process its rank"
    return "the script runs once per host; its rank: SM_CURRENT_HOST's index in SM_HOSTS"


@dataclass(frozen=True)
class _Image:
    version: str
    patched: bool
    """AWS still patches it; False where the mode runs on none that it patches (the SMDDP modes)."""

    @property
    def comment(self) -> str:
        if self.patched:
            return "the newest PyTorch image AWS patches (`smtrain images`)"
        return "the newest image this mode and instance run on; AWS no longer patches it (`smtrain images`)"


def _newest_image(mode: Mode, instance_type: str, source_dir: Path) -> _Image:
    """The newest framework version of smtrain's table, with the toolkits and verified, that the capability rules
    let `mode` run on `instance_type` (the SMDDP modes only on images with SMDDP), one AWS still patches first;
    where the rules refuse every one, the one they refuse least, and where the model refuses the instance itself,
    the newest (`validate` then says why)."""
    from pydantic import ValidationError

    from orchestrator.specs.capabilities import check
    from orchestrator.specs.images import versions
    from orchestrator.specs.model import JobSpec

    def refusals(version: str) -> int:
        trial = JobSpec.model_validate({"name": "init", "entry_point": "train.py", "source_dir": str(source_dir),
                                        "framework_version": version, "instance": {"type": instance_type},
                                        "distribution": {"mode": mode.value}})
        return sum(finding.severity == "error" for finding in check(trial))

    usable = [image for image in reversed(versions().values()) if image.toolkit and not image.unverified]
    patched = [image for image in usable if image.eop is not None and image.eop >= date.today()]
    candidates = [*patched, *(image for image in usable if image not in patched)]
    try:
        chosen = min(candidates, key=lambda image: refusals(image.version))
    except ValidationError:
        chosen = candidates[0]
    return _Image(chosen.version, patched=chosen in patched)


def _job_name(directory: Path) -> str:
    """The folder's name, or its parent's where the folder's says nothing of the job (`myproject/src`)."""
    folder = directory.resolve()
    named = folder.parent if folder.name.lower() in _GENERIC_FOLDERS and folder.parent.name else folder
    return job_name_like(named.name)[:MAX_BASE_NAME_LENGTH].strip("-") or "my-job"


def _relative(directory: Path, base: Path) -> str:
    return Path(os.path.relpath(directory.resolve(), base.resolve())).as_posix()


def _field(key: str, value: Any, comment: str) -> str:
    return _commented(f"{key}: {_yaml(value)}", comment)


def _commented(line: str, comment: str) -> str:
    return f"{line.ljust(_COMMENT_COLUMN - 1)} # {comment}"


def _yaml(value: Any) -> str:
    """One value as YAML 1.1 reads back the same (`"2.13.0"` quoted as the spec wants versions, `1.0e-05` a number,
    `'yes'` text)."""
    import yaml

    if isinstance(value, str) and value.replace(".", "").isdigit():
        return json.dumps(value)
    text = yaml.safe_dump(value, default_flow_style=True, width=1 << 20, allow_unicode=True)
    text = text.removesuffix("\n").removesuffix("\n...")
    return text if "\n" not in text else json.dumps(value)


@dataclass(frozen=True)
class _Hyperparameters:
    """The script's options as the spec takes them: written, and left out with the reason (the script's, or the
    spec model's refusal)."""

    taken: tuple[ScriptOption, ...]
    left_out: tuple[ScriptOption, ...]


def _hyperparameters(reading: ScriptReading) -> _Hyperparameters:
    taken: list[ScriptOption] = []
    left_out = [option for option in reading.options if option.left_out is not None]
    for option in (option for option in reading.options if option.left_out is None):
        refusal = "more options than SageMaker takes" if len(taken) >= MAX_HYPERPARAMETERS else _refusal(option)
        if refusal:
            left_out.append(ScriptOption(option.name, left_out=refusal))
        else:
            taken.append(option)
    return _Hyperparameters(tuple(taken), tuple(left_out))


def _hyperparameter_lines(chosen: _Hyperparameters, entry_point: str) -> list[str]:
    if not (chosen.taken or chosen.left_out):
        return []
    lines = [_commented("hyperparameters:" if chosen.taken else "# hyperparameters:",
                        f"{entry_point}'s argparse defaults; SageMaker passes each as --name value")]
    lines += [f"  {_yaml(option.name)}: {_yaml(option.default)}" for option in chosen.taken]
    lines += [f"  # --{_one_line(option.name)} left out: {option.left_out}" for option in chosen.left_out]
    return lines


def _refusal(option: ScriptOption) -> str | None:
    """Why the spec's model refuses `option` as a hyperparameter (a name with `=`, a value over SageMaker's
    length), or None."""
    from pydantic import TypeAdapter, ValidationError

    from orchestrator.specs.model import HyperparameterEntry, HyperparameterName

    try:
        TypeAdapter(dict[HyperparameterName, HyperparameterEntry]).validate_python({option.name: option.default})
    except ValidationError as error:
        return _one_line(error.errors()[0]["msg"])
    return None


def _one_line(text: str) -> str:
    """`text` as one line of a YAML comment: a script's newline or control character cannot start a key."""
    return json.dumps(text, ensure_ascii=False)[1:-1]


def _channel_lines(channels: tuple[str, ...], name: str) -> list[str]:
    if not channels:
        return []
    return [
        _commented("inputs:", "REPLACE: your data's S3 prefixes; each is at $SM_CHANNEL_<NAME>"),
        *(f"  {channel}: s3://{PLACEHOLDER_BUCKET}/{name}/{channel}/" for channel in channels),
        _commented("local_inputs:", "what `smtrain local` copies there instead (from this file)"),
        *(f"  {channel}: {LOCAL_DATA}/{channel}" for channel in channels),
    ]


def _metric_definitions(reading: ScriptReading) -> list[MetricDefinition]:
    """The Trainer's log dicts' metrics where it trains with one, then what the script prints itself, one per
    name."""
    printed = [MetricDefinition(metric.name, metric.regex) for metric in reading.metrics]
    found: dict[str, MetricDefinition] = {}
    for metric in (*reading.frameworks.metric_definitions, *printed):
        found.setdefault(metric.name.lower(), metric)
    return list(found.values())[:api_limit("AlgorithmSpecification.MetricDefinitions", "max")]


def _metric_lines(reading: ScriptReading) -> list[str]:
    metrics = _metric_definitions(reading)
    if not metrics:
        return []
    said = "the Trainer's log dicts and what the script prints" if reading.frameworks.trainer_logs else \
        "what the script prints"
    return [_commented("metrics:", f"{said}, as SageMaker reads its log (RE2)"),
            *(line for metric in metrics
              for line in (f"  - name: {_yaml(metric.name)}", f"    regex: {_single_quoted(metric.regex)}"))]


def _single_quoted(text: str) -> str:
    """`text` as YAML's single-quoted scalar, backslashes as written (a regex's `\\b`), a quote doubled."""
    return "'" + text.replace("'", "''") + "'"


def _findings(survey: SourceSurvey, mode: Mode, mode_chosen: bool, chosen: _Hyperparameters) -> list[str]:
    reading, script = survey.reading, survey.entry_point
    found = [f"entry point: {script}"]
    if survey.imported_modules:
        found.append(f"read with it: {', '.join(survey.imported_modules)} (the folder's own modules it imports: "
                     "their framework use, channels, launcher variables, CUDA use and metrics, and the options of "
                     "those whose parser it calls)")
    if not survey.readable:
        found.append(f"{script} was not read (not text, over 1 MiB, or no regular file): nothing was taken from it")
    elif not reading.parsed and not reading.ipython:
        found.append(f"{script} does not parse as Python here (line {reading.unparsed_line}): read by patterns, "
                     "check what follows")
    found += _stops_at_start(reading, script)
    if reading.channels or reading.reads_all_channels:
        found.append(f"channels: {', '.join(reading.channels) or 'train (it reads SM_CHANNELS)'}")
    launched = "--mode" if mode_chosen else (reading.frameworks.launch_reason if reading.frameworks.launcher
                                             else "it reads RANK/LOCAL_RANK/WORLD_SIZE" if reading.torchrun
                                             else "it uses MPI" if reading.mpi
                                             else _LIGHTNING_ON_CPU if reading.frameworks.on_cpu
                                             else "no launcher variables read")
    found.append(f"distribution: mode {mode.value} ({launched})")
    if chosen.taken:
        found.append(f"hyperparameters: {', '.join(option.name for option in chosen.taken)} (argparse defaults)")
    found += [f"left out: --{option.name}: {option.left_out}" for option in chosen.left_out]
    if reading.dataclass_options:
        found.append("options: HfArgumentParser's dataclass fields are not read, so none was written: add those to "
                     "change under hyperparameters (`num_train_epochs: 3` reaches it as --num_train_epochs 3)")
    if metrics := _metric_definitions(reading):
        found.append(f"metrics: {', '.join(metric.name for metric in metrics)}")
    if survey.requirements:
        found.append(f"{REQUIREMENTS_FILE}: installed before the script starts, locally as on SageMaker")
    if not survey.listed_all:
        found.append(f"the folder ships more than {MAX_FILES_LISTED} files and folders: the script was looked for "
                     "among the first (`.smtrainignore` leaves out data and outputs)")
    return found


def _stops_at_start(reading: ScriptReading, script: str) -> list[str]:
    """What makes the script stop before it trains, run as SageMaker runs it (`python SCRIPT --name value ...`)."""
    stops = []
    if reading.ipython:
        stops.append(f"WARNING: {script} holds notebook lines (`!pip ...`, `%magic`; the first at line "
                     f"{reading.unparsed_line}) that Python refuses: it stops there, locally and on SageMaker. "
                     f"Remove them (what `!pip install` installs goes in {REQUIREMENTS_FILE}); the rest was read by "
                     "patterns")
    if reading.positionals:
        stops.append(f"WARNING: {script} requires the positional argument(s) {', '.join(reading.positionals)}, "
                     "which SageMaker cannot pass (it passes --name value only): it stops at its start; make each "
                     "an option with a default")
    if reading.needs_subcommand:
        stops.append(f"WARNING: {script} starts LightningCLI, which expects a subcommand (`fit`) before its options, "
                     "and SageMaker passes options only: it stops at its start. Construct it with run=False and "
                     "call cli.trainer.fit(cli.model, datamodule=cli.datamodule); its options are then "
                     "hyperparameters such as `trainer.max_epochs: 3`")
    return stops


def _framework_findings(survey: SourceSurvey, framework_version: str) -> list[str]:
    """The frameworks the image would lack, at the line of the script (or its module) that imports each, and the
    DeepSpeed configs the script names that would not ship with it."""
    script, frameworks = survey.entry_point, survey.reading.frameworks
    found = []
    for missing in unshipped(frameworks.imports, survey.required, framework_version):
        where = (f"{REQUIREMENTS_FILE} does not name it: add a line `{missing.distribution}` to it"
                 if survey.requirements
                 else f"there is no {REQUIREMENTS_FILE}: create one at the top of {survey.directory} holding "
                      f"`{missing.distribution}`")
        found.append(f"WARNING: {missing.path}:{missing.line} uses {missing.module}, which the PyTorch "
                     f"{framework_version} image does not ship, and {where} (the toolkit installs it before the "
                     "script starts, locally as on SageMaker); without it the script stops at that import")
    for config in frameworks.deepspeed_configs:
        if not config.endswith(".json") or config.startswith("/"):
            continue
        if (survey.directory / config).is_file():
            found.append(f"DeepSpeed config: {config}, shipped with the code (read from /opt/ml/code)")
        else:
            found.append(f"WARNING: {script} names the DeepSpeed config {config}, which is not in {survey.directory}: "
                         "it is read from the code folder, so the job stops there; put the file in the source "
                         "folder (or name one that is)")
    return found
