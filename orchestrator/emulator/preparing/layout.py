"""The run directory: one /opt/ml tree per emulated host, plus what SageMaker keeps outside the instances.

    runs/<job>/
      .smtrain-run                  marks a run directory: packaging never ships it, a reuse may clear it
      .smtrain-lock                 held by the `smtrain local` using it (its process id): a second one is refused
      algo-1/ ... algo-N/           each host's /opt/ml: input/{config,data}, code, model, output, checkpoints
      container-paths/algo-N/...    a checkpoint path outside /opt/ml, per host; root/ is the host's HOME
      host-tmp/algo-N/              each host's /tmp while the run lasts
      logs/algo-N.log               each host's log (what CloudWatch would hold)
      rank-ends/<rank>.json         how each rank of an MPI job ended, as the MPI hooks recorded it (this attempt's)
      source/<sha256>/sourcedir.tar.gz   the code tarball submit would upload (SM_MODULE_DIR names it)
      checkpoints-s3/               the checkpoint S3 prefix, when the spec has `checkpoint:`
      .smtrain-checkpoints-received.json   what the hosts received from it, whose copy is whole (checkpoint_sync)
      tensorboard/algo-N/           what each host wrote to the TensorBoard local path (`tensorboard:`; kept on reuse)
      mlruns/                       the local MLflow store MLFLOW_TRACKING_URI names (`mlflow:`; kept on reuse)
      request.json                  the CreateTrainingJob request the run emulates (secrets masked)
      model.tar.gz, output.tar.gz   merged across hosts at the end, as SageMaker uploads them
      result.json                   status, failure reason, final metrics
      status.json                   the run's DescribeTrainingJob, written as it goes (status.py)

Every path the emulator writes lies inside the run directory. A directory is reused only when it carries the
marker: the hosts start afresh (new instances), the checkpoint prefix stays (first given the checkpoints of a run
that ended without result.json: smtrain killed before its upload), and so do the earlier runs' TensorBoard events,
as their S3 prefix keeps them.
"""

from __future__ import annotations

import errno
import json
import os
import posixpath
import shutil
import tarfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.contract import FAILURE_FILE, OPT_ML, RUN_MARKER_FILE, SUCCESS_FILE
from orchestrator.emulator.instances.container import (
    CONTAINER_PATHS,
    HOST_TMP,
    Channel,
    ContainerJob,
    Host,
    InstanceGroup,
    resource_config,
)
from orchestrator.emulator.instances import run_files
from orchestrator.emulator.launching.launch import RANK_ENDS_DIR
from orchestrator.emulator.preparing import channels, checkpoint_sync
from orchestrator.emulator.supervising.interruption import interrupted_by
from orchestrator.emulator.supervising.stall import STACKS_FILE
from orchestrator.emulator.run_options import Options
from orchestrator.emulator.supervising.status import STATUS_FILE, STOP_FILE, StatusReport, terminal_status
from orchestrator.errors import RunFailed, SmtrainError, SpecError
from orchestrator.observing.metric_series import METRICS_FILE
from orchestrator.planning.kernel_file_systems import KernelFileSystems
from orchestrator.planning.packaging import SourcePackage
from orchestrator.specs.words import SPEC_WORDS, FieldWords
from orchestrator.wording import counted

SOURCE_DIR = "source"
LOCK_FILE = ".smtrain-lock"
"""Held (flock) by the `smtrain local` using the run directory; holds its process id."""
_HELD_LOCKS: dict[Path, int] = {}
RESERVE_FILE = ".smtrain-reserve"
RESERVED_BYTES = 64 * 1024
"""Room kept on the disk for result.json, status.json and each host's status file when the job fills it."""
TENSORBOARD_DIR = "tensorboard"
# What a new run replaces in a reused run directory; the checkpoint prefix and the TensorBoard prefix (S3: a new job
# clears neither) are kept.
_PER_RUN = ("logs", RANK_ENDS_DIR, SOURCE_DIR, CONTAINER_PATHS, HOST_TMP, "request.json", "spec.json", "result.json",
            "model.tar.gz", "output.tar.gz", METRICS_FILE, STACKS_FILE, STATUS_FILE, STOP_FILE)


@dataclass(frozen=True)
class RunLayout:
    root: Path
    hosts: tuple[Host, ...]
    checkpoint_path: str | None
    """The container path SageMaker syncs with the checkpoint S3 prefix, when the job has one."""

    @property
    def logs_dir(self) -> Path:
        return self.root / "logs"

    @property
    def s3_checkpoints(self) -> Path:
        return self.root / "checkpoints-s3"

    def host_path(self, host: Host, container_path: str) -> Path:
        """Where a container path lives on this machine: /opt/ml is the host's folder, any other path (only a
        checkpoint path can be one) a folder under container-paths/<host>/."""
        if container_path == OPT_ML or container_path.startswith(OPT_ML + "/"):
            return host.root / container_path[len(OPT_ML):].lstrip("/")
        return host.container_path_dir(container_path)

    def emulated_prefixes(self) -> tuple[str, ...]:
        """The container paths that have a place per host: /opt/ml and the checkpoint path."""
        return (OPT_ML, *([self.checkpoint_path] if self.checkpoint_path else []))

    def rewrite(self, host: Host, value: str, in_place: tuple[str, ...] = ()) -> str:
        """`value` with a leading container path replaced by where it lives for `host` (hyperparameters and
        environment values that name /opt/ml/... or the checkpoint path), normalised first: a `..` that climbs
        out of the container path would climb out of the run directory here. `in_place`: the container paths the
        job sees at their place (a mount namespace shows the host's folders there: opt_ml.HostFileSystem.in_place),
        so a value under one stays as the request has it.

        Raises:
            SpecError: a value that names a container path but leaves it (`/opt/ml/model/../../../etc`), which here
                would name this machine's files.
        """
        prefixes = sorted(self.emulated_prefixes(), key=len, reverse=True)
        named = next((prefix for prefix in prefixes if _under(value, prefix)), None)
        if named is None:
            return value
        normal = posixpath.normpath(value)
        for prefix in prefixes:
            if _under(normal, prefix) and any(_under(prefix, placed) for placed in in_place):
                return value
            if _under(normal, prefix):
                return str(self.host_path(host, prefix)) + normal[len(prefix.rstrip("/")):]
        raise SpecError(f"a hyperparameter or environment value starts with {named} but its `..` leads out of it "
                        f"(to {normal}), outside the host's tree that `smtrain local` can place",
                        fix=f"write the path without `..`, inside {named}")


def _under(value: str, prefix: str) -> bool:
    return value == prefix or value.startswith(prefix.rstrip("/") + "/")


def checkpoint_container_path(local_path: str | None) -> str | None:
    """The checkpoint LocalPath, normalised (`..` cannot climb above the container's /); a path the emulator
    cannot place inside the run is refused.

    Raises:
        SpecError: a relative path, or / itself.
    """
    if local_path is None:
        return None
    if not local_path.startswith("/"):
        raise SpecError(f"checkpoint.local_path {local_path!r} is not an absolute path inside the container",
                        fix="use an absolute container path such as /opt/ml/checkpoints")
    normal = posixpath.normpath(local_path)
    if normal == "/":
        raise SpecError(f"checkpoint.local_path {local_path!r} is not a directory the emulator can place",
                        fix="use a directory such as /opt/ml/checkpoints")
    return normal


def open_run_directory(root: Path, layout: RunLayout | None = None, words: FieldWords = SPEC_WORDS) -> None:
    """Creates the run directory, or clears a reused one for a new run, and holds it for the run (the caller lets
    go with `release_directory`); refuses anything else (`refuse_unusable_directory`). With the new run's `layout`,
    the checkpoints of a run that ended without a result (smtrain killed: its upload at the end never came) are
    uploaded before its hosts are cleared, as SageMaker would have uploaded them while it ran.

    Raises:
        SpecError: the path is a file, a non-empty directory smtrain did not make, or not writable.
    """
    refuse_unusable_directory(root, words)
    option = words.option(Options, "run_dir")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise _unwritable(root, error, option) from None
    _lock_run_directory(root, option)
    try:
        run_files.write_text(root / RUN_MARKER_FILE, "smtrain local run directory: never packaged, cleared on reuse\n")
        if layout is not None and not (root / "result.json").is_file():
            upload_checkpoints(layout)
        checkpoint_sync.forget(root / checkpoint_sync.RECORD_FILE)  # before the folders it speaks of are cleared
        for entry in root.iterdir():
            if entry.name in _PER_RUN or (entry.is_dir() and entry.name.startswith("algo-")):
                shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
        (root / "logs").mkdir()
        _reserve_room(root)
    except OSError as error:
        release_directory(root)
        raise _unwritable(root, error, option) from None


def refuse_unusable_directory(root: Path, words: FieldWords) -> None:
    """Refuses, without writing anything, a path that can be no run directory, naming the option as the user gave
    it (`words`: `--run-dir` on the command line, `run_dir=` from Python).

    Raises:
        SpecError: the path is a file, a non-empty directory smtrain did not make, one holding links smtrain did
            not make, or one that cannot be read.
    """
    given, option = words.option(Options, "run_dir", root), words.option(Options, "run_dir")
    try:
        if root.exists() and not root.is_dir():
            raise SpecError(f"{given} is a file", fix=f"give a directory's path as {option}")
        if root.is_dir() and any(root.iterdir()) and not (root / RUN_MARKER_FILE).is_file():
            raise SpecError(f"{given} is not empty and is not a run directory smtrain made",
                            fix=f"give a new or empty directory as {option}, or one an earlier local run wrote")
        if root.is_dir() and (links := run_files.planted_links(root)):
            raise SpecError(f"{given} holds {counted(len(links), 'link')} smtrain did not make "
                            f"({', '.join(str(link.relative_to(root)) for link in links[:5])}): a rerun would write "
                            "or read through them, outside the run", fix=f"remove the links, or give a new {option}")
    except OSError as error:
        raise _unwritable(root, error, option) from None


def _unwritable(root: Path, error: OSError, option: str) -> SpecError:
    return SpecError(f"cannot use {root} as the run directory: {error.strerror or error}",
                     fix=f"pass a writable {option}")


def hold_directory(root: Path, option: str) -> None:
    """Holds `root` (a tuning search's folder) as a run directory is held, for as long as this process runs (or
    until it holds the folder again: a search of this process into it has ended, `tune_local` returned).
    `option` is how its user gives another folder (`--run-dir`, `run_dir=`).

    Raises:
        SpecError: another process holds it.
    """
    release_directory(root)
    _lock_run_directory(root, option)


def release_directory(root: Path) -> None:
    """Lets go of `root`, held by this process: its run has ended, and another may use the directory."""
    descriptor = _HELD_LOCKS.pop(root, None)
    if descriptor is not None:
        os.close(descriptor)


def is_held(root: Path) -> bool:
    """Whether a process (this one too) holds `root` now, as `hold_directory` holds it: its search still runs."""
    import fcntl

    try:
        descriptor = os.open(root / LOCK_FILE, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return False
    try:
        fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(descriptor)
    return False


def _reserve_room(root: Path) -> None:
    """Keeps RESERVED_BYTES of the disk for the run's last words: a job that fills the disk with its output still
    ends with a result.json and a final status.json, written once this file is gone (`write_result`)."""
    try:
        with os.fdopen(run_files.open_for_writing(root / RESERVE_FILE), "wb") as handle:
            handle.write(bytes(RESERVED_BYTES))
    except OSError:  # no room to keep (a file-size limit, a disk already full): the run still starts
        (root / RESERVE_FILE).unlink(missing_ok=True)


def _lock_run_directory(root: Path, option: str) -> None:
    """Holds the run directory for this process until its run ends (`release_directory`), so a second
    `smtrain local --run-dir` on it, or a second run of a notebook's, cannot clear the tree of a run still going.
    `option` is how the user gives another directory (`--run-dir`, `run_dir=`).

    Raises:
        SpecError: another process holds it (the message names that process), or this one does.
    """
    import fcntl

    refuse_if_running_here(root, option)
    descriptor = os.open(root / LOCK_FILE, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(descriptor, 64).decode("ascii", errors="replace").strip()
        os.close(descriptor)
        raise SpecError(f"the run directory {root} is in use by a run still going: {_describe_process(holder)}",
                        fix=f"wait for that run to end (or stop it), or give another {option}") from None
    os.ftruncate(descriptor, 0)
    os.write(descriptor, f"{os.getpid()}\n".encode())
    _HELD_LOCKS[root] = descriptor


def refuse_if_running_here(root: Path, option: str) -> None:
    """Refuses `root` while a run of this process (a notebook's earlier one) still uses it; `option` is how the
    user gives another directory (`run_dir=`).

    Raises:
        SpecError: this process holds `root` (`flock` would refuse it too, naming no run).
    """
    if root in _HELD_LOCKS:  # only a run started from Python gets here: its handle is how to wait or stop
        raise SpecError(f"the run directory {root} is in use by a run still going in this process",
                        fix=f"wait for that run to end (job.wait()) or stop it (job.stop()), or pass another {option}")


def _describe_process(pid_text: str) -> str:
    import psutil

    try:
        process = psutil.Process(int(pid_text))
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(process.create_time()))
        return f"process {process.pid} ({process.name()}, started {started})"
    except (ValueError, psutil.Error):
        return f"process {pid_text or '(unknown)'}"


def new_layout(root: Path, job: ContainerJob) -> RunLayout:
    """Where the job's hosts live under `root` (nothing is written yet)."""
    hosts = tuple(Host(name=f"algo-{index + 1}", root=root / f"algo-{index + 1}")
                  for index in range(job.instance_count))
    return RunLayout(root=root, hosts=hosts, checkpoint_path=checkpoint_container_path(job.checkpoint_local_path))


@dataclass(frozen=True)
class HostInputs:
    """What SageMaker places on the instances before the container starts, as found on this machine."""

    source: SourcePackage
    source_path: Path
    """Where the tarball goes (the file SM_MODULE_DIR names)."""
    channel_paths: dict[str, Path]
    """Each channel's data here."""
    host_groups: list[tuple[InstanceGroup, list[str]]]
    host_hyperparameters: dict[str, dict[str, str]]
    """Each host's hyperparameters.json (the request's, with container paths placed)."""
    link_inputs: bool = False
    """Link the local channels' files instead of copying them (`--link-inputs`)."""


def prepare(layout: RunLayout, job: ContainerJob, inputs: HostInputs) -> dict[str, list[Path]]:
    """Creates every host's tree from the job's request, as SageMaker prepares instances before the container
    starts: config files, channels, code (extracted only into an empty code directory, as the toolkit does),
    and the checkpoint prefix restored into the checkpoint path. Returns, per channel, the files `--link-inputs`
    had to copy (they could not be hard-linked), for the notice that says so."""
    source, source_path = inputs.source, inputs.source_path
    unlinked: dict[str, list[Path]] = {}
    try:
        source_path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source.tarball, source_path)
        for host in layout.hosts:
            for directory in (host.config_dir, host.data_dir, host.code_dir, host.model_dir,
                              host.output_dir / "data", host.checkpoint_dir, host.home_dir, host.tmp_dir):
                directory.mkdir(parents=True, exist_ok=True)
            if not any(host.code_dir.iterdir()):
                _extract(source_path, host.code_dir)
            _write_json(host.config_dir / "hyperparameters.json", inputs.host_hyperparameters[host.name],
                        private=True)
            resource = resource_config(host.name, inputs.host_groups)
            _write_json(host.config_dir / "resourceconfig.json", resource)
            _write_json(host.config_dir / "inputdataconfig.json",
                        job.input_data_config(resource["current_group_name"]))
            for name, files in _place_channels(job, host, resource["current_group_name"], inputs.channel_paths,
                                               inputs.link_inputs).items():
                known = unlinked.setdefault(name, [])
                known += [file for file in files if file not in known]
        restore_checkpoints(layout)
        return {name: files for name, files in unlinked.items() if files}
    except (OSError, shutil.Error) as error:
        raise RunFailed(f"PreparationError: writing the hosts' /opt/ml trees in {layout.root} failed: "
                        f"{_copy_error(error)}", fix="free disk space, then run again") from None


def _place_channels(job: ContainerJob, host: Host, group: str, channel_paths: dict[str, Path],
                    link_inputs: bool) -> dict[str, list[Path]]:
    """The channels of the host's group, except Pipe mode's (their FIFOs are made while the job runs); returns
    each channel's files that `link_inputs` copied."""
    unlinked = {}
    for channel in job.channels:
        if not channel.reaches(group) or channel.pipe:
            continue
        source_dir = channel_paths[channel.name]
        try:
            unlinked[channel.name] = _place_channel(job, channel, source_dir, host, link_inputs)
        except channels.NotChannelData as refused:
            raise RunFailed(f"ChannelError: copying channel {channel.name} from {source_dir} into {host.name}'s "
                            f"{host.data_dir / channel.name} was refused: {refused}",
                            fix=f"remove {refused.entry} from the channel's folder, then run again") from None
        except (OSError, shutil.Error) as error:
            raise RunFailed(f"ChannelError: copying channel {channel.name} from {source_dir} into {host.name}'s "
                            f"{host.data_dir / channel.name} failed: {_copy_error(error)}",
                            fix="free disk space (or pass --link-inputs for large local data), then run again"
                            ) from None
    return unlinked


def channel_hosts(job: ContainerJob, channel: Channel) -> list[str]:
    """The hosts that get `channel`, in host order (algo-1, algo-2, ...)."""
    groups = job.group_hosts()
    return [host for group in job.groups if channel.reaches(group.name) for host in groups[group.name]]


def host_items(job: ContainerJob, channel: Channel, source: Path, host: str) -> list[channels.ChannelObject]:
    """The channel's objects `host` gets: all of them, or with ShardedByS3Key its share."""
    items = channels.objects(source)
    return channels.share(items, channel_hosts(job, channel), host) if channel.sharded else items


def empty_shares(job: ContainerJob, channel_paths: dict[str, Path]) -> list[str]:
    """What each ShardedByS3Key channel with fewer files than hosts leaves some hosts (nothing), said at the start:
    SageMaker does the same, and the script's own error on an empty channel would not say why."""
    found = []
    for channel in job.channels:
        if channel.sharded:
            count = len(channels.objects(channel_paths[channel.name]))
            notice = channels.empty_share_notice(channel.name, count, channel_hosts(job, channel), channel.pipe)
            found += [notice] if notice else []
    return found


def pipe_channels(layout: RunLayout, job: ContainerJob, channel_paths: dict[str, Path]) -> list[channels.PipeChannel]:
    """Every host's Pipe-mode channels, for the feeders."""
    return [channels.PipeChannel(host.data_dir, channel.name,
                                 tuple(item.file for item in host_items(job, channel, channel_paths[channel.name],
                                                                        host.name)),
                                 gzip=channel.compression == "Gzip")
            for host in layout.hosts for channel in job.channels
            if channel.pipe and channel.reaches(job.group_of(host.name).name)]


def write_request(root: Path, masked_request: dict[str, Any]) -> None:
    _write_json(root / "request.json", masked_request)


def _extract(tarball: Path, target: Path) -> None:
    with tarfile.open(tarball, mode="r:gz") as tar:
        if hasattr(tarfile, "data_filter"):  # Python >= 3.10.12 / 3.11.4: refuse links and paths leaving target
            tar.extractall(target, filter="data")
        else:
            tar.extractall(target)


def _run_directories(directory: str, names: list[str]) -> set[str]:
    return {name for name in names if (Path(directory) / name / RUN_MARKER_FILE).is_file()}


def _copy_error(error: OSError | shutil.Error) -> str:
    """What went wrong, said once: copytree collects one error per file, a full disk fails them all alike."""
    if isinstance(error, shutil.Error):
        reasons = [str(item[2]) for item in error.args[0]] if error.args and isinstance(error.args[0], list) else []
        if any("No space left" in reason for reason in reasons):
            return f"the disk is full (ENOSPC), {counted(len(reasons), 'file')} not copied"
        return reasons[0] if reasons else str(error)
    if error.errno == errno.ENOSPC:
        return "the disk is full (ENOSPC)"
    return error.strerror or str(error)


def _write_json(path: Path, document: object, private: bool = False) -> None:
    """`private`: readable by this user only (0600), for a file that may hold the spec's secret values."""
    if not private:
        path.write_text(json.dumps(document, indent=4) + "\n")
        return
    path.unlink(missing_ok=True)
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as handle:
        handle.write(json.dumps(document, indent=4) + "\n")


def _place_channel(job: ContainerJob, channel: Channel, source: Path, host: Host, link: bool) -> list[Path]:
    """File and FastFile mode give every instance its own copy (FastFile streams on SageMaker; here the files are
    there before the script starts); `link` trades that for speed with large local data, hard-linking the
    channel's objects at their keys (a job that deletes or renames one does so in the run). Returns the files
    `link` could not link (copied)."""
    target = host.data_dir / channel.name
    if channel.sharded or link:
        return channels.place_share(host_items(job, channel, source, host.name), target, link)
    if source.is_dir():  # never a run directory (a channel `.` holds the run itself: it would copy forever)
        channels.copy_tree(source, target, _run_directories)
    else:
        target.mkdir()
        channels.copy_file(source, target / source.name, KernelFileSystems.mounted())
    return []


def checkpoint_dirs(layout: RunLayout) -> list[Path]:
    if layout.checkpoint_path is None:
        return []
    return [layout.host_path(host, layout.checkpoint_path) for host in layout.hosts]


def upload_checkpoints(layout: RunLayout) -> None:
    """SageMaker uploads new and changed checkpoint files of every instance to one shared prefix, and deletes there
    what an instance deleted (`checkpoint_sync`)."""
    if (sync := _prefix_sync(layout)) is not None:
        checkpoint_sync.upload(sync)


def _prefix_sync(layout: RunLayout) -> checkpoint_sync.PrefixSync | None:
    """The checkpoint prefix and each host's checkpoint folder (a link the job made, such as
    `latest -> /opt/ml/checkpoints/step-10`, names its host's folder, which is not at /opt/ml here)."""
    local_path = layout.checkpoint_path
    if local_path is None:
        return None

    def host(name: str) -> Host:
        return Host(name=name, root=layout.root / name)

    return checkpoint_sync.PrefixSync(
        prefix=layout.s3_checkpoints, record=layout.root / checkpoint_sync.RECORD_FILE, local_path=local_path,
        hosts=tuple(item.name for item in layout.hosts),
        directory=lambda name: layout.host_path(host(name), local_path),
        follow=lambda name, named: layout.rewrite(host(name), posixpath.normpath(named)))


def keep_tensorboard(layout: RunLayout, local_path: str | None) -> Path | None:
    """What SageMaker uploads from TensorBoardOutputConfig.LocalPath while the job runs, kept in the run:
    tensorboard/<host>/ for each host that wrote there (one folder a host, so no host's event file replaces
    another's), beside what earlier attempts and runs wrote (a file of the same name replaced, as S3 replaces a key)."""
    if local_path is None:
        return None
    target = layout.root / TENSORBOARD_DIR
    for host in layout.hosts:
        written = layout.host_path(host, local_path)
        if written.is_dir() and any(written.iterdir()):
            shutil.copytree(written, target / host.name, dirs_exist_ok=True)
    return target if target.is_dir() else None


def restore_checkpoints(layout: RunLayout) -> None:
    """At (re)start every instance receives the whole checkpoint prefix in its local path."""
    if (sync := _prefix_sync(layout)) is not None:
        checkpoint_sync.restore(sync)


def replace_instances(layout: RunLayout) -> None:
    """After a spot interruption the job restarts on fresh instances: model, output and checkpoint directories
    start empty, then the checkpoint prefix is restored. Only folders inside the run directory are touched."""
    upload_checkpoints(layout)
    shutil.rmtree(layout.root / RANK_ENDS_DIR, ignore_errors=True)  # the ranks of the attempt before
    checkpoint_sync.forget(layout.root / checkpoint_sync.RECORD_FILE)  # before the folders it speaks of are cleared
    for host in layout.hosts:
        for directory in (host.model_dir, host.output_dir, *checkpoint_dirs(layout)):
            if directory.is_relative_to(layout.root):
                shutil.rmtree(directory, ignore_errors=True)
        host.model_dir.mkdir(parents=True)
        (host.output_dir / "data").mkdir(parents=True)
        shutil.rmtree(host.tmp_dir, ignore_errors=True)  # a fresh instance's /tmp is empty
        host.tmp_dir.mkdir(parents=True)
    restore_checkpoints(layout)


def clear_host_tmp(layout: RunLayout) -> None:
    """A container's /tmp ends with it: each host's is emptied when the run ends (its home stays in the run)."""
    shutil.rmtree(layout.root / HOST_TMP, ignore_errors=True)


def write_status_files(layout: RunLayout, failures: dict[str, str | None]) -> None:
    """Each host's toolkit result: `success`, or its failure message unless the script wrote one first."""
    for host in layout.hosts:
        failure = failures.get(host.name)
        if failure is None:
            (host.output_dir / SUCCESS_FILE).touch()
        elif not (host.output_dir / FAILURE_FILE).exists():
            (host.output_dir / FAILURE_FILE).write_text(failure)


def script_failure_reason(layout: RunLayout, host_name: str | None = None) -> str | None:
    """The failure file a script wrote (its first 1024 characters, as FailureReason keeps), on `host_name` or
    on the first host that has one."""
    for host in layout.hosts:
        if host_name is not None and host.name != host_name:
            continue
        path = host.output_dir / FAILURE_FILE
        if path.is_file() and path.stat().st_size:
            return path.read_text(errors="replace")[:1024]
    return None


def merge_artifacts(layout: RunLayout) -> tuple[Path, Path]:
    """model.tar.gz and output.tar.gz: every host's directory merged, a later host overwriting a clash.

    Raises:
        OSError: writing failed (ENOSPC: the disk is full); the previous file, if any, is left whole.
    """
    model = _merged_tar(layout.root / "model.tar.gz", [host.model_dir for host in layout.hosts])
    output = _merged_tar(layout.root / "output.tar.gz", [host.output_dir / "data" for host in layout.hosts])
    return model, output


def _merged_tar(target: Path, directories: list[Path]) -> Path:
    members: dict[str, Path] = {}
    for directory in directories:
        if directory.is_dir():
            for path in sorted(directory.rglob("*")):
                if path.is_file():
                    members[path.relative_to(directory).as_posix()] = path
    partial = target.with_name(f".{target.name}.partial")
    try:
        with os.fdopen(run_files.open_for_writing(partial), "wb") as handle:
            with tarfile.open(fileobj=handle, mode="w:gz") as tar:
                for name in sorted(members):
                    tar.add(members[name], arcname=name)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(partial, target)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return target


def read_result(root: Path) -> dict[str, Any] | None:
    """result.json of a finished run; None while it runs (or when it never started)."""
    try:
        return json.loads((root / "result.json").read_text())
    except FileNotFoundError:
        return None


def ended_before_start(root: Path, job_name: str, report: StatusReport | None, error: BaseException,
                       mask: Callable[[str], str]) -> BaseException:
    """`error`, which ended the run while its hosts were prepared (no process of the job had started: a signal,
    a channel that cannot be copied), with result.json and status.json saying so, as every way a run ends writes
    them: `smtrain status` and `list` then tell how it ended, not a run directory without a status. Returned with
    why they could not be written, where they could not.
    """
    by_signal = interrupted_by(error) if isinstance(error, KeyboardInterrupt) else None
    if by_signal is not None:
        status, exit_code, reason = "Interrupted", 130, (f"interrupted ({by_signal}) while the hosts' /opt/ml trees "
                                                         "were prepared: no process of the job had started")
    elif isinstance(error, SmtrainError):
        status, exit_code, reason = "Failed", error.exit_code, mask(error.message)
    else:
        status, exit_code, reason = "Failed", 1, mask(f"smtrain stopped: {type(error).__name__}: {error}")
    try:
        write_result(root, {"job_name": job_name, "run_dir": str(root), "status": status,
                            "exit_code": exit_code, "failure_reason": reason})
        if report is not None:
            described, secondary, message = terminal_status(status, reason, interrupted_by=by_signal)
            report.finish(described, secondary, reason, None, message=message)
    except OSError as unwritten:
        if not isinstance(error, RunFailed):
            return error
        return RunFailed(f"{error.message}; result.json could not be written either: "
                         f"{unwritten.strerror or unwritten}", fix=error.fix)
    return error


def write_result(root: Path, document: dict[str, Any]) -> None:
    """result.json, written whole or not at all (in the room kept for it, when the disk is full)."""
    (root / RESERVE_FILE).unlink(missing_ok=True)
    partial = root / ".result.json.partial"
    run_files.write_text(partial, json.dumps(document, indent=2, default=str) + "\n")
    os.replace(partial, root / "result.json")
