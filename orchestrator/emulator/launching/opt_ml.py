"""Which /opt/ml the training processes see (and which home, build cache and checkpoint path beside it), and the
proof that the machine's own /opt/ml was left alone.

With namespaces (hostfs.py) every process of a host sees the host's folder at /opt/ml, and every path the job is
given names it there, as on SageMaker (`seen`). Without them (another OS, a locked-down container) the toolkit's
SAGEMAKER_BASE_DIR is all there is: paths the script reads from SM_* variables are the host's folder itself, a
literal "/opt/ml/..." is the machine's. Then the run names every such literal in the
source dir before it starts (file:line), and fails after it if anything appeared or changed under the machine's
/opt/ml, so a model written there never passes as a completed run.
"""

from __future__ import annotations

import errno
import json
import os
import pwd
import re
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from orchestrator.cache_dir import cache_root
from orchestrator.contract import OPT_ML, RUN_MARKER_FILE
from orchestrator.emulator.instances import run_files
from orchestrator.emulator.instances.container import Host
from orchestrator.emulator.launching.hostfs import (
    CONTAINER_BINDS_VARIABLE,
    CONTAINER_HOME_VARIABLE,
    HOME,
    HOST_TMP_VARIABLE,
    HOSTS_FILE,
    HOSTS_FILE_VARIABLE,
    MACHINE_PATHS_VARIABLE,
    READ_ONLY_DATA_VARIABLE,
    TMP,
    placeable,
)
from orchestrator.emulator.launching.mpi_hooks import HOSTFS_VARIABLE

HOSTFS = Path(__file__).with_name("hostfs.py")
NO_NAMESPACES_VARIABLE = "SMTRAIN_NO_NAMESPACES"
"""Set to 1 to run without mount namespaces (the SAGEMAKER_BASE_DIR fallback), as where the kernel refuses them."""
_LITERAL = re.compile(r"/opt/ml\b")
_SNAPSHOT_LIMIT = 20000
_PROBE_TIMEOUT_SECONDS = 60
_REFUSALS_DOC = "docs/host-file-system.md, 'Where the kernel refuses namespaces'"
CONTAINER_EXTENSIONS_DIR = f"{HOME}/.cache/torch_extensions"
"""Where torch builds JIT extensions in the container (TORCH_EXTENSIONS_DIR unset, HOME /root): each host's namespace
shows the build cache runs share there (build_cache.py)."""
_USER_VARIABLES = ("LOGNAME", "USER", "LNAME", "USERNAME")
"""Where getpass.getuser() looks for the user's name, in this order, before the password database."""
_UNSAFE_IN_A_NAME = re.compile(r'[\\/:*?"<>|]')


def container_inductor_dir(environment: Mapping[str, str]) -> str:
    """torch.compile's cache folder for a process with `environment` where TORCHINDUCTOR_CACHE_DIR is unset, as
    torch computes it (torch/_inductor/runtime/cache_dir_utils.py, default_cache_dir): /tmp/torchinductor_<user>,
    the user as getpass.getuser() names it. In the training images, which run as root: /tmp/torchinductor_root."""
    user = next((environment[name] for name in _USER_VARIABLES if environment.get(name)), None)
    if user is None:
        try:
            user = pwd.getpwuid(os.getuid()).pw_name
        except KeyError:  # as torch names a uid the password database lacks
            user = f"uid_{os.getuid()}"
    return f"{TMP}/torchinductor_{_UNSAFE_IN_A_NAME.sub('_', user)}"


@dataclass(frozen=True)
class HostFileSystem:
    """How the run's hosts get their /opt/ml: `namespaced`, or the fallback with the reason."""

    namespaced: bool
    refused_because: str | None = None
    allowed_by: str | None = None
    """The change to this machine that gives the run namespaces (allowing_change), where the kernel refused them."""
    own_pids: bool = True
    """Whether each host's processes get a PID namespace too, so none outlives smtrain's own kill -9."""
    read_only_data: bool = False
    """The channels are the user's own files, linked (--link-inputs): mounted read-only in each host's namespace."""
    hosts_file: Path | None = None
    """The run's /etc/hosts, naming the emulated hosts (with_hosts_file)."""
    extensions_dir: Path | None = None
    """The build cache runs share (build_cache.py), shown at CONTAINER_EXTENSIONS_DIR in each host's namespace."""
    inductor_dir: Path | None = None
    """torch.compile's cache runs share (build_cache.py), shown at torch's default in each host's namespace."""
    checkpoint_path: str | None = None
    """A checkpoint path outside /opt/ml that each host's namespace shows at its place (placing)."""
    unplaced_checkpoint: str | None = None
    """One it cannot show there without writing to this machine (a new folder in its /): its values are rewritten."""
    machine_paths: tuple[str, ...] = ()
    """What the hosts need of this machine besides what their environment names: the job's interpreter and
    smtrain's cache, kept visible where the container's home covers the machine's /root."""

    def environment(self, host: Host, process_environment: Mapping[str, str]) -> dict[str, str]:
        """What a host's processes carry for hostfs.py: the MPI hooks start each daemon in its host's namespace.
        `process_environment` is theirs otherwise, which names the user torch.compile's folder is named after."""
        if not self.namespaced:
            return {}
        binds = [*([(str(self.extensions_dir), CONTAINER_EXTENSIONS_DIR)] if self.extensions_dir else []),
                 *([(str(self.inductor_dir), container_inductor_dir(process_environment))]
                   if self.inductor_dir else []),
                 *([(str(host.container_path_dir(self.checkpoint_path)), self.checkpoint_path)]
                   if self.checkpoint_path else [])]
        return {HOSTFS_VARIABLE: str(HOSTFS), HOST_TMP_VARIABLE: str(host.tmp_dir),
                CONTAINER_HOME_VARIABLE: str(host.home_dir),
                MACHINE_PATHS_VARIABLE: os.pathsep.join(self.machine_paths),
                **({CONTAINER_BINDS_VARIABLE: json.dumps(binds)} if binds else {}),
                **({READ_ONLY_DATA_VARIABLE: "1"} if self.read_only_data else {}),
                **({HOSTS_FILE_VARIABLE: str(self.hosts_file)} if self.hosts_file else {})}

    def placing(self, checkpoint_path: str | None, extensions_dir: Path, inductor_dir: Path,
                python: str) -> HostFileSystem:
        """With namespaces, the container paths outside /opt/ml shown where the job looks for them: /root its
        home, the build caches at ~/.cache/torch_extensions and /tmp/torchinductor_<user>, a checkpoint path where
        a namespace can show it without writing to this machine (hostfs.placeable); `python`, the job's
        interpreter, stays visible."""
        if not self.namespaced:
            return self
        outside = checkpoint_path if checkpoint_path and not _under(checkpoint_path, OPT_ML) else None
        placed = outside if outside and placeable(outside) else None
        return replace(self, extensions_dir=extensions_dir, inductor_dir=inductor_dir, checkpoint_path=placed,
                       unplaced_checkpoint=outside if outside != placed else None,
                       machine_paths=(*_interpreter_prefixes(python), str(cache_root())))

    def in_place(self) -> tuple[str, ...]:
        """The container paths each host's processes see at their place: their values reach the job unchanged."""
        if not self.namespaced:
            return ()
        return (OPT_ML, *([self.checkpoint_path] if self.checkpoint_path else []))

    def home(self, host: Host) -> str:
        """HOME as `host`'s processes see it: /root in its namespace, else its home folder of the run."""
        return HOME if self.namespaced else str(host.home_dir)

    def with_hosts_file(self, run_dir: Path, host_names: list[str]) -> HostFileSystem:
        """Writes the hosts' /etc/hosts into the run (this machine's entries, then every host at 127.0.0.1)."""
        if not self.namespaced:
            return self
        try:
            machine = Path(HOSTS_FILE).read_text(encoding="utf-8", errors="replace")
        except OSError:
            machine = ""
        path = run_dir / "etc-hosts"
        run_files.write_text(path, f"{machine.rstrip()}\n# smtrain local: the emulated hosts\n"
                                   f"127.0.0.1 {' '.join(host_names)}\n")
        return replace(self, hosts_file=path)

    def seen(self, host: Host) -> Host:
        """`host` as its processes see it: at /opt/ml in its namespace, else at its folder of the run. The paths
        the job is given (SM_* variables, PYTHONPATH) name this one; smtrain's own reading keeps `host`."""
        return Host(host.name, Path(OPT_ML)) if self.namespaced else host

    def enter(self, host_root: Path) -> tuple[str, ...]:
        """The words that start a command in `host_root`'s namespace (none in the fallback)."""
        if not self.namespaced:
            return ()
        return (sys.executable, "-I", "-S", str(HOSTFS), "enter", str(host_root), "--")


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _interpreter_prefixes(python: str) -> tuple[str, ...]:
    """The folders an interpreter runs from: its environment's (a virtualenv's) and the real interpreter's, whose
    standard library a virtualenv uses (~/.pyenv/versions/3.11.7)."""
    return tuple(dict.fromkeys(str(Path(path).parent.parent) for path in (python, os.path.realpath(python))))


def contained(argv: list[str]) -> list[str]:
    """`argv` run in a PID namespace of its own where this machine gives one (hostfs.py `contain`): when it exits,
    whatever it started (a build hook's daemon holding its output) is killed with it."""
    if os.environ.get(NO_NAMESPACES_VARIABLE) == "1" or not sys.platform.startswith("linux"):
        return argv
    return [sys.executable, "-I", "-S", str(HOSTFS), "contain", "--", *argv]


def choose(run_dir: Path) -> HostFileSystem:
    """Namespaces where this machine gives them (tried once, with the run directory at /opt/ml, before the hosts'
    trees are written: their paths depend on it), else the fallback."""
    if os.environ.get(NO_NAMESPACES_VARIABLE) == "1":
        return HostFileSystem(False, f"{NO_NAMESPACES_VARIABLE}=1")
    if not sys.platform.startswith("linux"):
        return HostFileSystem(False, f"mount namespaces are Linux's ({sys.platform} here)")
    probe = subprocess.run([*HostFileSystem(True).enter(run_dir), "/bin/sh", "-c",
                            f"test -f {OPT_ML}/{RUN_MARKER_FILE} && readlink /proc/self/ns/pid"],
                           capture_output=True, text=True, timeout=_PROBE_TIMEOUT_SECONDS, check=False)
    if probe.returncode == 0:
        return HostFileSystem(True, own_pids=probe.stdout.strip() != os.readlink("/proc/self/ns/pid"))
    reason = probe.stderr.strip().removeprefix("smtrain hostfs: ") or f"the probe exited {probe.returncode}"
    return HostFileSystem(False, reason, allowing_change(reason))


def allowing_change(reason: str) -> str | None:
    """What gives an ordinary user namespaces here, told by which step hostfs.py says the kernel refused: unshare
    itself (a limit of 0, or a seccomp profile), or what follows it (AppArmor's restriction refuses the uid map and
    the mounts of a namespace it let unshare make). None where the refusal is no kernel's."""
    if reason.startswith("unshare(") and reason.endswith(os.strerror(errno.ENOSPC)):
        return "this machine allows no user namespaces: `sudo sysctl -w user.max_user_namespaces=15000`"
    if reason.startswith("unshare("):
        return ("a seccomp profile refuses unshare (a container's: `docker run --security-opt seccomp=unconfined`), "
                "or on Debian `sudo sysctl -w kernel.unprivileged_userns_clone=1`")
    if reason.startswith(("mapping uid", "mount ")) and reason.endswith(os.strerror(errno.EPERM)):
        return ("the kernel made the namespace but refused its uid map or mounts, as AppArmor does on Ubuntu 23.10 and "
                "later and GitHub's ubuntu-24.04 runners: `sudo sysctl -w "
                "kernel.apparmor_restrict_unprivileged_userns=0`, or an AppArmor profile that allows `userns` to "
                "this Python")
    return None


def fallback_notice(file_system: HostFileSystem, source_dir: Path, files: tuple[str, ...]) -> list[str]:
    """What the fallback tells before the run: why, and every literal /opt/ml path of the source dir; with mount
    namespaces but none for PIDs, that a job's process may outlive smtrain's kill -9, and a checkpoint path they
    cannot show at its place (placing), that the job is given its folder of the run instead."""
    if file_system.namespaced:
        return [*([] if file_system.own_pids else [
            "no PID namespace here (the kernel gave each host a mount namespace only): what the job starts is "
            "ended by smtrain on every path it controls, but not after its own kill -9 "
            f"({_REFUSALS_DOC})"]),
            *([f"checkpoint.local_path {file_system.unplaced_checkpoint} is a new folder in this machine's /, which "
               "a host's namespace cannot show without writing there: the job is given its host's folder under the "
               "run's container-paths/ instead (values naming the path are rewritten to it)"]
              if file_system.unplaced_checkpoint else [])]
    lines = [f"no mount namespace here ({file_system.refused_because}): each host's /opt/ml is its folder under "
             "the run directory through SAGEMAKER_BASE_DIR and the SM_* variables only; a literal /opt/ml path "
             "in the script names this machine's /opt/ml, not the emulated host's, and the run fails if anything "
             "is written there; /tmp is this machine's too; the host names algo-N do not resolve (no /etc/hosts "
             "naming them: a script that meets at algo-1 fails, while MASTER_ADDR, 127.0.0.1, works); HOME is the "
             "host's folder container-paths/<host>/root of the run, not /root; TORCH_EXTENSIONS_DIR and "
             "TORCHINDUCTOR_CACHE_DIR name smtrain's build caches; a checkpoint path outside /opt/ml is a folder "
             "under container-paths/ (values naming it are rewritten); and what the job starts is ended by smtrain "
             "alone (not after its own kill -9)"]
    if file_system.allowed_by:
        lines[0] += f". For the full emulation: {file_system.allowed_by} ({_REFUSALS_DOC})"
    lines += [f"{where}: literal {OPT_ML} path: on SageMaker the instance's, here not the emulated host's "
              "(read SM_MODEL_DIR, SM_OUTPUT_DATA_DIR, SM_CHANNEL_<NAME> instead)"
              for where in literal_paths(source_dir, files)]
    return lines


def literal_paths(source_dir: Path, files: tuple[str, ...]) -> list[str]:
    """`file:line` of every line naming /opt/ml in the text files of the source package."""
    found = []
    for name in files:
        try:
            text = (source_dir / name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        found += [f"{source_dir / name}:{number}" for number, line in enumerate(text.splitlines(), 1)
                  if _LITERAL.search(line)]
    return found


def snapshot(root: str = OPT_ML) -> dict[str, tuple[int, int]]:
    """Every path under the machine's /opt/ml with its modification time and size (empty when it is absent)."""
    if not os.path.lexists(root):
        return {}
    entries: dict[str, tuple[int, int]] = {}
    for directory, names, files in os.walk(root):
        for name in [*names, *files]:
            path = os.path.join(directory, name)
            try:
                status = os.lstat(path)
            except OSError:
                continue
            entries[path] = (status.st_mtime_ns, status.st_size)
            if len(entries) >= _SNAPSHOT_LIMIT:
                return entries
    status = os.lstat(root)
    entries[root] = (status.st_mtime_ns, -1)
    return entries


def escaped(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]) -> list[str]:
    """The paths that appeared or changed under the machine's /opt/ml during the run."""
    return sorted(path for path, state in after.items() if before.get(path) != state)
