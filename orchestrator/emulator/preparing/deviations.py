"""What `smtrain local` does differently from SageMaker's training container, and why: the one list.

A run points to it once at its start (`notices`, naming the options as its user gives them) and `smtrain local
--explain` prints it; docs/local.md shows the same text. Everything else a script can observe (config files, SM_*
variables, launcher command lines, rank placement, host names, failure files) follows the container and is checked
against the training toolkit itself by `tests/referees/toolkit`.
"""

from __future__ import annotations

from typing import Any

from orchestrator.emulator.run_options import Options
from orchestrator.specs.words import SPEC_WORDS, FieldWords


def deviations(words: FieldWords) -> tuple[str, ...]:
    """The list, naming `smtrain local`'s options as the run's user gives them: `--processes-per-host` on the
    command line, `processes_per_host=` from Python."""
    return (
        ("every host algo-N is at 127.0.0.1 (each host's /etc/hosts names them; without mount namespaces they do not "
         "resolve): MASTER_ADDR and SMDATAPARALLEL_SERVER_ADDR are 127.0.0.1 and rendezvous ports are free ports "
         "outside the kernel's ephemeral range instead of 7777, so runs can share this machine (SM_HOSTS, the config "
         "files and gethostname() keep algo-N)"),
        ("/opt/ml is each host's folder under the run directory: every process of a host sees it at /opt/ml (a mount "
         "namespace of its own), and the SM_* paths, the working directory and PYTHONPATH name /opt/ml as on "
         "SageMaker; HOME is /root, the host's container-paths/<host>/root (with what the processes need of this "
         "machine's /root, such as an interpreter under ~/.pyenv, bound back into it), and a checkpoint path outside "
         "/opt/ml is at its path, a folder under container-paths/ (unless it would be a new folder in this "
         "machine's /: then values naming it are rewritten to that folder); without mount namespaces they and "
         "SAGEMAKER_BASE_DIR name those folders themselves, and hyperparameter and environment values naming /opt/ml "
         "or the checkpoint path are rewritten to them, hyperparameters.json included; SM_MODULE_DIR is the file:// "
         "URI of the run's copy of the source tarball, not an s3:// URI"),
        ("Open MPI 5 runs in place of the DLC's Open MPI 4 (same options, newer spellings), over TCP on loopback only; "
         "smtrain's hooks stand in for ssh and start each rank on its own host"),
        ("SM_NUM_GPUS, SM_NUM_NEURONS and the processes per host are the instance's; SM_NUM_CPUS is this machine's "
         f"({words.option(Options, 'processes_per_host')} overrides the process count); a GPU instance's training "
         "processes get smtrain's CPU stand-in for CUDA where this machine has fewer GPUs per host, and a stand-in "
         f"over gloo for SageMaker's SMDDP library (only in its GPU images); {words.option(Options, 'gpu_standin')} "
         "leaves both out"),
        ("requirements.txt and setup.py are installed once per run into a cached overlay that the training processes "
         "see as site-packages (after the standard library), not per host into the interpreter"),
        ("every training process of a run of several gets OMP_NUM_THREADS = this machine's cores divided among them "
         "(at least 1), as the emulated hosts share one machine where SageMaker gives each its own cores; torch's "
         "default of a thread per core in every process would oversubscribe it, doubling a 2-host CPU run's time "
         f"here. {words.option(Options, 'cpus')} names how many cores to share instead; the job's environment, this "
         "shell or torchrun (1 for several workers per host) setting it wins"),
        ("the processes inherit this shell's environment (PATH, credentials) beneath the container's variables, less "
         "its TMPDIR, TEMP, TMP, XDG_CACHE_HOME, XDG_CONFIG_HOME and XDG_DATA_HOME where each host has its own /tmp "
         "and home, and less its AWS_DEFAULT_REGION, which the container lacks (it has the job's region as "
         "AWS_REGION)"),
        ("torch's JIT extensions (torch.utils.cpp_extension, DeepSpeed's ops) and torch.compile's output build into "
         "smtrain's cache, shared by the runs of one torch and Python version, not into a fresh ~/.cache or /tmp per "
         "job: a second run reuses the build. Each host's namespace shows the extensions' folder at torch's default, "
         "~/.cache/torch_extensions, and torch.compile's at its default, /tmp/torchinductor_<user>, with "
         "TORCH_EXTENSIONS_DIR and TORCHINDUCTOR_CACHE_DIR unset as in the container (without mount namespaces the "
         "two variables name them); the job's environment setting either wins"),
        ("command lines go through /bin/sh with plain spaces, so hyperparameter values are word-split as by the "
         "toolkits in the DLCs (up to 5.1.1); sagemaker-training 5.1.4 passes them unsplit"),
    )


DEVIATIONS = deviations(SPEC_WORDS)
"""As `smtrain local` says them, and `smtrain local --explain` prints them."""
NO_HOSTNAME_SHIM = "gethostname() returns this machine's name, not algo-N: {why}"


def notices(hostname_unavailable_because: str | None, accelerators: str | None, namespaced: bool,
            words: FieldWords) -> list[str]:
    """The deviations of this run, as printed once at its start, in its user's words; `accelerators`: what the
    training processes see of the instance's GPUs (standin.py: the CPU stand-in's notice, or this machine's GPUs);
    without `namespaced` hosts the fallback says itself (opt_ml.fallback_notice), so the /opt/ml line is left out."""
    found = [item for item in deviations(words) if namespaced or not item.startswith("/opt/ml ")]
    if hostname_unavailable_because:
        found.append(NO_HOSTNAME_SHIM.format(why=hostname_unavailable_because))
    if accelerators:
        found.append(accelerators)
    return found


# Job settings that mean something else, or nothing, on this machine: said once per run that uses them.
NOT_EMULATED = {
    "TrainingPlanArn": "a training plan's reserved capacity",
    "InstancePlacementConfig": "UltraServer placement",
    "RetryStrategy": "retries of internal failures (nothing fails internally here)",
    "InfraCheckConfig": "infrastructure health checks",
    "RemoteDebugConfig": "remote debugging through SSM (the processes run on this machine: attach to them)",
    "SessionChainingConfig": "session tag chaining",
    "ExperimentConfig": "SageMaker Experiments",
    "VolumeKmsKeyId": "volume encryption",
    "KmsKeyId": "output encryption",
    "MaxPendingTimeInSeconds": "the wait for capacity",
}


def setting_notices(request: dict[str, Any]) -> list[str]:
    """The deviations of the job settings this request uses (channels, groups, preferences, tracking)."""
    found = []
    resources = request.get("ResourceConfig", {})
    for channel in request.get("InputDataConfig", []):
        name, source = channel["ChannelName"], channel["DataSource"]["S3DataSource"]
        mode = channel.get("InputMode", request["AlgorithmSpecification"]["TrainingInputMode"])
        if source.get("S3DataDistributionType") == "ShardedByS3Key":
            found.append(f"channel {name} is ShardedByS3Key: each host that gets it has a disjoint share of its files, "
                         "dealt round-robin in key order; SageMaker's own assignment of objects to hosts is not "
                         "documented")
        if mode == "FastFile":
            found.append(f"channel {name} is FastFile: its files are copied before the script starts (SageMaker "
                         "streams them from S3 on first read)")
        if mode == "Pipe":
            found.append(f"channel {name} is Pipe mode: FIFOs {name}_0, {name}_1, ... carry its files concatenated "
                         "in key order, one epoch each")
    if resources.get("InstanceGroups"):
        found.append("instance groups: every group's hosts run on this machine, each with its group's instance type "
                     "in its config files and SM_* variables (SM_NUM_GPUS its type's)")
    if resources.get("InstancePreferences"):
        first = resources["InstancePreferences"][0]
        found.append(f"instance preferences: the run uses the first, {first['InstanceType']}; SageMaker takes the "
                     "first that has capacity")
    if request.get("TensorBoardOutputConfig"):
        found.append("TensorBoard: what the script writes to "
                     f"{request['TensorBoardOutputConfig'].get('LocalPath', '/opt/ml/output/tensorboard')} is kept "
                     "in the run directory's tensorboard/<host>/ instead of being uploaded to S3")
    if request.get("MlflowConfig"):
        found.append("MLflow: MLFLOW_TRACKING_URI names a local store in the run directory (mlruns/, for the mlflow "
                     "package if the script has it) instead of the tracking server's ARN")
    present = {**request, **resources, **request.get("OutputDataConfig", {}), **request.get("StoppingCondition", {})}
    skipped = [what for key, what in NOT_EMULATED.items() if key in present]
    if skipped:
        found.append(f"not emulated here: {'; '.join(skipped)}")
    return found
