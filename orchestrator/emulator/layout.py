"""The run directory: one /opt/ml tree per emulated host, plus what SageMaker keeps outside the instances.

    runs/<job>/
      algo-1/ ... algo-N/           each host's /opt/ml: input/{config,data}, code, model, output, checkpoints
      logs/algo-N.log               each host's log (what CloudWatch would hold)
      checkpoints-s3/               the checkpoint S3 prefix, when the spec has `checkpoint:`
      sourcedir.tar.gz              the code tarball submit would upload (extracted into every code/)
      model.tar.gz, output.tar.gz   merged across hosts at the end, as SageMaker uploads them
      result.json                   status, failure reason, final metrics
"""

from __future__ import annotations

import io
import json
import shutil
import tarfile
from dataclasses import dataclass
from pathlib import Path

from orchestrator.contract import FAILURE_FILE, OPT_ML, SUCCESS_FILE
from orchestrator.emulator.container import Host, input_data_config, resource_config
from orchestrator.planning.packaging import SourcePackage
from orchestrator.spec.model import JobSpec


@dataclass(frozen=True)
class RunLayout:
    root: Path
    hosts: tuple[Host, ...]
    checkpoint_path: str | None
    """The container path SageMaker syncs with the checkpoint S3 prefix, when the spec has one."""

    @property
    def logs_dir(self) -> Path:
        return self.root / "logs"

    @property
    def s3_checkpoints(self) -> Path:
        return self.root / "checkpoints-s3"

    def host_path(self, host: Host, container_path: str) -> Path:
        """Where a path inside the container lives on this machine (only /opt/ml is emulated per host)."""
        if container_path == OPT_ML or container_path.startswith(OPT_ML + "/"):
            return host.root / container_path[len(OPT_ML):].lstrip("/")
        return Path(container_path)


def prepare(root: Path, spec: JobSpec, source: SourcePackage, channels: dict[str, Path], hyperparameters: dict[str, str],
            group_hosts: list[str], link_inputs: bool) -> RunLayout:
    """Creates every host's tree, as SageMaker prepares instances before the container starts."""
    hosts = tuple(Host(name=f"algo-{index + 1}", root=root / f"algo-{index + 1}")
                  for index in range(spec.instance.count))
    layout = RunLayout(root=root, hosts=hosts,
                       checkpoint_path=(spec.checkpoint.local_path if spec.checkpoint else None))
    layout.logs_dir.mkdir(parents=True, exist_ok=True)
    (root / "sourcedir.tar.gz").write_bytes(source.data)
    for host in hosts:
        for directory in (host.config_dir, host.data_dir, host.code_dir, host.model_dir, host.output_dir / "data",
                          host.checkpoint_dir):
            directory.mkdir(parents=True, exist_ok=True)
        _extract(source.data, host.code_dir)
        _write_json(host.config_dir / "hyperparameters.json", hyperparameters)
        _write_json(host.config_dir / "resourceconfig.json",
                    resource_config(host.name, [h.name for h in hosts], group_hosts, spec.instance.type))
        _write_json(host.config_dir / "inputdataconfig.json", input_data_config(sorted(channels)))
        for name, source_path in channels.items():
            _place_channel(source_path, host.data_dir / name, link_inputs)
    return layout


def _extract(data: bytes, target: Path) -> None:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        if hasattr(tarfile, "data_filter"):  # Python >= 3.10.12 / 3.11.4: refuse links and paths leaving target
            tar.extractall(target, filter="data")
        else:
            tar.extractall(target)


def _write_json(path: Path, document: object) -> None:
    path.write_text(json.dumps(document, indent=4) + "\n")


def _place_channel(source: Path, target: Path, link: bool) -> None:
    """File mode gives every instance its own copy; `link` trades that for speed with large local data."""
    if link:
        target.symlink_to(source.resolve(), target_is_directory=source.is_dir())
    elif source.is_dir():
        shutil.copytree(source, target, symlinks=True)
    else:
        target.mkdir()
        shutil.copy2(source, target / source.name)


def checkpoint_dirs(layout: RunLayout) -> list[Path]:
    if layout.checkpoint_path is None:
        return []
    return [layout.host_path(host, layout.checkpoint_path) for host in layout.hosts]


def upload_checkpoints(layout: RunLayout) -> None:
    """SageMaker uploads new and changed checkpoint files of every instance to one shared prefix."""
    for directory in checkpoint_dirs(layout):
        if directory.is_dir():
            shutil.copytree(directory, layout.s3_checkpoints, dirs_exist_ok=True)


def restore_checkpoints(layout: RunLayout) -> None:
    """At (re)start every instance receives the whole checkpoint prefix in its local path."""
    for directory in checkpoint_dirs(layout):
        directory.mkdir(parents=True, exist_ok=True)
        if layout.s3_checkpoints.is_dir():
            shutil.copytree(layout.s3_checkpoints, directory, dirs_exist_ok=True)


def replace_instances(layout: RunLayout) -> None:
    """After a spot interruption the job restarts on fresh instances: model, output and checkpoint directories
    start empty, then the checkpoint prefix is restored."""
    upload_checkpoints(layout)
    for host in layout.hosts:
        for directory in (host.model_dir, host.output_dir, *checkpoint_dirs(layout)):
            shutil.rmtree(directory, ignore_errors=True)
        host.model_dir.mkdir(parents=True)
        (host.output_dir / "data").mkdir(parents=True)
    restore_checkpoints(layout)


def write_status_files(layout: RunLayout, failure: str | None) -> None:
    """`success` on every host, or the failure reason where no script wrote one first (first writer wins)."""
    for host in layout.hosts:
        if failure is None:
            (host.output_dir / SUCCESS_FILE).touch()
        elif not (host.output_dir / FAILURE_FILE).exists():
            (host.output_dir / FAILURE_FILE).write_text(failure)


def script_failure_reason(layout: RunLayout) -> str | None:
    """The first failure file a script wrote (its first 1024 characters, as FailureReason keeps)."""
    for host in layout.hosts:
        path = host.output_dir / FAILURE_FILE
        if path.is_file() and path.stat().st_size:
            return path.read_text(errors="replace")[:1024]
    return None


def merge_artifacts(layout: RunLayout) -> tuple[Path, Path]:
    """model.tar.gz and output.tar.gz: every host's directory merged, a later host overwriting a clash."""
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
    with tarfile.open(target, "w:gz") as tar:
        for name in sorted(members):
            tar.add(members[name], arcname=name)
    return target


